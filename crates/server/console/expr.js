// The expression editor (R-EX-5): expressions are written as text —
// `order_status == "lost" or order_status == "damaged"` — and stored as
// the JSON tree the API takes. `print` and `parse` round-trip: printing a
// tree and parsing the text gives the same tree back. `llm("…", string)`
// leaves are offered only where they are allowed.

import { h, field } from "./ui.js";

// Binary operators by precedence (higher binds tighter).
const BINARY = {
  "==": ["eq", 3], "!=": ["ne", 3], "<": ["lt", 3], "<=": ["le", 3], ">": ["gt", 3], ">=": ["ge", 3],
  "+": ["add", 4], "-": ["sub", 4], "*": ["mul", 5], "/": ["div", 5], "%": ["mod", 5],
};
const SYMBOL = Object.fromEntries(Object.entries(BINARY).map(([s, [t, p]]) => [t, [s, p]]));
const KEYWORDS = new Set(["and", "or", "not", "true", "false", "null", "if", "concat", "llm", "var"]);
const OUTPUT_TYPES = ["string", "number", "boolean"];

/** A parse error at a character offset. */
export class ExprSyntaxError extends Error {
  constructor(message, at) { super(`${message} (at character ${at + 1})`); this.at = at; }
}

function tokenize(src) {
  const out = [];
  let i = 0;
  while (i < src.length) {
    const c = src[i];
    if (/\s/.test(c)) { i++; continue; }
    const at = i;
    if (c === '"') {
      let j = i + 1;
      while (j < src.length && src[j] !== '"') j += src[j] === "\\" ? 2 : 1;
      if (j >= src.length) throw new ExprSyntaxError("unterminated string", at);
      out.push({ kind: "value", value: JSON.parse(src.slice(i, j + 1)), at });
      i = j + 1;
    } else if (c === "[" || c === "{") {
      // A JSON array or object constant: the balanced text, parsed as JSON.
      let depth = 0; let j = i; let inStr = false;
      for (; j < src.length; j++) {
        const d = src[j];
        if (inStr) { if (d === "\\") j++; else if (d === '"') inStr = false; continue; }
        if (d === '"') inStr = true;
        else if (d === "[" || d === "{") depth++;
        else if (d === "]" || d === "}") { depth--; if (!depth) break; }
      }
      try { out.push({ kind: "value", value: JSON.parse(src.slice(i, j + 1)), at }); } catch { throw new ExprSyntaxError("not a valid JSON constant", at); }
      i = j + 1;
    } else if (/[0-9]/.test(c) || (c === "." && /[0-9]/.test(src[i + 1] || ""))) {
      const m = /^[0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?/.exec(src.slice(i));
      out.push({ kind: "value", value: Number(m[0]), at });
      i += m[0].length;
    } else if (/[A-Za-z_]/.test(c)) {
      const m = /^[A-Za-z_][A-Za-z0-9_]*/.exec(src.slice(i));
      out.push({ kind: "word", value: m[0], at });
      i += m[0].length;
    } else {
      const two = src.slice(i, i + 2);
      const op = ["==", "!=", "<=", ">="].includes(two) ? two : c;
      if (!"=!<>+-*/%(),".includes(op[0]) || op === "=" || op === "!") throw new ExprSyntaxError(`unexpected “${op}”`, at);
      out.push({ kind: "op", value: op, at });
      i += op.length;
    }
  }
  out.push({ kind: "end", value: "", at: src.length });
  return out;
}

/** Parse the text into an expression tree; throws ExprSyntaxError. */
export function parse(src) {
  const toks = tokenize(src);
  let pos = 0;
  const peek = () => toks[pos];
  const isOp = (v) => peek().kind === "op" && peek().value === v;
  const isWord = (v) => peek().kind === "word" && peek().value === v;
  const expect = (v) => {
    if (!isOp(v)) throw new ExprSyntaxError(`expected “${v}”`, peek().at);
    pos++;
  };
  const args = () => {
    expect("(");
    const out = [];
    if (!isOp(")")) {
      out.push(orExpr());
      while (isOp(",")) { pos++; out.push(orExpr()); }
    }
    expect(")");
    return out;
  };
  const chain = (word, type, next) => () => {
    const first = next();
    if (!isWord(word)) return first;
    const list = [first];
    while (isWord(word)) { pos++; list.push(next()); }
    return { type, args: list };
  };
  const notExpr = () => {
    if (isWord("not") && toks[pos + 1].value !== "(") { pos++; return { type: "not", arg: notExpr() }; }
    return comparison();
  };
  const andExpr = chain("and", "and", notExpr);
  const orExpr = chain("or", "or", andExpr);
  const binaryLevel = (level, next) => () => {
    let left = next();
    while (peek().kind === "op" && BINARY[peek().value]?.[1] === level) {
      const [type] = BINARY[toks[pos++].value];
      left = { type, left, right: next() };
      if (level === 3) break; // comparisons do not chain
    }
    return left;
  };
  const primary = () => {
    const t = peek();
    if (t.kind === "value") { pos++; return { type: "constant", value: t.value }; }
    if (t.kind === "op" && t.value === "-" && toks[pos + 1].kind === "value" && typeof toks[pos + 1].value === "number") {
      pos += 2;
      return { type: "constant", value: -toks[pos - 1].value };
    }
    if (t.kind === "op" && t.value === "(") { pos++; const e = orExpr(); expect(")"); return e; }
    if (t.kind === "word") {
      pos++;
      switch (t.value) {
        case "true": return { type: "constant", value: true };
        case "false": return { type: "constant", value: false };
        case "null": return { type: "constant", value: null };
        case "and": case "or": case "concat": return { type: t.value, args: args() };
        case "not": { const a = args(); if (a.length !== 1) throw new ExprSyntaxError("not(…) takes one argument", t.at); return { type: "not", arg: a[0] }; }
        case "if": {
          const a = args();
          if (a.length !== 3) throw new ExprSyntaxError("if(condition, then, else) takes three arguments", t.at);
          return { type: "if", cond: a[0], then: a[1], else: a[2] };
        }
        case "var": {
          const a = args();
          if (a.length !== 1 || a[0].type !== "constant" || typeof a[0].value !== "string") throw new ExprSyntaxError('var("name") takes one string', t.at);
          return { type: "variable", name: a[0].value };
        }
        case "llm": {
          expect("(");
          const p = peek();
          if (p.kind !== "value" || typeof p.value !== "string") throw new ExprSyntaxError('llm("prompt", string|number|boolean): the prompt is a string', p.at);
          pos++;
          expect(",");
          const o = peek();
          if (o.kind !== "word" || !OUTPUT_TYPES.includes(o.value)) throw new ExprSyntaxError("the output type is string, number or boolean", o.at);
          pos++;
          expect(")");
          return { type: "llm", prompt: p.value, outputType: o.value };
        }
        default: {
          if (Object.keys(SYMBOL).includes(t.value) && isOp("(")) {
            const a = args();
            if (a.length !== 2) throw new ExprSyntaxError(`${t.value}(…) takes two arguments`, t.at);
            return { type: t.value, left: a[0], right: a[1] };
          }
          return { type: "variable", name: t.value };
        }
      }
    }
    throw new ExprSyntaxError(t.kind === "end" ? "the expression is incomplete" : `unexpected “${t.value}”`, t.at);
  };
  const multiplicative = binaryLevel(5, primary);
  const additive = binaryLevel(4, multiplicative);
  const comparison = binaryLevel(3, additive);
  if (peek().kind === "end") throw new ExprSyntaxError("write an expression", 0);
  const tree = orExpr();
  if (peek().kind !== "end") throw new ExprSyntaxError(`unexpected “${peek().value}”`, peek().at);
  return tree;
}

const PREC = { or: 1, and: 2, not: 2.5, ...Object.fromEntries(Object.entries(SYMBOL).map(([t, [, p]]) => [t, p])) };
const precOf = (e) => PREC[e.type] ?? 9;

/** The text of an expression tree (parse(print(e)) equals e). */
export function print(e) {
  const wrap = (child, min) => (precOf(child) < min ? `(${print(child)})` : print(child));
  switch (e.type) {
    case "constant":
      return typeof e.value === "number" && e.value < 0 ? `(${e.value})` : JSON.stringify(e.value);
    case "variable":
      return /^[A-Za-z_][A-Za-z0-9_]*$/.test(e.name) && !KEYWORDS.has(e.name) && !SYMBOL[e.name] ? e.name : `var(${JSON.stringify(e.name)})`;
    case "llm": return `llm(${JSON.stringify(e.prompt)}, ${e.outputType})`;
    case "if": return `if(${print(e.cond)}, ${print(e.then)}, ${print(e.else)})`;
    case "concat": return `concat(${e.args.map(print).join(", ")})`;
    case "and": case "or":
      if (e.args.length < 2) return `${e.type}(${e.args.map(print).join(", ")})`;
      return e.args.map((a) => wrap(a, PREC[e.type] + 0.5)).join(` ${e.type} `);
    case "not": return `not ${wrap(e.arg, 2.5)}`;
    default: {
      const [sym, p] = SYMBOL[e.type] || [];
      if (!sym) return JSON.stringify(e);
      const leftMin = p === 3 ? 3.5 : p;
      return `${wrap(e.left, leftMin)} ${sym} ${wrap(e.right, p + 0.5)}`;
    }
  }
}

/** Leaves of the tree in order (for hints: unknown variables, llm leaves). */
function leaves(e, out = []) {
  if (!e || typeof e !== "object") return out;
  if (e.type === "variable" || e.type === "llm") out.push(e);
  for (const k of ["cond", "then", "else", "arg", "left", "right"]) if (e[k]) leaves(e[k], out);
  (e.args || []).forEach((a) => leaves(a, out));
  return out;
}

/**
 * A labelled expression field. `path` is the API path of the expression
 * (errors below it are shown here); `variables()` the declared variables
 * ({name, type}); `allowLlm` whether `llm` leaves may appear. Returns the
 * field with `read()` (throws a field error when the text does not parse).
 */
export function exprField(label, path, expression, { variables, allowLlm, hint }) {
  const input = h("input", { type: "text", class: "expr", spellcheck: "false", autocomplete: "off",
    value: typeof expression === "string" ? expression : expression ? print(expression) : "", placeholder: allowLlm ? 'llm("The order number the user gave", string)' : 'order_status == "lost"' });
  const status = h("p", { class: "hint expr-status", "aria-live": "polite" });
  const chips = h("div", { class: "chips small" });
  const check = () => {
    if (!input.value.trim()) { status.textContent = ""; return; }
    try {
      const tree = parse(input.value);
      const known = new Set(variables().map((v) => v.name));
      const notes = [];
      for (const leaf of leaves(tree)) {
        if (leaf.type === "variable" && !known.has(leaf.name) && !leaf.name.startsWith("system__")) notes.push(`unknown variable ${leaf.name}`);
        if (leaf.type === "llm" && !allowLlm) notes.push("llm(…) is not allowed here");
      }
      status.textContent = notes.length ? `⚠ ${notes.join("; ")}` : "✓ valid expression";
      status.classList.toggle("warn", notes.length > 0);
    } catch (e) {
      status.textContent = `✗ ${e.message}`;
      status.classList.add("warn");
    }
  };
  const renderChips = () => chips.replaceChildren(...variables().map((v) => h("button", {
    type: "button", class: "chip", title: `Insert ${v.name} (${v.type})`,
    onclick: () => {
      const at = input.selectionStart ?? input.value.length;
      input.value = `${input.value.slice(0, at)}${v.name}${input.value.slice(input.selectionEnd ?? at)}`;
      input.focus();
      input.dispatchEvent(new Event("input", { bubbles: true }));
    },
  }, v.name)));
  input.addEventListener("input", check);
  input.addEventListener("focus", renderChips);
  check();
  renderChips();
  const el = field(label, path, input, hint || "Operators: and or not == != < <= > >= + - * / %, if(c, a, b), concat(a, b), \"text\", 42, true.");
  el.querySelector(".error").before(status, chips);
  el.read = () => {
    try {
      return parse(input.value);
    } catch (e) {
      const err = new Error(e.message);
      err.code = "invalid_expression";
      err.field = path;
      throw err;
    }
  };
  el.input = input;
  return el;
}

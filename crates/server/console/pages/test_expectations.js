// The form builders of a conversation test (R-BX-10, the shape in
// protocol/src/testing.rs): its initial variables and scripted tool
// results, and its expectations — tool calls (argument checks, how many
// calls), final variable values, the end reason, the success criterion —
// a row per item, each check an operator and a value. Values are typed
// as text: text is text, while 42, true, null, [..] and {..} are JSON
// values ("42" in quotes for the text 42).

import { h, field, text, area, select, rows, literalText, readLiteral } from "../ui.js";

let lists = 0;

/** An error shown at `fieldEl`, whose API path becomes `path`. */
function fail(fieldEl, path, message, code = "invalid") {
  fieldEl.dataset.field = path;
  const e = new Error(message);
  e.code = code;
  e.field = path;
  throw e;
}

/** A text input offering `options()` (re-read on focus) as suggestions. */
function suggest(value, options, attrs = {}) {
  const id = `suggest-${++lists}`;
  const list = h("datalist", { id });
  const input = text(value, { list: id, autocomplete: "off", spellcheck: "false", ...attrs });
  const fill = () => list.replaceChildren(...options().map((o) => h("option", { value: o })));
  input.addEventListener("focus", fill);
  fill();
  return [input, list];
}

const OPS = [["eq", "is"], ["$contains", "contains"], ["$regex", "matches the pattern"], ["$oneOf", "is one of"],
  ["$gt", "is more than"], ["$lt", "is less than"], ["exists", "is set"], ["absent", "is not set"]];

/** A matcher as [operator, value text] for the form. */
function matcherParts(m) {
  const o = m !== null && typeof m === "object" && !Array.isArray(m) ? Object.entries(m) : [];
  if (o.length === 1 && o[0][0].startsWith("$")) {
    const [op, v] = o[0];
    if (op === "$exists" && typeof v === "boolean") return [v ? "exists" : "absent", ""];
    if (op === "$contains") return [op, literalText(v)];
    if (op === "$regex" && typeof v === "string") return [op, v];
    if ((op === "$gt" || op === "$lt") && typeof v === "number") return [op, String(v)];
    if (op === "$oneOf" && Array.isArray(v)) {
      const parts = v.map(literalText);
      return [op, parts.some((p) => p.includes(",")) ? JSON.stringify(v) : parts.join(", ")];
    }
  }
  return ["eq", literalText(m)];
}

/**
 * A check: operator select and value. `read(path)` gives the matcher
 * (`undefined` for "not checked" when `optional`).
 */
function matcherControls(m, { optional } = {}) {
  const [op0, value0] = m === undefined ? [optional ? "" : "eq", ""] : matcherParts(m);
  const op = select([...(optional ? [["", "is not checked"]] : []), ...OPS], op0, { class: "mop" });
  const value = text(value0, { class: "mval", placeholder: "A1, 42, true, or JSON" });
  const opField = field("Check", "", op);
  const valueField = field("Value", "", value);
  const sync = () => { valueField.hidden = ["", "exists", "absent"].includes(op.value); };
  op.addEventListener("change", sync);
  sync();
  /** The matcher; a value error is shown at the value, not at `others`
   * (fields of the row that share its path). */
  const read = (path, others = []) => {
    valueField.dataset.field = path;
    const v = value.value.trim();
    const bad = (message) => {
      for (const f of others) f.dataset.field = "";
      fail(valueField, path, message);
    };
    switch (op.value) {
      case "": return undefined;
      case "exists": return { $exists: true };
      case "absent": return { $exists: false };
      case "$regex":
        if (!v) bad("write the pattern");
        return { $regex: v };
      case "$contains":
        if (!v) bad("write what it contains");
        return { $contains: readLiteral(v) };
      case "$gt": case "$lt":
        if (!v || !Number.isFinite(Number(v))) bad("write a number");
        return { [op.value]: Number(v) };
      case "$oneOf": {
        if (v.startsWith("[")) {
          const list = readLiteral(v);
          if (!Array.isArray(list)) bad("write the values separated by commas, or a JSON list");
          return { $oneOf: list };
        }
        const items = v.split(",").map((s) => s.trim()).filter(Boolean);
        if (!items.length) bad("write the values separated by commas");
        return { $oneOf: items.map(readLiteral) };
      }
      default:
        if (!v) bad('write the value ("" for an empty text)');
        return readLiteral(v);
    }
  };
  return { opField, valueField, read };
}

/** A labelled block of rows whose errors (at `path`) show above them;
 * `read()` is the rows'. */
function section(label, path, box, hint) {
  const el = h("div", { class: "field expect-rows", role: "group", "aria-label": label, dataset: { field: path } },
    h("span", { class: "label" }, label), h("p", { class: "error" }), box, hint ? h("p", { class: "hint" }, hint) : null);
  el.read = box.read;
  return el;
}

/** The user's turns, a text box each (a turn may hold several lines). */
export function turnRows(turns) {
  const box = rows({
    items: turns.length ? turns : [""],
    blank: () => "",
    addLabel: "Add turn",
    render: (turn) => {
      const input = area(turn, { rows: Math.min(6, Math.max(2, turn.split("\n").length)), class: "prose turn", placeholder: "Where is my order A1?" });
      const f = field("User turn", "", input);
      f.turn = input;
      return f;
    },
  });
  const el = section("User turns", "turns", box,
    "Sent one after another, each once the assistant has finished; an open askUser question is answered with the turn.");
  el.read = () => box.rows().map((f, i) => {
    f.dataset.field = `turns[${i}]`;
    return f.turn.value;
  }).filter((turn) => turn.trim());
  return el;
}

const READ_ONLY = ["id", "createdAt", "updatedAt"];
const TEST_KEYS = ["name", "description", "userId", "variables", "turns", "toolResponses", "expect", "timeoutSeconds"];

/** A test as written in the JSON view: read-only keys left out. */
export function editable(t) {
  return Object.fromEntries(Object.entries(t).filter(([k]) => !READ_ONLY.includes(k)));
}

/** Why the form cannot show test `t` (from the JSON view), or null. */
export function notForForm(t) {
  const isMap = (v) => v === undefined || (v !== null && typeof v === "object" && !Array.isArray(v));
  if (!t || typeof t !== "object" || Array.isArray(t)) return "a test is a JSON object";
  const extra = Object.keys(t).find((k) => !TEST_KEYS.includes(k) && !READ_ONLY.includes(k));
  if (extra) return `\`${extra}\` is not a field of a test`;
  if (t.turns !== undefined && !(Array.isArray(t.turns) && t.turns.every((x) => typeof x === "string"))) return "`turns` is a list of texts";
  if (!isMap(t.variables) || !isMap(t.toolResponses) || !isMap(t.expect)) return "`variables`, `toolResponses` and `expect` are objects";
  if (Object.values(t.toolResponses || {}).some((l) => !Array.isArray(l) || l.some((r) => !r || typeof r !== "object"))) {
    return "each tool's scripted results are a list of {\"response\": …} or {\"error\": …}";
  }
  const e = t.expect || {};
  if (e.toolCalls !== undefined && !(Array.isArray(e.toolCalls) && e.toolCalls.every((c) => c && typeof c === "object" && isMap(c.arguments)))) {
    return "`expect.toolCalls` is a list of calls";
  }
  if (!isMap(e.variables)) return "`expect.variables` is an object";
  return null;
}

/** Rows of `name → value` (initial variables, typed by their declaration). */
function initialVariables(values, { variables }) {
  const typeOf = (n) => variables.find((v) => v.name === n)?.type;
  const box = rows({
    items: Object.entries(values || {}),
    blank: () => ["", undefined],
    addLabel: "Add variable",
    render: ([n, v]) => {
      const [input, list] = suggest(n, () => variables.map((x) => x.name), { class: "vname", placeholder: variables[0]?.name || "customer_name" });
      const value = text(typeOf(n) === "string" && typeof v === "string" ? v : literalText(v), { class: "vval" });
      const nameField = field("Variable", "", input);
      const valueField = field("Value", "", value);
      const row = h("div", { class: "listrow kv" }, nameField, valueField, list);
      row.read = (i) => {
        const name = input.value.trim();
        const path = `variables.${name || `[${i}]`}`;
        if (!name) fail(nameField, path, "name the variable");
        nameField.dataset.field = path;
        valueField.dataset.field = path;
        return [name, typeOf(name) === "string" ? value.value : readLiteral(value.value)];
      };
      return row;
    },
  });
  box.read = () => Object.fromEntries(box.rows().map((r, i) => r.read(i)));
  return section("Initial variables", "variables", box, "Values of the declared variables the session starts with.");
}

/** Rows of results a tool's calls answer, in call order. */
function scriptedResults(responses, { tools }) {
  const items = Object.entries(responses || {}).flatMap(([tool, list]) => list.map((r) => [tool, r]));
  const box = rows({
    items,
    blank: () => ["", { response: undefined }],
    addLabel: "Add scripted result",
    render: ([tool, r]) => {
      const [input, list] = suggest(tool, () => [...tools.map((t) => t.name), "webSearch", "webFetch"], { class: "rtool", placeholder: tools[0]?.name || "lookup_order" });
      const kind = select([["response", "a result"], ["error", "an error"]], r.error !== undefined ? "error" : "response", { class: "rkind" });
      const value = area(r.error !== undefined ? r.error : r.response === undefined ? "" : typeof r.response === "object" && r.response !== null ? JSON.stringify(r.response, null, 2) : literalText(r.response), { rows: 2, class: "code rval", placeholder: '{"status": "shipped"}' });
      const toolField = field("Tool", "", input);
      const valueField = field("Result or error message", "", value);
      const row = h("div", { class: "listrow" }, toolField, field("Answers with", "", kind), valueField, list);
      row.read = (i, counts) => {
        const name = input.value.trim();
        if (!name) fail(toolField, `toolResponses[${i}]`, "name the tool");
        const k = counts[name] = (counts[name] ?? -1) + 1;
        const path = `toolResponses.${name}[${k}]`;
        toolField.dataset.field = path;
        valueField.dataset.field = path;
        if (!value.value.trim()) {
          toolField.dataset.field = "";
          fail(valueField, path, kind.value === "error" ? "write the error message" : "write the result");
        }
        return [name, kind.value === "error" ? { error: value.value.trim() } : { response: readLiteral(value.value) }];
      };
      return row;
    },
  });
  box.read = () => {
    const out = {};
    const counts = {};
    box.rows().forEach((r, i) => {
      const [name, result] = r.read(i, counts);
      (out[name] ||= []).push(result);
    });
    return out;
  };
  return section("Scripted tool results", "toolResponses", box,
    "The results a tool's calls answer, in call order; later calls answer the tool's mock response.");
}

/** Rows of expected calls, each with argument checks and call counts. */
function expectedCalls(calls, { tools }) {
  const box = rows({
    items: calls || [],
    blank: () => ({ name: "", arguments: {}, minCalls: 1 }),
    addLabel: "Add expected tool call",
    render: (c) => {
      const [input, list] = suggest(c.name, () => [...tools.map((t) => t.name), "webSearch", "webFetch", "endConversation", "requestHumanHandoff"],
        { class: "ctool", placeholder: tools[0]?.name || "lookup_order" });
      const params = () => Object.keys(tools.find((t) => t.name === input.value.trim())?.parameters?.properties || {});
      const min = h("input", { type: "number", min: 0, value: c.minCalls ?? 1, class: "cmin" });
      const max = h("input", { type: "number", min: 0, value: c.maxCalls ?? "", placeholder: "no limit", class: "cmax" });
      const toolField = field("Tool called", "", input);
      const minField = field("At least (calls)", "", min);
      const maxField = field("At most (calls)", "", max);
      const args = rows({
        items: Object.entries(c.arguments || {}),
        blank: () => ["", undefined],
        addLabel: "Add argument check",
        render: ([arg, m]) => {
          const [argInput, argList] = suggest(arg, params, { class: "carg", placeholder: "order_id" });
          const argField = field("Argument", "", argInput);
          const check = matcherControls(m);
          const row = h("div", { class: "listrow" }, argField, check.opField, check.valueField, argList);
          row.read = (base) => {
            const n = argInput.value.trim();
            if (!n) fail(argField, `${base}.arguments`, "name the argument");
            const path = `${base}.arguments.${n}`;
            argField.dataset.field = path;
            return [n, check.read(path, [argField])];
          };
          return row;
        },
      });
      const card = h("div", { class: "expect-call", role: "group", "aria-label": `Expected call of ${c.name || "a tool"}` },
        h("div", { class: "row" }, toolField, minField, maxField), list, args);
      input.addEventListener("input", () => card.setAttribute("aria-label", `Expected call of ${input.value.trim() || "a tool"}`));
      card.read = (i) => {
        const base = `expect.toolCalls[${i}]`;
        toolField.dataset.field = `${base}.name`;
        minField.dataset.field = `${base}.minCalls`;
        maxField.dataset.field = `${base}.maxCalls`;
        const name = input.value.trim();
        if (!name) fail(toolField, `${base}.name`, "name the function");
        const out = { name, minCalls: min.value === "" ? 1 : Number(min.value) };
        if (max.value !== "") out.maxCalls = Number(max.value);
        const a = Object.fromEntries(args.rows().map((r) => r.read(base)));
        if (Object.keys(a).length) out.arguments = a;
        return out;
      };
      return card;
    },
  });
  box.read = () => box.rows().map((r, i) => r.read(i));
  return section("Tool calls", "expect.toolCalls", box,
    "Each counts the calls whose arguments pass every check: at least one unless you say otherwise; at most 0 expects the tool not to be called.");
}

/** Rows of expected final values of variables. */
function expectedVariables(values, { variables }) {
  const box = rows({
    items: Object.entries(values || {}),
    blank: () => ["", undefined],
    addLabel: "Add variable check",
    render: ([n, m]) => {
      const [input, list] = suggest(n, () => variables.map((x) => x.name), { class: "evar", placeholder: variables[0]?.name || "order_status" });
      const nameField = field("Variable", "", input);
      const check = matcherControls(m);
      const row = h("div", { class: "listrow" }, nameField, check.opField, check.valueField, list);
      row.read = (i) => {
        const name = input.value.trim();
        const path = `expect.variables.${name || `[${i}]`}`;
        nameField.dataset.field = path;
        if (!name) fail(nameField, path, "name the variable");
        return [name, check.read(path, [nameField])];
      };
      return row;
    },
  });
  box.read = () => Object.fromEntries(box.rows().map((r, i) => r.read(i)));
  return section("Final variables", "expect.variables", box, "Values the variables must have when the conversation is over.");
}

/**
 * The builders of a test's variables, scripted results and expectations.
 * `ctx`: the workspace's `tools` and the target's declared `variables`.
 * `read()` gives `{variables, toolResponses, expect}`.
 */
export function testBuilders(t, ctx) {
  const e = t.expect || {};
  const initial = initialVariables(t.variables, ctx);
  const scripted = scriptedResults(t.toolResponses, ctx);
  const calls = expectedCalls(e.toolCalls, ctx);
  const finals = expectedVariables(e.variables, ctx);
  const end = matcherControls(e.endReason, { optional: true });
  end.opField.querySelector("label").textContent = "End reason";
  const criterion = area(e.successCriterion || "", { rows: 2, class: "prose", placeholder: "The assistant tells the user the order has shipped." });
  const el = h("div", { class: "test-builders" },
    initial, scripted,
    h("h2", {}, "Expectations"),
    calls, finals,
    h("div", { class: "row" }, end.opField, end.valueField),
    field("Success criterion", "expect.successCriterion", criterion, "Judged by the small model over the transcript."));
  el.read = () => {
    const expect = { toolCalls: calls.read(), variables: finals.read() };
    const reason = end.read("expect.endReason");
    if (reason !== undefined) expect.endReason = reason;
    if (criterion.value.trim()) expect.successCriterion = criterion.value.trim();
    return { variables: initial.read(), toolResponses: scripted.read(), expect };
  };
  return el;
}

// The form builder of a tool's parameters, the JSON Schema of an object:
// a row per parameter (name, type, description, required, allowed
// values), an object's properties edited the same way, as deep as they
// go, and an array's item type; plus a JSON view of the raw schema for
// power users. Switching views keeps what was entered both ways.
// Keywords the form does not edit (minLength, format, default, …) are
// kept as they are; a schema whose shape the form cannot show (anyOf,
// $ref, a list of types, …) stays in the JSON view with a note saying why.

import { h, field, text, select, checkbox, showError, clearErrors } from "./ui.js";

export const TYPES = [["string", "Text (string)"], ["number", "Number"], ["integer", "Integer"],
  ["boolean", "True/false (boolean)"], ["array", "List (array)"], ["object", "Object"]];
const TYPE_NAMES = TYPES.map(([t]) => t);
const WITH_ENUM = new Set(["string", "number", "integer"]);
/** The keywords the form edits; any other is kept untouched. */
const EDITED = new Set(["type", "description", "enum", "properties", "required", "items"]);
/** Keywords that change a schema's shape beyond what the form shows. */
const STRUCTURAL = ["anyOf", "oneOf", "allOf", "not", "$ref", "$dynamicRef", "$defs", "definitions", "if", "then", "else",
  "patternProperties", "prefixItems", "contains", "dependentSchemas", "dependentRequired", "propertyNames",
  "unevaluatedProperties", "unevaluatedItems", "additionalItems"];

const isObject = (v) => v !== null && typeof v === "object" && !Array.isArray(v);
const pretty = (v) => JSON.stringify(v, null, 2);
const extrasOf = (schema) => Object.fromEntries(Object.entries(schema || {}).filter(([k]) => !EDITED.has(k)));

/** An error shown at `fieldEl`, whose API path becomes `path`. */
function fail(fieldEl, path, message) {
  fieldEl.dataset.field = path;
  const e = new Error(message);
  e.code = "invalid_parameter";
  e.field = path;
  throw e;
}

/** Why the form cannot show `schema` (named `where`), or null when it can. */
export function unrepresentable(schema, where = "the schema") {
  if (!isObject(schema)) return `${where} is not an object`;
  const structural = STRUCTURAL.find((k) => k in schema);
  if (structural) return `${where} uses \`${structural}\``;
  if (Array.isArray(schema.type)) return `${where} allows several types`;
  if (!TYPE_NAMES.includes(schema.type)) return `${where} has no type the form knows`;
  if (schema.description !== undefined && typeof schema.description !== "string") return `${where} has a description that is not text`;
  if (isObject(schema.additionalProperties)) return `${where} uses \`additionalProperties\` as a schema`;
  if (schema.enum !== undefined) {
    if (!WITH_ENUM.has(schema.type) || !Array.isArray(schema.enum)) return `${where} has allowed values the form cannot show`;
    for (const v of schema.enum) {
      const ok = schema.type === "string"
        ? typeof v === "string" && v !== "" && v.trim() === v && !v.includes(",")
        : typeof v === "number" && (schema.type === "number" || Number.isInteger(v));
      if (!ok) return `${where} allows the value ${JSON.stringify(v)}, which the form cannot show`;
    }
  }
  if (schema.properties !== undefined || schema.required !== undefined) {
    if (schema.type !== "object") return `${where} has properties but is not an object`;
    if (schema.properties !== undefined && !isObject(schema.properties)) return `${where} has properties that are not an object`;
    const props = schema.properties || {};
    if (schema.required !== undefined && (!Array.isArray(schema.required) || schema.required.some((r) => !(r in props)))) {
      return `${where} requires a property it does not declare`;
    }
    for (const [name, sub] of Object.entries(props)) {
      const why = unrepresentable(sub, where === "the schema" ? `\`${name}\`` : `${where.slice(0, -1)}.${name}\``);
      if (why) return why;
    }
  }
  if (schema.items !== undefined) {
    if (schema.type !== "array") return `${where} has items but is not an array`;
    return unrepresentable(schema.items, `the items of ${where}`);
  }
  return null;
}

/** A note under a row naming the keywords kept without being edited. */
const keptNote = (extras) => (Object.keys(extras).length
  ? h("p", { class: "hint" }, `Also kept: ${Object.keys(extras).join(", ")} (see the JSON view).`) : null);

/**
 * What depends on a node's type: allowed values (text, numbers),
 * properties (objects), the item type (arrays). `read(path)` gives those
 * keys of the schema; `enumText` carries allowed values across a change
 * between text and number types.
 */
function detailEditor(type, schema, depth, enumText) {
  const box = h("div", { class: "param-detail" });
  box.read = () => ({});
  if (WITH_ENUM.has(type)) {
    const values = text(enumText ?? (schema.enum || []).join(", "), { class: "enum", placeholder: "any value, or a list: low, normal, high" });
    const f = field("Allowed values", "", values);
    box.append(f);
    box.enumText = () => values.value;
    box.read = (path) => {
      const raw = [...new Set(values.value.split(",").map((s) => s.trim()).filter(Boolean))];
      if (!raw.length) return {};
      if (type === "string") return { enum: raw };
      const bad = raw.find((s) => !Number.isFinite(Number(s)) || (type === "integer" && !Number.isInteger(Number(s))));
      if (bad !== undefined) fail(f, `${path}.enum`, `\`${bad}\` is not ${type === "integer" ? "an integer" : "a number"}`);
      return { enum: raw.map(Number) };
    };
  } else if (type === "object") {
    const list = propertyList(schema.properties || {}, schema.required || [], depth + 1);
    box.append(list);
    box.read = (path) => list.read(path);
  } else if (type === "array") {
    const items = itemEditor(isObject(schema.items) ? schema.items : { type: "string" }, depth + 1);
    box.append(items);
    box.read = (path) => ({ items: items.read(`${path}.items`) });
  }
  return box;
}

/** A type select whose change redraws the type's details. */
function typed(schema, depth, label) {
  const type = select(TYPES, TYPE_NAMES.includes(schema.type) ? schema.type : "string", { class: "ptype" });
  const typeField = field(label, "", type);
  const part = { typeField, type, detail: detailEditor(type.value, schema, depth) };
  type.addEventListener("change", () => {
    const next = detailEditor(type.value, {}, depth, part.detail.enumText?.());
    part.detail.replaceWith(next);
    part.detail = next;
  });
  return part;
}

/** An array's items: their type and what depends on it. */
function itemEditor(schema, depth) {
  const extras = extrasOf(schema);
  const part = typed(schema, depth, "Item type");
  const box = h("div", { class: "param-items" }, part.typeField, part.detail, keptNote(extras));
  box.read = (path) => {
    part.typeField.dataset.field = `${path}.type`;
    return { ...extras, type: part.type.value, ...part.detail.read(path) };
  };
  return box;
}

/** One parameter (depth 0) or property of an object (deeper). */
function propertyRow(name, schema, required, depth) {
  const what = depth ? "Property" : "Parameter";
  const extras = extrasOf(schema);
  const nameInput = text(name, { class: "pname", placeholder: depth ? "street" : "city", autocomplete: "off", spellcheck: "false" });
  const description = text(schema.description || "", { class: "pdesc", placeholder: "What the model should pass" });
  const [reqLabel, req] = checkbox("Required", required, { class: "preq" });
  const nameField = field(`${what} name`, "", nameInput);
  const descField = field(`${what} description`, "", description);
  const part = typed(schema, depth, `${what} type`);
  const remove = h("button", { type: "button", class: "link" }, "Remove");
  const row = h("div", { class: "param", role: "group" },
    h("div", { class: "param-head" }, nameField, part.typeField, descField, h("div", { class: "field param-req" }, reqLabel), remove),
    part.detail, keptNote(extras));
  // `part.detail` is replaced on a type change: read it through `part`.
  const label = () => {
    const n = nameInput.value.trim() || "(new)";
    row.setAttribute("aria-label", `${what} ${n}`);
    remove.setAttribute("aria-label", `Remove ${what.toLowerCase()} ${n}`);
  };
  nameInput.addEventListener("input", label);
  label();
  remove.addEventListener("click", () => row.remove());
  row.nameInput = nameInput;
  row.typeOf = () => part.type.value;
  row.read = (parent, index, seen) => {
    const n = nameInput.value.trim();
    const path = `${parent}.properties.${n || `[${index}]`}`;
    nameField.dataset.field = path;
    if (!n) fail(nameField, path, `name the ${what.toLowerCase()}`);
    if (/\s/.test(n)) fail(nameField, path, `a ${what.toLowerCase()} name has no spaces`);
    if (seen.has(n)) fail(nameField, `${parent}.properties[${index}]`, `\`${n}\` is declared twice`);
    seen.add(n);
    part.typeField.dataset.field = `${path}.type`;
    descField.dataset.field = `${path}.description`;
    const out = { ...extras, type: part.type.value };
    if (description.value.trim()) out.description = description.value.trim();
    return { name: n, schema: { ...out, ...part.detail.read(path) }, required: req.checked };
  };
  return row;
}

/** The rows of an object's properties with an add button. */
function propertyList(properties, required, depth) {
  const list = h("div", { class: "param-list" });
  const add = (name, schema, req) => list.append(propertyRow(name, schema, req, depth));
  for (const [n, s] of Object.entries(properties)) add(n, s, required.includes(n));
  const addBtn = h("button", { type: "button", class: "ghost small" }, depth ? "Add property" : "Add parameter");
  addBtn.addEventListener("click", () => {
    add("", { type: "string" }, false);
    list.lastElementChild.querySelector("input").focus();
  });
  const box = h("div", { class: depth ? "param-nested" : "param-root" }, list, addBtn);
  box.rows = () => [...list.children];
  box.read = (path) => {
    const props = {};
    const req = [];
    const seen = new Set();
    box.rows().forEach((row, i) => {
      const p = row.read(path, i, seen);
      props[p.name] = p.schema;
      if (p.required) req.push(p.name);
    });
    return req.length ? { properties: props, required: req } : { properties: props };
  };
  return box;
}

/**
 * The parameters editor: a field (API path `path`) holding the form and
 * the JSON view. `read()` gives the schema (undefined for an empty JSON
 * view), `set(schema)` shows another one, `names()` the top-level
 * parameters ({name, type}), `setReadOnly(b)` locks it (an MCP tool's
 * parameters are its server's).
 */
export function schemaEditor(schema, { path = "parameters", hint } = {}) {
  const jsonId = `schema-json-${path.replace(/\W/g, "-")}`;
  const json = h("textarea", { id: jsonId, rows: 10, class: "code", spellcheck: "false",
    placeholder: '{"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}' });
  const note = h("p", { class: "hint schema-note", role: "status" });
  const formView = h("fieldset", { class: "schema-form" });
  const jsonView = h("div", { class: "schema-json", hidden: true }, h("label", { for: jsonId }, "Parameters (JSON Schema)"), json);
  const formBtn = h("button", { type: "button", class: "ghost small" }, "Form");
  const jsonBtn = h("button", { type: "button", class: "ghost small" }, "JSON");
  const hintEl = h("p", { class: "hint" }, hint || "What the model passes when it calls the tool; {{name}} in the URL or body puts a parameter there.");
  const el = h("div", { class: "field schema-editor", dataset: { field: path } },
    h("div", { class: "field-head" }, h("span", { class: "label" }, "Parameters"),
      h("div", { class: "view-toggle", role: "group", "aria-label": "Parameters view" }, formBtn, jsonBtn)),
    h("p", { class: "error" }), note, formView, jsonView, hintEl);
  let view = "form";
  let rootExtras = {};
  let list = null;

  const setView = (v) => {
    view = v;
    formView.hidden = v !== "form";
    jsonView.hidden = v !== "json";
    formBtn.setAttribute("aria-pressed", String(v === "form"));
    jsonBtn.setAttribute("aria-pressed", String(v === "json"));
  };
  const readForm = () => ({ ...rootExtras, type: "object", ...list.read(path) });
  /** Show `s` in the form if it can, else in the JSON view; says why not. */
  const show = (s) => {
    const why = s.type === "object" ? unrepresentable(s) : "the schema is not of type object";
    if (why) {
      json.value = pretty(s);
      note.textContent = `The form cannot show this schema: ${why}. Edit it as JSON.`;
      note.classList.add("warn");
      return false;
    }
    note.textContent = "";
    note.classList.remove("warn");
    const { properties = {}, required = [] } = s;
    rootExtras = extrasOf(s);
    list = propertyList(properties, required, 0);
    formView.replaceChildren(list);
    setView("form");
    return true;
  };

  formBtn.addEventListener("click", () => {
    if (view === "form") return;
    let s;
    try {
      s = json.value.trim() ? JSON.parse(json.value) : { type: "object", properties: {} };
    } catch (e) {
      note.textContent = `Not valid JSON: ${e.message}. Fix it to go back to the form.`;
      note.classList.add("warn");
      return;
    }
    show(s);
  });
  jsonBtn.addEventListener("click", () => {
    if (view === "json") return;
    try {
      json.value = pretty(readForm());
    } catch (e) {
      showError(el.closest("form") || el, e);
      return;
    }
    note.textContent = "";
    clearErrors(el.closest("form") || el);
    setView("json");
  });

  el.set = (s) => {
    if (!show(isObject(s) ? s : { type: "object", properties: {} })) {
      list = null;
      formView.replaceChildren();
      setView("json");
    }
  };
  el.read = () => {
    if (view === "form") return readForm();
    if (!json.value.trim()) return undefined;
    try {
      return JSON.parse(json.value);
    } catch (e) {
      const err = new Error(`not valid JSON: ${e.message}`);
      err.code = "invalid_json";
      err.field = path;
      throw err;
    }
  };
  el.names = () => {
    if (view === "form") return list.rows().map((r) => ({ name: r.nameInput.value.trim(), type: r.typeOf() })).filter((p) => p.name);
    try {
      return Object.entries(JSON.parse(json.value).properties || {}).map(([name, s]) => ({ name, type: String(s?.type ?? "any") }));
    } catch { return []; }
  };
  el.setReadOnly = (locked) => {
    formView.disabled = locked;
    json.readOnly = locked;
    hintEl.textContent = locked ? "An MCP tool's parameters are its server's, pinned when the tool is saved."
      : hint || "What the model passes when it calls the tool; {{name}} in the URL or body puts a parameter there.";
  };
  el.set(schema);
  return el;
}

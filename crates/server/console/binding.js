// The editor of one tool binding (or startup action): which tool, where
// each argument and template input comes from (model / variable / literal
// / template), result assignments and the model's view of the result.

import { h, field, text, select, rows, literalText, readLiteral, stringText, readString } from "./ui.js";

const SYSTEM_VARIABLES = ["system__session_id", "system__root_session_id", "system__parent_session_id",
  "system__assistant_id", "system__user_id", "system__time_utc", "system__turn_count", "system__run_mode"];

/** One source picker: the select, the value control, and how to read it
 * back. A literal of a string parameter (`type` "string") is the text as
 * typed (`"Acme"` in JSON quotes is Acme too); others read as JSON when
 * they parse. */
function sourcePicker(name, source, { allowModel, variables, path, type }) {
  const kinds = allowModel ? ["model", "variable", "literal", "template"] : ["variable", "literal", "template"];
  const current = source?.source || kinds[0];
  const kind = select(kinds.map((k) => [k, k]), current, { "aria-label": `Source of ${name}` });
  const varNames = [...variables, ...SYSTEM_VARIABLES];
  const variable = select(varNames.map((v) => [v, v]), source?.variableName ?? varNames[0], { "aria-label": `Variable for ${name}` });
  const asText = type === "string";
  const shown = source?.source !== "literal" ? "" : asText && typeof source.value === "string" ? stringText(source.value) : literalText(source.value);
  const literal = text(shown, { "aria-label": `Literal value for ${name}`, placeholder: asText ? "text" : "text, 42, true or JSON" });
  const template = text(source?.template ?? "", { "aria-label": `Template for ${name}`, placeholder: "Hello {{customer_name}}" });
  const none = h("span", { class: "muted small" }, "the model fills it in");
  const slot = h("div");
  const sync = () => {
    slot.replaceChildren({ model: none, variable, literal, template }[kind.value]);
  };
  kind.addEventListener("change", sync);
  sync();
  const row = h("div", { class: "field", dataset: { field: path } },
    h("div", { class: "source" }, h("span", { class: "name" }, name), kind, slot), h("p", { class: "error" }));
  row.read = () => {
    switch (kind.value) {
      case "model": return { source: "model" };
      case "variable": return { source: "variable", variableName: variable.value };
      case "template": return { source: "template", template: template.value };
      default: return { source: "literal", value: asText ? readString(literal.value) : readLiteral(literal.value) };
    }
  };
  return row;
}

/**
 * A binding card. `tools` are the workspace's tools, `variables` the
 * assistant's declared variable names (a function: they change while
 * editing); `results` shows the result assignments (default: with
 * `allowModel`, on for workflow actions). Returns an element with `read()`.
 */
export function bindingEditor(binding, { tools, variables, path, allowModel, title, results = allowModel }) {
  const card = h("div", { class: "binding", dataset: { path } });
  const tool = select([["", "— choose a tool —"], ...tools.map((t) => [t.id, `${t.name} (${t.type})`])], binding.toolId || "");
  const body = h("div");
  let pickers = [];
  let inputs = [];
  const filter = text((binding.modelResultFilter || []).join(", "), { placeholder: "status, items[0].name" });
  const assignments = rows({
    items: Object.entries(binding.resultAssignments || {}),
    blank: () => [variables()[0] || "", ""],
    addLabel: "Add result assignment",
    render: ([v, p]) => h("div", { class: "listrow kv" },
      field("Variable", `${path}.resultAssignments.${v}`, select(variables().map((n) => [n, n]), v, { class: "var" })),
      field("Result path", `${path}.resultAssignments.${v}`, text(p, { class: "path", placeholder: "data.status" }))),
  });
  const render = () => {
    const t = tools.find((x) => x.id === tool.value);
    pickers = [];
    inputs = [];
    if (!t) { body.replaceChildren(h("p", { class: "muted small" }, "Choose a tool to bind its arguments.")); return; }
    const props = Object.keys(t.parameters?.properties || {});
    const ctx = { allowModel, variables: variables() };
    pickers = props.map((p) => [p, sourcePicker(p, binding.argumentBindings?.[p], { ...ctx, path: `${path}.argumentBindings.${p}`, type: t.parameters.properties[p]?.type })]);
    inputs = (t.templateInputs || []).map((i) => [i.name, sourcePicker(`input__${i.name}`, binding.templateBindings?.[i.name], { ...ctx, allowModel: false, path: `${path}.templateBindings.${i.name}` })]);
    body.replaceChildren(...[
      h("h3", {}, "Arguments"), pickers.length ? pickers.map(([, el]) => el) : h("p", { class: "muted small" }, "This tool takes no arguments."),
      inputs.length ? h("h3", {}, "Template inputs") : null, inputs.map(([, el]) => el),
      results ? h("h3", {}, "Result") : null,
      results ? h("div", { class: "field", dataset: { field: `${path}.resultAssignments` } }, h("span", { class: "label" }, "Copy into variables"), assignments, h("p", { class: "error" })) : null,
      allowModel ? field("Fields the model may see", `${path}.modelResultFilter`, filter, "Comma-separated paths; empty shows the whole result.") : null,
    ].flat().filter(Boolean));
  };
  tool.addEventListener("change", () => { binding = { toolId: tool.value }; render(); });
  card.append(h("div", { class: "row" }, field(title, `${path}.toolId`, tool)), body);
  render();
  card.read = () => {
    const out = { toolId: tool.value };
    const args = Object.fromEntries(pickers.map(([n, el]) => [n, el.read()]));
    if (Object.keys(args).length) out.argumentBindings = args;
    const tpl = Object.fromEntries(inputs.map(([n, el]) => [n, el.read()]));
    if (Object.keys(tpl).length) out.templateBindings = tpl;
    if (results) {
      const ra = {};
      for (const r of assignments.rows()) {
        const v = r.querySelector(".var").value;
        const p = r.querySelector(".path").value.trim();
        if (v && p) ra[v] = p;
      }
      if (Object.keys(ra).length) out.resultAssignments = ra;
    }
    if (allowModel) {
      const f = filter.value.split(",").map((s) => s.trim()).filter(Boolean);
      if (f.length) out.modelResultFilter = f;
    }
    return out;
  };
  return card;
}

/** A list of binding cards with add/remove. */
export function bindingList(items, opts) {
  const box = h("div");
  const list = h("div");
  const renumber = () => [...list.children].forEach((card, i) => { card.dataset.path = `${opts.prefix}[${i}]`; });
  const add = (b) => {
    const i = list.children.length;
    const card = bindingEditor(b, { ...opts, path: `${opts.prefix}[${i}]` });
    card.append(h("div", { class: "actions" }, h("button", { type: "button", class: "link", onclick: () => { card.remove(); renumber(); } }, "Remove")));
    list.append(card);
  };
  items.forEach(add);
  box.append(list, h("button", { type: "button", class: "ghost", onclick: () => add({}) }, opts.addLabel));
  box.read = () => [...list.children].map((c) => c.read());
  return box;
}

// The side form of one workflow edge: id, from (a node or `*`, any agent
// stage), to, and the condition — always, an expression (written with the
// expression editor, no llm leaves), an llm condition the judge decides,
// or an action's result. Edges are tried in order, so they can be moved.

import { h, field, text, area, select } from "../../ui.js";
import { exprField } from "../../expr.js";
import { followedEdgeId } from "./model.js";

/**
 * The form of edge `index`. ctx: `nodes()` (the document's nodes),
 * `variables()`, `remove()`, `move(delta)`, `count()`, `otherIds()` (the
 * other edges' ids). `read()` gives the edge (throws a field error when
 * the expression does not parse). An id derived from the endpoints
 * (`greet_to_end`) follows From and To when they change; a name the user
 * gave stays.
 */
export function edgeForm(edge, index, ctx) {
  const p = `edges[${index}]`;
  const ids = ctx.nodes().map((n) => n.id);
  const withMissing = (value, list) => (value && !list.includes(value) ? [...list.map((i) => [i, i]), [value, `${value} (missing)`]] : list.map((i) => [i, i]));
  const id = text(edge.id, { spellcheck: "false" });
  const from = select([["*", "* (any agent stage, after its own edges)"], ...withMissing(edge.from === "*" ? "" : edge.from, ids)], edge.from);
  const to = select(withMissing(edge.to, ids), edge.to);
  const title = h("span", {}, edge.id);
  const retitle = () => { title.textContent = id.value; form.setAttribute("aria-label", `Edge ${id.value}`); };
  id.addEventListener("input", retitle);
  let ends = { from: edge.from, to: edge.to };
  const follow = () => {
    id.value = followedEdgeId(id.value.trim(), ends, from.value, to.value, ctx.otherIds());
    retitle();
    ends = { from: from.value, to: to.value };
  };
  from.addEventListener("change", follow);
  to.addEventListener("change", follow);
  const c = edge.condition || { type: "always" };
  const kind = select([["always", "always"], ["expression", "expression"], ["llm", "llm (the judge decides)"], ["result", "result of the action"]], c.type);
  const expr = exprField("Expression (boolean)", `${p}.condition.expression`, c.type === "expression" ? c.expression : undefined, { variables: ctx.variables, allowLlm: false });
  const llm = area(c.type === "llm" ? c.condition : "", { class: "prose", rows: 2, placeholder: "The user asked for a human" });
  const llmField = field("Condition (natural language)", `${p}.condition.condition`, llm, "Judged by the small model after each turn of an agent stage.");
  const success = select([["true", "✓ the tool succeeded"], ["false", "✗ the tool failed"]], c.type === "result" ? String(c.success) : "true");
  const resultField = field("Result", `${p}.condition.success`, success);
  const sync = () => {
    expr.hidden = kind.value !== "expression";
    llmField.hidden = kind.value !== "llm";
    resultField.hidden = kind.value !== "result";
  };
  kind.addEventListener("change", sync);
  sync();
  const form = h("form", { class: "wf-form", "aria-label": `Edge ${edge.id}`, dataset: { kind: "edge", index } },
    h("h2", {}, h("span", { class: "pill" }, edge.from === "*" ? "global edge" : "edge"), " ", title),
    h("div", { class: "field", dataset: { field: p } }, h("p", { class: "error" })),
    field("Edge id", `${p}.id`, id),
    h("div", { class: "row" }, field("From", `${p}.from`, from), field("To", `${p}.to`, to)),
    field("Condition", `${p}.condition`, kind, "Edges are tried in order; the first whose condition holds is taken."),
    expr, llmField, resultField,
    h("div", { class: "actions" },
      h("button", { type: "button", class: "ghost", disabled: index === 0, onclick: () => ctx.move(-1) }, "Move up"),
      h("button", { type: "button", class: "ghost", disabled: index === ctx.count() - 1, onclick: () => ctx.move(1) }, "Move down"),
      h("button", { type: "button", class: "danger", onclick: ctx.remove }, "Remove edge")));
  form.addEventListener("submit", (ev) => ev.preventDefault());
  form.read = () => {
    let condition;
    switch (kind.value) {
      case "expression": condition = { type: "expression", expression: expr.read() }; break;
      case "llm": condition = { type: "llm", condition: llm.value }; break;
      case "result": condition = { type: "result", success: success.value === "true" }; break;
      default: condition = { type: "always" };
    }
    return { id: id.value.trim(), from: from.value, to: to.value, condition };
  };
  return form;
}

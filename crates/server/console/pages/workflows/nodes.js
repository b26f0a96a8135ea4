// The side form of one workflow node, by type. agent: prompt, entry
// behaviour, first message, model, independent, writable variables, the
// stage's built-in patch and tool bindings; action: its binding (no
// `model` source); updateState: rules with the expression editor;
// transfer: human or assistant; end: message and reason. Every field
// names its API path (`nodes[N]…`) so an error lands next to it.

import { h, field, text, area, select, checkbox } from "../../ui.js";
import { bindingEditor, bindingList } from "../../binding.js";
import { builtInsPatch, rulesEditor } from "../../builtins.js";
import { llmFields } from "../../llm.js";

const setIf = (obj, key, value) => {
  if (value === undefined || value === "" || (Array.isArray(value) && !value.length && key !== "rules")) delete obj[key];
  else obj[key] = value;
};

function agentFields(n, p, ctx) {
  const prompt = area(n.prompt || "", { class: "prose", rows: 5, placeholder: "Ask for the order number." });
  const entry = select([["respond", "respond: run a model turn on entry"], ["say", "say the first message, then wait"], ["wait", "wait for the user"]], n.entryBehavior || "respond");
  const first = text(n.firstMessage || "", { placeholder: "Hi, Acme support. Your order number?" });
  const llm = llmFields(n.llm, `${p}.llm`, { inherit: { provider: "the workflow's", model: "the workflow's" } });
  const [indLabel, independent] = checkbox("Independent: without the workflow's prompt, built-ins and bindings", !!n.independent);
  const [limitLabel, limit] = checkbox("Limit the variables this stage may change", Array.isArray(n.writableVariables));
  const writable = h("div", { class: "options" });
  const drawWritable = () => {
    const chosen = new Set(n.writableVariables || []);
    writable.replaceChildren(...ctx.variables().map((v) => checkbox(v.name, chosen.has(v.name), { class: "wv", value: v.name })[0]));
    writable.hidden = !limit.checked;
  };
  limit.addEventListener("change", () => { writable.hidden = !limit.checked; });
  drawWritable();
  const built = builtInsPatch(n.builtInTools, { variables: ctx.variables, path: `${p}.builtInTools`, globals: ctx.globals });
  const bindings = bindingList(n.toolBindings || [], { tools: ctx.tools, variables: ctx.variableNames, allowModel: true, prefix: `${p}.toolBindings`, title: "Tool", addLabel: "Bind a tool to this stage" });
  const el = h("div", {},
    field("Prompt", `${p}.prompt`, prompt, "Added to the workflow's system prompt; {{variable}} inserts a value."),
    h("div", { class: "row" }, field("Entry behaviour", `${p}.entryBehavior`, entry), field("First message", `${p}.firstMessage`, first)),
    h("h3", {}, "Model (falls back to the workflow's)"), h("div", { class: "field", dataset: { field: `${p}.llm` } }, llm, h("p", { class: "error" })),
    h("div", { class: "field", dataset: { field: `${p}.independent` } }, indLabel, h("p", { class: "error" })),
    h("div", { class: "field", dataset: { field: `${p}.writableVariables` } }, limitLabel, writable, h("p", { class: "error" })),
    built,
    h("h3", {}, "Tool bindings of this stage"),
    h("div", { class: "field", dataset: { field: `${p}.toolBindings` } }, bindings, h("p", { class: "error" })));
  el.read = (out) => {
    out.prompt = prompt.value;
    out.entryBehavior = entry.value;
    setIf(out, "firstMessage", first.value);
    setIf(out, "llm", llm.read());
    if (independent.checked) out.independent = true; else delete out.independent;
    if (limit.checked) out.writableVariables = [...writable.querySelectorAll("input.wv:checked")].map((b) => b.value);
    else delete out.writableVariables;
    const patch = built.read();
    if (Object.keys(patch).length) out.builtInTools = patch; else delete out.builtInTools;
    setIf(out, "toolBindings", bindings.read());
  };
  return el;
}

function actionFields(n, p, ctx) {
  const binding = bindingEditor(n.binding || {}, { tools: ctx.tools, variables: ctx.variableNames, path: `${p}.binding`, allowModel: false, results: true, title: "Tool" });
  const el = h("div", {}, h("p", { class: "hint" }, "Called once on entry. Arguments come from variables, fixed values or templates (never the model); route on its result with result ✓ / ✗ edges."),
    binding);
  el.read = (out) => { out.binding = binding.read(); };
  return el;
}

function updateStateFields(n, p, ctx) {
  const rules = rulesEditor(n.rules || [], { variables: ctx.variables, allowLlm: false, path: `${p}.rules` });
  const el = h("div", {}, h("p", { class: "hint" }, "Rules apply in order, at once, without the model. No rules: a pure router."),
    h("div", { class: "field", dataset: { field: `${p}.rules` } }, rules, h("p", { class: "error" })));
  el.read = (out) => { out.rules = rules.read(); };
  return el;
}

function transferFields(n, p, ctx) {
  const t = n.target || { type: "human" };
  const kind = select([["human", "a human agent"], ["assistant", "another assistant"]], t.type);
  const assistant = select([["", "— choose an assistant —"], ...ctx.assistants.map((a) => [a.id, a.name])], t.assistantId || "");
  const history = select([["full", "the whole conversation"], ["none", "only what is said after the transfer"]], t.history || "full");
  const which = h("div", { class: "row" }, field("Assistant", `${p}.target.assistantId`, assistant), field("History it sees", `${p}.target.history`, history));
  const sync = () => { which.hidden = kind.value !== "assistant"; };
  kind.addEventListener("change", sync);
  sync();
  const message = text(n.message || "", { placeholder: "Connecting you to a colleague." });
  const reason = text(n.reason || "");
  const el = h("div", {}, field("Transfer to", `${p}.target`, kind), which,
    field("Message", `${p}.message`, message, "Said before the transfer; {{variables}} are filled in."), field("Reason", `${p}.reason`, reason));
  el.read = (out) => {
    out.target = kind.value === "assistant" ? { type: "assistant", assistantId: assistant.value, history: history.value } : { type: "human" };
    setIf(out, "message", message.value);
    setIf(out, "reason", reason.value);
  };
  return el;
}

function endFields(n, p) {
  const message = text(n.message || "", { placeholder: "Order {{order_id}} is {{order_status}}. Bye!" });
  const reason = text(n.reason || "", { placeholder: "workflow_end" });
  const el = h("div", {}, field("Message", `${p}.message`, message, "Said before the end; {{variables}} are filled in."),
    field("Reason", `${p}.reason`, reason, "Recorded as the session's end reason."));
  el.read = (out) => {
    setIf(out, "message", message.value);
    out.reason = reason.value;
  };
  return el;
}

const FIELDS = { agent: agentFields, action: actionFields, updateState: updateStateFields, transfer: transferFields, end: endFields };

/**
 * The form of node `index`. ctx: `tools`, `assistants`, `variables()`
 * ({name, type}), `variableNames()`, `globals()` (the workflow's
 * built-ins), `rename(from, to)` (returns an error message or null),
 * `remove()`, `makeStart()`. `read()` gives the node (throws a field
 * error when an expression does not parse).
 */
export function nodeForm(node, index, ctx) {
  const p = `nodes[${index}]`;
  const id = text(node.id, { spellcheck: "false" });
  const idField = field("Node id", `${p}.id`, id, "Lower case, digits and _; edges follow a rename.");
  id.addEventListener("change", () => {
    const next = id.value.trim();
    const problem = next === node.id ? null : ctx.rename(node.id, next);
    const err = idField.querySelector(".error");
    idField.classList.toggle("invalid", !!problem);
    err.textContent = problem || "";
    if (problem) id.value = node.id;
    else { node.id = next; title.textContent = next; }
  });
  const title = h("span", {}, node.id);
  const body = (FIELDS[node.type] || endFields)(node, p, ctx);
  const isStart = ctx.isStart();
  const form = h("form", { class: "wf-form", "aria-label": `Node ${node.id}`, dataset: { kind: "node", index } },
    h("h2", {}, h("span", { class: `pill type-${node.type}` }, node.type), " ", title),
    h("div", { class: "field", dataset: { field: p } }, h("p", { class: "error" })),
    idField, body,
    h("div", { class: "actions" },
      isStart ? h("span", { class: "pill ok" }, "start node") : h("button", { type: "button", class: "ghost", onclick: ctx.makeStart }, "Make start node"),
      h("button", { type: "button", class: "ghost", onclick: ctx.addEdge }, "Add edge from here"),
      h("button", { type: "button", class: "danger", onclick: ctx.remove }, "Remove node")));
  form.addEventListener("submit", (ev) => ev.preventDefault());
  form.read = () => {
    const out = structuredClone(node);
    body.read(out);
    return out;
  };
  return form;
}

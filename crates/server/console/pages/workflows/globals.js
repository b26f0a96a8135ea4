// The workflow's own fields: name, run mode and realtime interface, the
// model, the global system prompt, dynamic variables, global built-ins and
// tool bindings (every non-independent stage gets them), limits, the start
// node and the node a limit sends the session to.

import { h, field, text, area, select } from "../../ui.js";
import { bindingList } from "../../binding.js";
import { builtInsSection } from "../../builtins.js";
import { variableRows, readVariables } from "../../variables.js";
import { llmFields } from "../../llm.js";

/**
 * The globals form. ctx: `tools`, `interfaces`. `read(doc)` writes the
 * fields into the document; `variables()` gives the variables as typed.
 */
export function globalsForm(doc, ctx) {
  const name = text(doc.name || "");
  const description = text(doc.description || "");
  const runMode = select([["", "— default (pipeline) —"], ["pipeline", "Pipeline (text model)"], ["realtime", "Realtime (speech-to-speech)"]], doc.runMode || "");
  const iface = select([["", "— none —"], ...ctx.interfaces.map((i) => [i.id, i.name])], doc.realtimeInterfaceId || "");
  const llm = llmFields(doc.llm, "llm", { inherit: { provider: "default" }, blankIsDefault: true });
  const prompt = area(doc.systemPrompt || "", { class: "prose", rows: 4, placeholder: "You are Acme's support agent. Be brief." });
  const vars = variableRows(doc.dynamicVariables || []);
  const variables = () => readVariables(vars).filter((v) => v.name);
  const variableNames = () => variables().map((v) => v.name);
  const built = builtInsSection(doc.builtInTools || {}, { variables, path: "builtInTools" });
  const bindings = bindingList(doc.toolBindings || [], { tools: ctx.tools, variables: variableNames, allowModel: true, prefix: "toolBindings", title: "Tool", addLabel: "Bind a tool to every stage" });
  const nodeIds = doc.nodes.map((n) => n.id);
  const start = select([["", "— choose the start node —"], ...nodeIds.map((i) => [i, i])], doc.startNodeId || "");
  const onError = select([["", "— end the session —"], ...doc.nodes.filter((n) => n.type === "end" || n.type === "transfer").map((n) => [n.id, n.id])], doc.onErrorNodeId || "");
  const visits = h("input", { type: "number", min: 1, max: 1000, value: doc.limits?.maxVisitsPerNode ?? "", placeholder: "10" });
  const hops = h("input", { type: "number", min: 1, max: 1000, value: doc.limits?.maxHopsPerTurn ?? "", placeholder: "25" });
  const form = h("form", { class: "wf-form", "aria-label": "Workflow settings", dataset: { kind: "globals" } },
    h("h2", {}, "Workflow settings"),
    h("div", { class: "row" }, field("Name", "name", name), field("Description", "description", description)),
    h("div", { class: "row" }, field("Start node", "startNodeId", start), field("On a limit, go to", "onErrorNodeId", onError)),
    field("System prompt", "systemPrompt", prompt, "Every stage's prompt starts with it (not an independent stage's)."),
    h("h3", {}, "Model"), h("div", { class: "field", dataset: { field: "llm" } }, llm, h("p", { class: "error" })),
    h("div", { class: "row" }, field("Run mode", "runMode", runMode), field("Realtime interface", "realtimeInterfaceId", iface)),
    h("h3", {}, "Dynamic variables"),
    h("div", { class: "field", dataset: { field: "dynamicVariables" } }, vars, h("p", { class: "error" })),
    built,
    h("h3", {}, "Tool bindings of every stage"),
    h("div", { class: "field", dataset: { field: "toolBindings" } }, bindings, h("p", { class: "error" })),
    h("h3", {}, "Limits"),
    h("div", { class: "row" }, field("Entries per node", "limits.maxVisitsPerNode", visits), field("Hops between user messages", "limits.maxHopsPerTurn", hops)));
  form.addEventListener("submit", (ev) => ev.preventDefault());
  form.variables = variables;
  form.read = (out) => {
    const set = (k, v) => { if (v === undefined || v === "") delete out[k]; else out[k] = v; };
    out.name = name.value.trim();
    set("description", description.value);
    set("runMode", runMode.value);
    set("realtimeInterfaceId", iface.value);
    set("llm", llm.read());
    out.systemPrompt = prompt.value;
    out.dynamicVariables = readVariables(vars);
    out.builtInTools = built.read();
    const b = bindings.read();
    set("toolBindings", b.length ? b : undefined);
    const limits = {};
    if (visits.value !== "") limits.maxVisitsPerNode = Number(visits.value);
    if (hops.value !== "") limits.maxHopsPerTurn = Number(hops.value);
    set("limits", Object.keys(limits).length ? limits : undefined);
    set("startNodeId", start.value);
    set("onErrorNodeId", onError.value);
  };
  return form;
}

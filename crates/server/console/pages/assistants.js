// Assistants: prompt, model, variables, built-ins, LLM features, tool
// bindings with a source per argument, startup actions, run mode and
// realtime interface — and the compatibility report with explicit cleanup.

import { get, list, post } from "../api.js";
import { h, page, field, text, area, select, checkbox, rows, showError, clearErrors, toast, parseJson, stillOn, saveResource, removeResource } from "../ui.js";
import { bindingEditor } from "../binding.js";

const FEATURES = [
  ["subAgents", "Sub-agents"], ["askUser", "Ask the user (askUser)"], ["todo", "Todo list (todoWrite)"],
  ["goals", "Goals"], ["loops", "Loops"], ["memory", "Memory"], ["webSearch", "Web search"], ["webFetch", "Web fetch"],
];

export async function assistantsPage() {
  const items = await list("/v1/assistants");
  page("Assistants",
    h("div", { class: "actions" }, h("a", { href: "#/assistants/new" }, h("button", { type: "button", tabindex: -1 }, "New assistant"))),
    items.length ? h("table", {}, h("thead", {}, h("tr", {}, h("th", {}, "Name"), h("th", {}, "Run mode"), h("th", {}, "Bindings"), h("th", {}, ""))),
      h("tbody", {}, items.map((a) => h("tr", {},
        h("td", {}, h("a", { href: `#/assistants/${encodeURIComponent(a.id)}` }, a.name)),
        h("td", {}, a.runMode),
        h("td", {}, String(a.toolBindings.length)),
        h("td", {}, h("a", { href: `#/playground?assistant=${encodeURIComponent(a.id)}` }, "Try in playground"))))))
      : h("p", { class: "muted" }, "No assistants yet. Create tools first if the assistant should call any."));
}

function variableRows(vars) {
  return rows({
    items: vars,
    blank: () => ({ name: "", type: "string", description: "" }),
    addLabel: "Add variable",
    render: (v, i) => h("div", { class: "listrow" },
      field("Name", `dynamicVariables[${i}].name`, text(v.name, { class: "n", placeholder: "customer_name" })),
      field("Type", `dynamicVariables[${i}].type`, select(["string", "number", "boolean", "json"], v.type, { class: "t" })),
      field("Default", `dynamicVariables[${i}].default`, text(v.default === undefined ? "" : JSON.stringify(v.default), { class: "dv", placeholder: "none (required at start)" })),
      field("Description", `dynamicVariables[${i}].description`, text(v.description || "", { class: "ds" }))),
  });
}

function readVariables(box) {
  return box.rows().map((r) => {
    const v = { name: r.querySelector(".n").value.trim(), type: r.querySelector(".t").value };
    const description = r.querySelector(".ds").value.trim();
    if (description) v.description = description;
    const d = r.querySelector(".dv").value.trim();
    if (d) {
      try { v.default = JSON.parse(d); } catch { v.default = d; }
    }
    return v;
  });
}

/** The platform built-ins section; `read()` gives `builtInTools`. */
function builtIns(b) {
  const end = b.endConversation;
  const [endLabel, endOn] = checkbox("endConversation: the model may end the conversation", !!end);
  const messageType = select([["generated", "the model says goodbye"], ["custom", "say a fixed message"], ["none", "end silently"]], end?.messageType || "generated");
  const customMessage = text(end?.customMessage || "");
  const [reasonLabel, reason] = checkbox("Ask the model for a reason", !!end?.captureReason);
  const [interLabel, inter] = checkbox("The user may interrupt the goodbye", end?.allowEndInterruption !== false);
  const [skipLabel, skipOn] = checkbox("skipTurn: the model may stay silent", !!b.skipTurn);
  const [handLabel, handOn] = checkbox("requestHumanHandoff: hand over to a human agent", !!b.requestHumanHandoff);
  const handMessage = text(b.requestHumanHandoff?.message || "", { placeholder: "Connecting you to a colleague…" });
  const [updLabel, updOn] = checkbox("updateState: the model may update variables by rules", !!b.updateState);
  const rules = area(b.updateState ? JSON.stringify(b.updateState.rules, null, 2) : "[]", { rows: 4 });
  // Options show only while their tool is on.
  const options = (box, ...children) => {
    const el = h("div", { class: "options" }, ...children);
    const sync = () => { el.hidden = !box.checked; };
    box.addEventListener("change", sync);
    sync();
    return el;
  };
  const section = h("fieldset", { class: "card" }, h("legend", {}, "Platform built-in tools"),
    h("div", { dataset: { path: "builtInTools.endConversation" } }, endLabel,
      options(endOn, h("div", { class: "row" }, field("Goodbye", "builtInTools.endConversation.messageType", messageType), field("Fixed message", "builtInTools.endConversation.customMessage", customMessage)),
        reasonLabel, interLabel)),
    h("div", { dataset: { path: "builtInTools.skipTurn" } }, skipLabel),
    h("div", { dataset: { path: "builtInTools.requestHumanHandoff" } }, handLabel, options(handOn, field("Message while handing over", "builtInTools.requestHumanHandoff.message", handMessage))),
    h("div", { dataset: { path: "builtInTools.updateState" } }, updLabel, options(updOn, field("Rules (JSON: [{variable, expression}])", "builtInTools.updateState.rules", rules))));
  section.read = () => {
    const out = {};
    if (endOn.checked) out.endConversation = { messageType: messageType.value, customMessage: customMessage.value, captureReason: reason.checked, allowEndInterruption: inter.checked };
    if (skipOn.checked) out.skipTurn = {};
    if (handOn.checked) out.requestHumanHandoff = handMessage.value ? { message: handMessage.value } : {};
    if (updOn.checked) out.updateState = { rules: parseJson(rules.value, "builtInTools.updateState.rules", []) };
    return out;
  };
  return section;
}

/** A list of binding cards with add/remove. */
function bindingList(items, opts) {
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

/** Mark the items of a compatibility report in place. */
function markIncompatible(form, paths) {
  form.querySelectorAll(".incompatible").forEach((e) => e.classList.remove("incompatible"));
  for (const p of paths) {
    const el = form.querySelector(`[data-path="${CSS.escape(p)}"]`);
    if (el) el.classList.add("incompatible");
  }
}

export async function assistantEditor(id) {
  const isNew = id === "new";
  const [a, tools, ifaces] = await Promise.all([
    isNew ? Promise.resolve({ name: "", systemPrompt: "", runMode: "pipeline", llm: {}, dynamicVariables: [], builtInTools: {}, toolBindings: [], startupActions: [], features: {} })
      : get(`/v1/assistants/${encodeURIComponent(id)}`),
    list("/v1/tools"),
    list("/v1/realtime-interfaces"),
  ]);
  const newId = text("", { placeholder: "optional" });
  const name = text(a.name);
  const description = text(a.description || "");
  const prompt = area(a.systemPrompt, { class: "prose", rows: 6, placeholder: "You help {{customer_name}} with orders." });
  const first = text(a.firstMessage || "", { placeholder: "Hi! How can I help?" });
  const provider = text(a.llm?.provider || "", { placeholder: "default" });
  const model = text(a.llm?.model || "", { placeholder: "provider default" });
  const temperature = h("input", { type: "number", step: "0.1", min: 0, max: 2, value: a.llm?.temperature ?? "" });
  const maxTokens = h("input", { type: "number", min: 1, value: a.llm?.maxTokens ?? "" });
  const runMode = select([["pipeline", "Pipeline (text model)"], ["realtime", "Realtime (speech-to-speech)"]], a.runMode);
  const iface = select([["", "— none —"], ...ifaces.map((i) => [i.id, i.name])], a.realtimeInterfaceId || "");
  const vars = variableRows(a.dynamicVariables || []);
  const variables = () => readVariables(vars).map((v) => v.name).filter(Boolean);
  const built = builtIns(a.builtInTools || {});
  const features = FEATURES.map(([k, label]) => [k, checkbox(label, a.features?.[k] !== false)]);
  const bindings = bindingList(a.toolBindings || [], { tools, variables, allowModel: true, prefix: "toolBindings", title: "Tool", addLabel: "Bind a tool" });
  const startup = bindingList(a.startupActions || [], { tools, variables, allowModel: false, prefix: "startupActions", title: "Startup tool", addLabel: "Add startup action" });
  const compat = h("div", { "aria-live": "polite" });

  const form = h("form", { "aria-label": "Assistant" },
    compat,
    h("fieldset", { class: "card" }, h("legend", {}, "Basics"),
      isNew ? field("Id", "id", newId) : null,
      h("div", { class: "row" }, field("Name", "name", name), field("Description", "description", description)),
      field("System prompt", "systemPrompt", prompt, "{{variable}} inserts a variable's current value at every turn."),
      field("First message", "firstMessage", first)),
    h("fieldset", { class: "card" }, h("legend", {}, "Model and run mode"),
      h("div", { class: "row" }, field("Provider", "llm.provider", provider), field("Model", "llm.model", model),
        field("Temperature", "llm.temperature", temperature), field("Max tokens", "llm.maxTokens", maxTokens)),
      h("div", { class: "row" }, field("Run mode", "runMode", runMode), field("Realtime interface", "realtimeInterfaceId", iface))),
    h("fieldset", { class: "card" }, h("legend", {}, "Dynamic variables"),
      h("div", { class: "field", dataset: { field: "dynamicVariables" } }, vars, h("p", { class: "error" }))),
    built,
    h("fieldset", { class: "card" }, h("legend", {}, "The model's own tools"),
      h("div", { class: "field", dataset: { field: "features" } }, features.map(([, [l]]) => l), h("p", { class: "error" }))),
    h("fieldset", { class: "card" }, h("legend", {}, "Tool bindings"),
      h("p", { class: "hint" }, "Each argument comes from the model, a variable, a fixed value or a template."),
      h("div", { class: "field", dataset: { field: "toolBindings" } }, bindings, h("p", { class: "error" }))),
    h("fieldset", { class: "card" }, h("legend", {}, "Startup actions"),
      h("p", { class: "hint" }, "Called before the first turn; their arguments cannot come from the model."),
      h("div", { class: "field", dataset: { field: "startupActions" } }, startup, h("p", { class: "error" }))),
    h("div", { class: "actions" }, h("button", { type: "submit" }, isNew ? "Create assistant" : "Save"),
      isNew ? null : h("a", { href: `#/playground?assistant=${encodeURIComponent(id)}` }, "Open in playground"),
      isNew ? null : h("button", { type: "button", class: "danger", onclick: remove }, "Delete")));

  async function showCompatibility() {
    if (isNew) return;
    const report = await get(`/v1/assistants/${encodeURIComponent(id)}/compatibility`);
    if (report.compatible) { compat.replaceChildren(); markIncompatible(form, []); return; }
    const paths = report.issues.map((i) => i.path);
    const clean = h("button", { type: "button", class: "danger" }, `Clean up ${paths.length} incompatible item${paths.length > 1 ? "s" : ""}`);
    clean.addEventListener("click", async () => {
      try {
        const done = await post(`/v1/assistants/${encodeURIComponent(id)}/compatibility/cleanup`, { expectedPaths: paths });
        toast(`Removed ${done.removed.length} incompatible item(s)`);
        if (stillOn(id)) assistantEditor(id);
      } catch (e) { showError(form, e); }
    });
    compat.replaceChildren(h("div", { class: "banner warn", role: "region", "aria-label": "Compatibility" },
      h("strong", {}, "Incompatible with the realtime interface. "), "Nothing is removed until you clean up:",
      h("ul", {}, report.issues.map((i) => h("li", {}, h("code", {}, i.path), ` — ${i.message}`))),
      h("div", { class: "actions" }, clean)));
    markIncompatible(form, paths);
  }

  function remove() { return removeResource({ form, collection: "/v1/assistants", route: "assistants", id, what: "assistant" }); }

  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    clearErrors(form);
    try {
      const out = {
        name: name.value.trim(), description: description.value, systemPrompt: prompt.value,
        runMode: runMode.value, llm: {}, dynamicVariables: readVariables(vars), builtInTools: built.read(),
        toolBindings: bindings.read(), startupActions: startup.read(),
        features: Object.fromEntries(features.map(([k, [, box]]) => [k, box.checked])),
      };
      if (isNew && newId.value.trim()) out.id = newId.value.trim();
      if (first.value) out.firstMessage = first.value;
      if (iface.value) out.realtimeInterfaceId = iface.value;
      if (provider.value.trim()) out.llm.provider = provider.value.trim();
      if (model.value.trim()) out.llm.model = model.value.trim();
      if (temperature.value !== "") out.llm.temperature = Number(temperature.value);
      if (maxTokens.value !== "") out.llm.maxTokens = Number(maxTokens.value);
      await saveResource({ collection: "/v1/assistants", route: "assistants", id, body: out, what: "Assistant", redraw: assistantEditor });
    } catch (e) {
      showError(form, e);
      if (e.code === "realtime_incompatible") {
        const m = /incompatible items: ([^)]*)\)/.exec(e.message);
        if (m) markIncompatible(form, m[1].split(", "));
      }
    }
  });
  page(isNew ? "New assistant" : `Assistant ${a.name}`, form);
  await showCompatibility();
}

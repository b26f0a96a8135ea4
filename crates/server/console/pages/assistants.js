// Assistants: prompt, model, variables, built-ins, LLM features, tool
// bindings with a source per argument, startup actions, run mode and
// realtime interface, a pipeline assistant's voice (assistant_voice.js) —
// and the compatibility report with explicit cleanup.

import { get, list, post, me } from "../api.js";
import { h, page, field, text, area, select, checkbox, showError, clearErrors, toast, stillOn, saveResource, removeResource, usageLine } from "../ui.js";
import { bindingList } from "../binding.js";
import { variableRows, readVariables } from "../variables.js";
import { builtInsSection } from "../builtins.js";
import { llmFields } from "../llm.js";
import { targetTabs } from "./tests.js";
import { voiceSection } from "./assistant_voice.js";

const FEATURES = [
  ["subAgents", "Sub-agents"], ["askUser", "Ask the user (askUser)"], ["todo", "Todo list (todoWrite)"],
  ["goals", "Goals"], ["loops", "Loops"], ["memory", "Memory"], ["webSearch", "Web search"], ["webFetch", "Web fetch"],
];

/** Families a server offers only when its operator configured them (`GET /v1/me`'s `server`). */
const CONFIGURED_BY = { webSearch: "RTC_WEB_SEARCH_ENGINES", webFetch: "RTC_WEB_FETCH" };

/**
 * The feature boxes: `[key, [label, box], saved]`. A family the server
 * does not offer is unticked and disabled with a note; its saved setting
 * (`saved`) is sent back unchanged, for a server that offers it.
 */
function featureBoxes(features, offers) {
  return FEATURES.map(([k, label]) => {
    if (!CONFIGURED_BY[k] || !offers || offers[k]) return [k, checkbox(label, features?.[k] !== false)];
    const saved = features?.[k];
    const [l, box] = checkbox(label, false, { disabled: true });
    l.append(h("span", { class: "hint" }, ` — not configured on this server (${CONFIGURED_BY[k]})`,
      saved === undefined ? "; on for this assistant once the server offers it" : `; this assistant's setting (${saved ? "on" : "off"}) is kept`));
    return [k, [l, box], saved];
  });
}

export async function assistantsPage() {
  const items = await list("/v1/assistants");
  page("Assistants",
    h("div", { class: "actions" }, h("a", { href: "#/assistants/new" }, h("button", { type: "button", tabindex: -1 }, "New assistant"))),
    items.length ? h("table", {}, h("thead", {}, h("tr", {}, h("th", {}, "Name"), h("th", {}, "Run mode"), h("th", {}, "Bindings"), h("th", {}, ""))),
      h("tbody", {}, items.map((a) => h("tr", {},
        h("td", {}, h("a", { href: `#/assistants/${encodeURIComponent(a.id)}` }, a.name)),
        h("td", {}, a.runMode, a.speech && a.runMode === "pipeline" ? [" ", h("span", { class: "pill" }, "voice")] : null),
        h("td", {}, String(a.toolBindings.length)),
        h("td", {}, h("a", { href: `#/playground?assistant=${encodeURIComponent(a.id)}` }, "Try in playground"))))))
      : h("p", { class: "muted" }, "No assistants yet. Create tools first if the assistant should call any."));
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
  const [a, tools, ifaces, backends, usage, who, speechIfaces] = await Promise.all([
    isNew ? Promise.resolve({ name: "", systemPrompt: "", runMode: "pipeline", llm: {}, dynamicVariables: [], builtInTools: {}, toolBindings: [], startupActions: [], features: {} })
      : get(`/v1/assistants/${encodeURIComponent(id)}`),
    list("/v1/tools"),
    list("/v1/realtime-interfaces"),
    list("/v1/task-backends"),
    isNew ? Promise.resolve(null) : get("/v1/usage").catch(() => null),
    me().catch(() => null),
    list("/v1/speech-interfaces").catch(() => []),
  ]);
  const used = usage?.byAssistant?.find((u) => u.assistantId === id)?.usage || { calls: 0, inputTokens: 0, outputTokens: 0, cachedTokens: 0 };
  const newId = text("", { placeholder: "optional" });
  const name = text(a.name);
  const description = text(a.description || "");
  const prompt = area(a.systemPrompt, { class: "prose", rows: 6, placeholder: "You help {{customer_name}} with orders." });
  const first = text(a.firstMessage || "", { placeholder: "Hi! How can I help?" });
  const llm = llmFields(a.llm, "llm", { inherit: { provider: "default" }, blankIsDefault: true });
  const runMode = select([["pipeline", "Pipeline (text model)"], ["realtime", "Realtime (speech-to-speech)"]], a.runMode);
  const iface = select([["", "— none —"], ...ifaces.map((i) => [i.id, i.name])], a.realtimeInterfaceId || "");
  const missing = a.taskBackendId && !backends.some((b) => b.id === a.taskBackendId) ? [[a.taskBackendId, `${a.taskBackendId} (not found)`]] : [];
  const taskBackend = select([["", "— none —"], ...backends.map((b) => [b.id, `${b.name} (${b.type})`]), ...missing], a.taskBackendId || "");
  const taskField = field("Task backend", "taskBackendId", taskBackend, " ");
  const syncTasks = () => {
    const realtime = runMode.value === "realtime";
    taskBackend.disabled = realtime;
    taskField.querySelector(".hint").textContent = realtime
      ? "Task backends work with pipeline assistants only: a realtime assistant cannot delegate tasks."
      : backends.length
        ? "The model gets delegate_task, get_task_status and cancel_task and hands long tasks to this backend."
        : "No task backends yet: create one on the Task backends page.";
  };
  runMode.addEventListener("change", syncTasks);
  syncTasks();
  const voice = voiceSection(a.speech, speechIfaces);
  runMode.addEventListener("change", () => voice.showFor(runMode.value));
  voice.showFor(runMode.value);
  const vars = variableRows(a.dynamicVariables || []);
  const variables = () => readVariables(vars).map((v) => v.name).filter(Boolean);
  const built = builtInsSection(a.builtInTools || {}, { variables: () => readVariables(vars).filter((v) => v.name) });
  const features = featureBoxes(a.features, who?.server);
  const bindings = bindingList(a.toolBindings || [], { tools, variables, allowModel: true, prefix: "toolBindings", title: "Tool", addLabel: "Bind a tool" });
  const startup = bindingList(a.startupActions || [], { tools, variables, allowModel: false, prefix: "startupActions", title: "Startup tool", addLabel: "Add startup action" });
  const compat = h("div", { "aria-live": "polite" });

  const form = h("form", { "aria-label": "Assistant" },
    compat,
    usage ? h("p", { class: "small", "aria-label": "Usage this month" }, `This month (${usage.from} to ${usage.to}): ${usageLine(used)}`) : null,
    h("fieldset", { class: "card" }, h("legend", {}, "Basics"),
      isNew ? field("Id", "id", newId) : null,
      h("div", { class: "row" }, field("Name", "name", name), field("Description", "description", description)),
      field("System prompt", "systemPrompt", prompt, "{{variable}} inserts a variable's current value at every turn."),
      field("First message", "firstMessage", first)),
    h("fieldset", { class: "card" }, h("legend", {}, "Model and run mode"),
      llm,
      h("div", { class: "row" }, field("Run mode", "runMode", runMode), field("Realtime interface", "realtimeInterfaceId", iface), taskField)),
    voice,
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
        runMode: runMode.value, llm: llm.read() || {}, dynamicVariables: readVariables(vars), builtInTools: built.read(),
        toolBindings: bindings.read(), startupActions: startup.read(),
        features: Object.fromEntries(features.map(([k, [, box], saved]) => [k, box.disabled ? saved : box.checked])),
      };
      if (isNew && newId.value.trim()) out.id = newId.value.trim();
      if (first.value) out.firstMessage = first.value;
      if (iface.value) out.realtimeInterfaceId = iface.value;
      const speech = runMode.value === "pipeline" ? voice.read() : undefined;
      if (speech) out.speech = speech;
      if (taskBackend.value && runMode.value !== "realtime") out.taskBackendId = taskBackend.value;
      await saveResource({ collection: "/v1/assistants", route: "assistants", id, body: out, what: "Assistant", redraw: assistantEditor });
    } catch (e) {
      showError(form, e);
      if (e.code === "realtime_incompatible") {
        const m = /incompatible items: ([^)]*)\)/.exec(e.message);
        if (m) markIncompatible(form, m[1].split(", "));
      }
    }
  });
  page(isNew ? "New assistant" : `Assistant ${a.name}`, isNew ? null : targetTabs("assistants", id, "settings"), form);
  await showCompatibility();
}

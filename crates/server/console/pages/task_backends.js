// Task backends: where a pipeline assistant hands long tasks — the built-in
// reasoner (its own model, prompt, step limit and HTTP/MCP tool bindings)
// or an OpenCode server (one the operator runs, or one rtc-agent starts).

import { get, list } from "../api.js";
import { h, page, field, text, area, select, showError, clearErrors, parseJson, saveResource, removeResource, assistantLinks } from "../ui.js";
import { bindingList } from "../binding.js";
import { llmFields } from "../llm.js";

const TYPES = [["reasoner", "Reasoner (built-in background agent)"], ["opencode", "OpenCode server"]];

/** What a backend runs on, for the list. */
function where(b) {
  if (b.type === "opencode") {
    const o = b.opencode || {};
    const server = o.baseUrl || (o.command ? `started: ${o.command}` : "");
    return `${server} · ${o.model?.providerID || "?"}/${o.model?.modelID || "?"}`;
  }
  const r = b.reasoner || {};
  const model = r.llm?.model || "the assistant's model";
  return `${model} · ${(r.toolBindings || []).length} tool(s)`;
}

export async function taskBackendsPage() {
  const items = await list("/v1/task-backends");
  page("Task backends",
    h("p", { class: "muted" }, "A pipeline assistant with a task backend can hand long tasks to it (delegate_task) and keeps talking meanwhile."),
    h("div", { class: "actions" }, h("a", { href: "#/task-backends/new" }, h("button", { type: "button", tabindex: -1 }, "New task backend"))),
    items.length ? h("table", {}, h("thead", {}, h("tr", {}, h("th", {}, "Name"), h("th", {}, "Type"), h("th", {}, "Runs on"), h("th", {}, "Limits"))),
      h("tbody", {}, items.map((b) => h("tr", {},
        h("td", {}, h("a", { href: `#/task-backends/${encodeURIComponent(b.id)}` }, b.name)),
        h("td", {}, h("span", { class: "pill" }, b.type)),
        h("td", { class: "small" }, where(b)),
        h("td", { class: "small" }, `${b.timeoutSeconds} s · ${b.maxConcurrentTasks} at once`)))))
      : h("p", { class: "muted" }, "No task backends yet."));
}

const json = (v) => (v === undefined || v === null ? "" : JSON.stringify(v, null, 2));

/** A number input; empty reads as undefined. */
const number = (value, attrs = {}) => h("input", { type: "number", value: value ?? "", ...attrs });
const readNumber = (input) => (input.value === "" ? undefined : Number(input.value));

/** The variable names a binding's `variable` source may pick: the
 * assistants' declared variables (a task reads its delegating session's)
 * and those the backend's bindings already use. */
function knownVariables(assistants, bindings) {
  const names = new Set();
  for (const a of assistants) for (const v of a.dynamicVariables || []) if (v.name) names.add(v.name);
  for (const b of bindings) {
    for (const src of [...Object.values(b.argumentBindings || {}), ...Object.values(b.templateBindings || {})]) {
      if (src?.source === "variable" && src.variableName && !src.variableName.startsWith("system__")) names.add(src.variableName);
    }
  }
  return [...names].sort();
}

function reasonerSection(r, { tools, variables }) {
  const llm = llmFields(r.llm, "reasoner.llm", { inherit: { provider: "the assistant's", model: "the assistant's" } });
  const prompt = area(r.systemPrompt || "", { class: "prose", rows: 5, placeholder: "You research questions thoroughly and answer with sources." });
  const maxSteps = number(r.maxSteps ?? 40, { min: 1, max: 200 });
  const usable = tools.filter((t) => t.type === "http" || t.type === "mcp");
  const bindings = bindingList(r.toolBindings || [], {
    tools: usable, variables, allowModel: true, results: false,
    prefix: "reasoner.toolBindings", title: "Tool", addLabel: "Bind a tool",
  });
  const section = h("fieldset", { class: "card" }, h("legend", {}, "Reasoner"),
    h("p", { class: "hint" }, "Empty model fields take the delegating assistant's."),
    llm,
    field("System prompt", "reasoner.systemPrompt", prompt),
    field("Most model calls per task", "reasoner.maxSteps", maxSteps, "1 to 200."),
    h("h3", {}, "Tool bindings"),
    h("p", { class: "hint" }, usable.length
      ? "HTTP and MCP tools only. A variable source reads the delegating session's variable when the task starts; a task never writes the conversation's variables."
      : "No HTTP or MCP tools in this workspace yet: the reasoner can only think."),
    h("div", { class: "field", dataset: { field: "reasoner.toolBindings" } }, bindings, h("p", { class: "error" })));
  section.read = () => {
    const out = { llm: llm.read() || {}, systemPrompt: prompt.value, toolBindings: bindings.read() };
    const steps = readNumber(maxSteps);
    if (steps !== undefined) out.maxSteps = steps;
    return out;
  };
  return section;
}

function opencodeSection(o, { secrets }) {
  const started = !!o.command && !o.baseUrl;
  const mode = select([["server", "An operator-run server (base URL)"], ["started", "Started by rtc-agent (command)"]], started ? "started" : "server", { "aria-label": "OpenCode server" });
  const baseUrl = text(o.baseUrl || "", { placeholder: "http://127.0.0.1:4096" });
  const refs = secrets.map((s) => `{{${s.name}}}`);
  if (o.password && !refs.includes(o.password)) refs.unshift(o.password);
  const password = select([["", "— no password —"], ...refs.map((r) => [r, r])], o.password || "");
  const command = text(o.command || "", { placeholder: "opencode" });
  const config = area(json(o.config), { rows: 8, placeholder: '{"provider": {"mine": {"npm": "@ai-sdk/openai-compatible", "options": {"baseURL": "…", "apiKey": "{{secret__llm_key}}"}, "models": {"m1": {}}}}}' });
  const providerID = text(o.model?.providerID || "", { placeholder: "anthropic" });
  const modelID = text(o.model?.modelID || "", { placeholder: "claude-sonnet-4" });
  const directory = text(o.directory || "", { placeholder: "/srv/work (optional)" });
  const agent = text(o.agent || "", { placeholder: "build (optional)" });
  const serverPart = h("div", {},
    field("Base URL", "opencode.baseUrl", baseUrl, "Where the operator's opencode serve listens."),
    field("Password", "opencode.password", password, secrets.length || o.password
      ? "A secret holding the server's password (HTTP Basic, user opencode)."
      : "No secrets yet: add one on the Secrets page to use a password."));
  const startedPart = h("div", {},
    h("p", { class: "banner warn" }, "Only the admin token may save a backend that starts a server; with a workspace key the save is refused."),
    field("Command", "opencode.command", command, "The opencode executable; rtc-agent runs opencode serve on a loopback port with its own HOME and a random password."),
    field("Configuration (JSON)", "opencode.config", config, "OpenCode's configuration for the started server; strings may use {{secret__name}}."));
  const sync = () => { serverPart.hidden = mode.value !== "server"; startedPart.hidden = mode.value !== "started"; };
  mode.addEventListener("change", sync);
  sync();
  const section = h("fieldset", { class: "card" }, h("legend", {}, "OpenCode"),
    field("Server", "", mode), serverPart, startedPart,
    h("div", { class: "row" }, field("Provider id", "opencode.model.providerID", providerID), field("Model id", "opencode.model.modelID", modelID)),
    h("div", { class: "row" }, field("Directory", "opencode.directory", directory, "An absolute path on the OpenCode server."), field("Agent", "opencode.agent", agent)));
  section.read = () => {
    const out = { model: { providerID: providerID.value.trim(), modelID: modelID.value.trim() } };
    if (mode.value === "server") {
      out.baseUrl = baseUrl.value.trim();
      if (password.value) out.password = password.value;
    } else {
      out.command = command.value.trim();
      const c = parseJson(config.value, "opencode.config", undefined);
      if (c !== undefined) out.config = c;
    }
    if (directory.value.trim()) out.directory = directory.value.trim();
    if (agent.value.trim()) out.agent = agent.value.trim();
    return out;
  };
  return section;
}

export async function taskBackendEditor(id) {
  const isNew = id === "new";
  const [b, tools, secrets, assistants] = await Promise.all([
    isNew ? Promise.resolve({ name: "", description: "", type: "reasoner", timeoutSeconds: 900, maxConcurrentTasks: 4 })
      : get(`/v1/task-backends/${encodeURIComponent(id)}`),
    list("/v1/tools"),
    list("/v1/secrets"),
    list("/v1/assistants"),
  ]);
  const names = knownVariables(assistants, b.reasoner?.toolBindings || []);
  const newId = text("", { placeholder: "optional, e.g. tb_research" });
  const name = text(b.name, { placeholder: "Research" });
  const description = text(b.description || "");
  const kind = select(TYPES, b.type);
  const timeout = number(b.timeoutSeconds, { min: 1, max: 86400 });
  const concurrency = number(b.maxConcurrentTasks, { min: 1, max: 64 });
  const reasoner = reasonerSection(b.reasoner || { maxSteps: 40 }, { tools, variables: () => names });
  const opencode = opencodeSection(b.opencode || {}, { secrets });
  const sync = () => { reasoner.hidden = kind.value !== "reasoner"; opencode.hidden = kind.value !== "opencode"; };
  kind.addEventListener("change", sync);
  sync();
  const users = assistants.filter((a) => !isNew && a.taskBackendId === id);
  // The server checks every limit and its error is shown at the field.
  const form = h("form", { "aria-label": "Task backend", novalidate: true },
    h("fieldset", { class: "card" }, h("legend", {}, "Basics"),
      isNew ? field("Id", "id", newId) : null,
      h("div", { class: "row" }, field("Name", "name", name), field("Type", "type", kind)),
      field("Description", "description", description),
      h("div", { class: "row" },
        field("Time limit per task (s)", "timeoutSeconds", timeout, "1 to 86,400."),
        field("Most tasks at once", "maxConcurrentTasks", concurrency, "In the whole workspace, 1 to 64.")),
      users.length ? h("p", { class: "hint" }, "Used by: ", assistantLinks(users)) : null),
    reasoner, opencode,
    h("div", { class: "actions" }, h("button", { type: "submit" }, isNew ? "Create task backend" : "Save"),
      isNew ? null : h("button", { type: "button", class: "danger", onclick: remove }, "Delete")));

  function remove() { return removeResource({ form, collection: "/v1/task-backends", route: "task-backends", id, what: "task backend" }); }
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    clearErrors(form);
    try {
      const out = { name: name.value.trim(), description: description.value, type: kind.value };
      if (isNew && newId.value.trim()) out.id = newId.value.trim();
      const t = readNumber(timeout);
      if (t !== undefined) out.timeoutSeconds = t;
      const c = readNumber(concurrency);
      if (c !== undefined) out.maxConcurrentTasks = c;
      if (kind.value === "reasoner") out.reasoner = reasoner.read();
      else out.opencode = opencode.read();
      await saveResource({ collection: "/v1/task-backends", route: "task-backends", id, body: out, what: "Task backend", redraw: taskBackendEditor });
    } catch (e) { showError(form, e); }
  });
  page(isNew ? "New task backend" : `Task backend ${b.name}`, form);
}

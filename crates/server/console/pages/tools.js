// Tool resources: HTTP (method, URL, headers, body, timeout), MCP (a tool
// picked from the server's discovered tools) and client tools (wait policy);
// a saved HTTP or MCP tool has a Test panel (tool_test.js).

import { get, list } from "../api.js";
import { h, page, field, text, area, select, checkbox, rows, showError, clearErrors, parseJson, saveResource, removeResource } from "../ui.js";
import { headerRows, readHeaders, discoveredTools } from "./mcp.js";
import { schemaEditor } from "../schema_builder.js";
import { mockEditor } from "../mock_editor.js";
import { toolTestPanel } from "./tool_test.js";

export async function toolsPage() {
  const tools = await list("/v1/tools");
  page("Tools",
    h("div", { class: "actions" }, h("a", { href: "#/tools/new" }, h("button", { type: "button", tabindex: -1 }, "New tool"))),
    tools.length ? h("table", {}, h("thead", {}, h("tr", {}, h("th", {}, "Name"), h("th", {}, "Type"), h("th", {}, "Description"))),
      h("tbody", {}, tools.map((t) => h("tr", {},
        h("td", {}, h("a", { href: `#/tools/${encodeURIComponent(t.id)}` }, t.name)),
        h("td", {}, h("span", { class: "pill" }, t.type)),
        h("td", { class: "small" }, t.description || "")))))
      : h("p", { class: "muted" }, "No tools yet."));
}

const json = (v) => (v === undefined || v === null ? "" : JSON.stringify(v, null, 2));

export async function toolEditor(id) {
  const isNew = id === "new";
  const t = isNew ? { name: "", description: "", type: "http", templateInputs: [] } : await get(`/v1/tools/${encodeURIComponent(id)}`);
  const servers = await list("/v1/mcp-servers");
  const newId = text("", { placeholder: "optional, e.g. tool_weather" });
  const name = text(t.name, { placeholder: "get_weather" });
  const description = area(t.description, { class: "prose", rows: 2 });
  const kind = select([["http", "HTTP request"], ["mcp", "MCP tool"], ["client", "Client tool"]], t.type);
  const parameters = schemaEditor(t.parameters);
  const inputs = rows({
    items: t.templateInputs || [],
    blank: () => ({ name: "", description: "", required: true }),
    addLabel: "Add template input",
    render: (inp, i) => {
      const [reqLabel] = checkbox("required", inp.required !== false, { class: "req" });
      return h("div", { class: "listrow" },
        field("Name", `templateInputs[${i}].name`, text(inp.name, { class: "n" })),
        field("Description", `templateInputs[${i}].description`, text(inp.description, { class: "d" })),
        reqLabel, h("span"));
    },
  });

  // HTTP
  const http = t.http || { method: "GET", url: "", headers: {}, timeoutMs: 10000 };
  const method = select(["GET", "POST", "PUT", "PATCH", "DELETE"], http.method);
  const url = text(http.url, { placeholder: "https://api.example.com/{{input__region}}/weather?city={{city}}" });
  const headers = headerRows(http.headers, "http.headers");
  const body = area(json(http.body), { rows: 5, placeholder: '{"city": "{{city}}"}' });
  const httpTimeout = h("input", { type: "number", min: 1, value: http.timeoutMs ?? 10000 });
  const httpPart = h("section", { "aria-label": "HTTP" },
    h("div", { class: "row" }, field("Method", "http.method", method), field("URL", "http.url", url, "{{param}} for parameters, {{input__name}} for template inputs.")),
    h("div", { class: "field", dataset: { field: "http.headers" } }, h("span", { class: "label" }, "Headers"), headers, h("p", { class: "hint" }, "Secrets go only in headers: {{secret__name}}."), h("p", { class: "error" })),
    field("Body (JSON)", "http.body", body), field("Timeout (ms)", "http.timeoutMs", httpTimeout));

  // MCP
  const mcp = t.mcp || { serverId: servers[0]?.id || "", remoteToolName: "" };
  const server = select([["", "— choose a server —"], ...servers.map((s) => [s.id, s.name])], mcp.serverId);
  const remote = select([[mcp.remoteToolName, mcp.remoteToolName || "— discover first —"]], mcp.remoteToolName);
  let discovered = [];
  const discoverBtn = h("button", { type: "button", class: "ghost" }, "Discover tools");
  const discoverNote = h("p", { class: "hint", "aria-live": "polite" });
  discoverBtn.addEventListener("click", async () => {
    discoverNote.textContent = "Asking the server…";
    try {
      discovered = await discoveredTools(server.value);
      const before = remote.value;
      remote.replaceChildren(...discovered.map((d) => h("option", { value: d.name }, d.name)));
      if (discovered.some((d) => d.name === before)) remote.value = before;
      discoverNote.textContent = `${discovered.length} tools found. Picking one copies its input schema (pinned).`;
      pick();
    } catch (e) { discoverNote.textContent = `${e.code}: ${e.message}`; }
  });
  // Name and description follow the picked tool while they are empty or
  // still hold what the last pick put there; once typed by hand (or saved
  // before), they are the user's and a pick leaves them alone.
  const picked = { name: null, description: null };
  const follow = (input, key, value) => {
    if (input.value && input.value !== picked[key]) return;
    input.value = value;
    picked[key] = value;
  };
  const pick = () => {
    const d = discovered.find((x) => x.name === remote.value);
    if (!d) return;
    parameters.set(d.inputSchema);
    follow(name, "name", d.name.replace(/[^A-Za-z0-9_-]/g, "_"));
    follow(description, "description", d.description || "");
  };
  remote.addEventListener("change", pick);
  const mcpPart = h("section", { "aria-label": "MCP" },
    h("div", { class: "row" }, field("MCP server", "mcp.serverId", server), h("div", { class: "field" }, discoverBtn)),
    field("Remote tool", "mcp.remoteToolName", remote), discoverNote);

  // Client
  const client = t.client || { functionName: "", waitForResponse: true, timeoutMs: 30000 };
  const fn = text(client.functionName, { placeholder: "showMap" });
  const [waitLabel, wait] = checkbox("Wait for the client's result", client.waitForResponse !== false);
  const clientTimeout = h("input", { type: "number", min: 1, value: client.timeoutMs ?? 30000 });
  const clientPart = h("section", { "aria-label": "Client" },
    field("Function name", "client.functionName", fn, "The function the host app declares over the WebSocket."),
    h("div", { class: "field", dataset: { field: "client.waitForResponse" } }, waitLabel, h("p", { class: "error" })),
    field("Timeout (ms)", "client.timeoutMs", clientTimeout));

  const mock = mockEditor(t.mockResponse, { variables: () => parameters.names() });

  const sync = () => { httpPart.hidden = kind.value !== "http"; mcpPart.hidden = kind.value !== "mcp"; clientPart.hidden = kind.value !== "client"; parameters.setReadOnly(kind.value === "mcp"); };
  kind.addEventListener("change", sync);
  sync();

  const form = h("form", { class: "card", "aria-label": "Tool" },
    isNew ? field("Id", "id", newId) : null,
    h("div", { class: "row" }, field("Name", "name", name, "What the model calls it."), field("Type", "type", kind)),
    field("Description", "description", description, "Tell the model when to use it."),
    parameters,
    h("div", { class: "field", dataset: { field: "templateInputs" } }, h("span", { class: "label" }, "Template inputs"), inputs, h("p", { class: "hint" }, "Values each assistant binds; used as {{input__name}}."), h("p", { class: "error" })),
    httpPart, mcpPart, clientPart,
    mock,
    h("div", { class: "actions" }, h("button", { type: "submit" }, isNew ? "Create tool" : "Save"),
      isNew ? null : h("button", { type: "button", class: "danger", onclick: remove }, "Delete")));

  function remove() { return removeResource({ form, collection: "/v1/tools", route: "tools", id, what: "tool" }); }
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    clearErrors(form);
    try {
      const out = { name: name.value.trim(), description: description.value, type: kind.value };
      if (isNew && newId.value.trim()) out.id = newId.value.trim();
      const params = parameters.read();
      if (params !== undefined) out.parameters = params;
      const mocked = mock.read();
      if (mocked !== undefined) out.mockResponse = mocked;
      out.templateInputs = inputs.rows().map((r) => ({ name: r.querySelector(".n").value.trim(), description: r.querySelector(".d").value, required: r.querySelector(".req").checked }));
      if (kind.value === "http") {
        out.http = { method: method.value, url: url.value.trim(), headers: readHeaders(headers), timeoutMs: Number(httpTimeout.value) };
        const b = parseJson(body.value, "http.body", undefined);
        if (b !== undefined) out.http.body = b;
      } else if (kind.value === "mcp") {
        out.mcp = { serverId: server.value, remoteToolName: remote.value };
      } else {
        out.client = { functionName: fn.value.trim(), waitForResponse: wait.checked, timeoutMs: Number(clientTimeout.value) };
      }
      await saveResource({ collection: "/v1/tools", route: "tools", id, body: out, what: "Tool", redraw: toolEditor });
    } catch (e) { showError(form, e); }
  });
  page(isNew ? "New tool" : `Tool ${t.name}`, form, isNew || t.type === "client" ? null : toolTestPanel(t, form));
  if (!isNew && t.type === "mcp" && t.mcp) pinnedNotice(t, form, parameters);
}

/// What changed between the schema a tool was pinned with and its
/// server's (the same words as the server's refusal, R-BX-7).
export function schemaChanges(pinned, current) {
  if (JSON.stringify(pinned) === JSON.stringify(current)) return [];
  const props = (s) => (s && s.properties) || {};
  const req = (s) => (s && s.required) || [];
  const [old, now, oldReq, nowReq] = [props(pinned), props(current), req(pinned), req(current)];
  const type = (s) => (s && s.type !== undefined ? (typeof s.type === "string" ? s.type : JSON.stringify(s.type)) : "any");
  const out = [];
  for (const [name, schema] of Object.entries(now)) {
    const before = old[name];
    if (!before) out.push(nowReq.includes(name) ? `parameter \`${name}\` added (required)` : `parameter \`${name}\` added`);
    else if (JSON.stringify(before.type) !== JSON.stringify(schema.type)) out.push(`parameter \`${name}\` changed type from ${type(before)} to ${type(schema)}`);
    else if (JSON.stringify(before) !== JSON.stringify(schema)) out.push(`parameter \`${name}\` changed`);
  }
  for (const name of Object.keys(old)) if (!(name in now)) out.push(`parameter \`${name}\` removed`);
  for (const name of nowReq) if (name in old && !oldReq.includes(name)) out.push(`parameter \`${name}\` became required`);
  for (const name of oldReq) if (name in now && !nowReq.includes(name)) out.push(`parameter \`${name}\` became optional`);
  return out.length ? out : ["other details of the schema changed"];
}

/// An MCP tool whose server now offers other parameters than the pinned
/// ones is refused until re-accepted: say what changed, offer the re-accept
/// (saving the tool pins the server's current schema).
async function pinnedNotice(t, form, parameters) {
  let found;
  try { found = (await discoveredTools(t.mcp.serverId)).find((d) => d.name === t.mcp.remoteToolName); } catch { return; }
  if (!found) {
    form.prepend(h("div", { class: "banner bad", role: "alert" }, `The MCP server no longer offers \`${t.mcp.remoteToolName}\`: calls of this tool fail.`));
    return;
  }
  const changes = schemaChanges(t.parameters, found.inputSchema);
  if (!changes.length) return;
  const accept = h("button", { type: "button" }, "Re-accept");
  accept.addEventListener("click", () => { parameters.set(found.inputSchema); form.requestSubmit(); });
  form.prepend(h("div", { class: "banner bad", role: "alert", dataset: { notice: "schema-changed" } },
    h("p", {}, "The MCP server changed this tool's parameters since it was saved; calls are refused until you re-accept them:"),
    h("ul", {}, changes.map((c) => h("li", {}, c))), accept));
}

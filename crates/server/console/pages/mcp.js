// MCP servers: transport, headers (secrets by reference) and tool discovery.

import { get, list } from "../api.js";
import { h, page, field, text, select, rows, showError, clearErrors, saveResource, removeResource } from "../ui.js";

export async function mcpPage() {
  const servers = await list("/v1/mcp-servers");
  page("MCP servers",
    h("div", { class: "actions" }, h("a", { href: "#/mcp/new" }, h("button", { type: "button", tabindex: -1 }, "New MCP server"))),
    servers.length ? h("table", {}, h("thead", {}, h("tr", {}, h("th", {}, "Name"), h("th", {}, "Transport"), h("th", {}, "Where"))),
      h("tbody", {}, servers.map((s) => h("tr", {},
        h("td", {}, h("a", { href: `#/mcp/${encodeURIComponent(s.id)}` }, s.name)),
        h("td", {}, s.transport.type),
        h("td", { class: "small" }, s.transport.url || [s.transport.command, ...(s.transport.args || [])].join(" "))))))
      : h("p", { class: "muted" }, "No MCP servers yet."));
}

/** Header rows: name → value (values may use {{secret__name}}). */
export function headerRows(headers, path) {
  return rows({
    items: Object.entries(headers || {}),
    blank: () => ["", ""],
    addLabel: "Add header",
    render: ([k, v]) => h("div", { class: "listrow kv" },
      field("Header", path, text(k, { class: "k" })),
      field("Value", path, text(v, { class: "v", placeholder: "Bearer {{secret__token}}" }))),
  });
}

export function readHeaders(box) {
  const out = {};
  for (const r of box.rows()) {
    const k = r.querySelector(".k").value.trim();
    if (k) out[k] = r.querySelector(".v").value;
  }
  return out;
}

export async function discoveredTools(id) {
  const body = await get(`/v1/mcp-servers/${encodeURIComponent(id)}/tools`);
  return (body && body.data) || [];
}

export async function mcpEditor(id) {
  const isNew = id === "new";
  const s = isNew ? { name: "", description: "", transport: { type: "streamableHttp", url: "", headers: {} } } : await get(`/v1/mcp-servers/${encodeURIComponent(id)}`);
  const name = text(s.name);
  const description = text(s.description);
  const kind = select([["streamableHttp", "Streamable HTTP"], ["stdio", "stdio (admin only)"]], s.transport.type);
  const url = text(s.transport.url, { placeholder: "https://mcp.example.com/mcp" });
  const headers = headerRows(s.transport.headers, "transport.headers");
  const command = text(s.transport.command);
  const args = text((s.transport.args || []).join(" "), { placeholder: "space-separated" });
  const timeout = text(s.timeoutSeconds == null ? "" : String(s.timeoutSeconds), { type: "number", min: "1", max: "600", placeholder: "60" });
  const httpPart = h("div", {}, field("URL", "transport.url", url), h("div", { class: "field", dataset: { field: "transport.headers" } }, h("span", { class: "label" }, "Headers"), headers, h("p", { class: "error" })));
  const stdioPart = h("div", {}, field("Command", "transport.command", command), field("Arguments", "transport.args", args));
  const sync = () => { httpPart.hidden = kind.value !== "streamableHttp"; stdioPart.hidden = kind.value !== "stdio"; };
  kind.addEventListener("change", sync);
  sync();
  const found = h("div", { "aria-live": "polite" });
  const form = h("form", { class: "card", "aria-label": "MCP server" },
    field("Name", "name", name), field("Description", "description", description),
    field("Transport", "transport.type", kind), httpPart, stdioPart,
    field("Call timeout (seconds)", "timeoutSeconds", timeout),
    h("div", { class: "actions" },
      h("button", { type: "submit" }, isNew ? "Create" : "Save"),
      isNew ? null : h("button", { type: "button", class: "ghost", onclick: discover }, "Discover tools"),
      isNew ? null : h("button", { type: "button", class: "danger", onclick: remove }, "Delete")),
    found);
  async function discover() {
    found.replaceChildren(h("p", { class: "muted" }, "Asking the server…"));
    try {
      const tools = await discoveredTools(id);
      found.replaceChildren(h("h2", {}, `${tools.length} tools`), h("ul", {}, tools.map((t) => h("li", {}, h("code", {}, t.name), " ", h("span", { class: "muted small" }, t.description || "")))));
    } catch (e) {
      found.replaceChildren(h("div", { class: "banner bad", role: "alert" }, `${e.code}: ${e.message}`));
    }
  }
  function remove() { return removeResource({ form, collection: "/v1/mcp-servers", route: "mcp", id, what: "MCP server" }); }
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    clearErrors(form);
    const transport = kind.value === "stdio"
      ? { type: "stdio", command: command.value.trim(), args: args.value.split(/\s+/).filter(Boolean) }
      : { type: "streamableHttp", url: url.value.trim(), headers: readHeaders(headers) };
    const body = { name: name.value.trim(), description: description.value, transport };
    if (timeout.value.trim()) body.timeoutSeconds = Number(timeout.value);
    try {
      await saveResource({ collection: "/v1/mcp-servers", route: "mcp", id, body: body, what: "MCP server", redraw: mcpEditor });
    } catch (e) { showError(form, e); }
  });
  page(isNew ? "New MCP server" : `MCP server ${s.name}`, form);
}

// Realtime interfaces: what a realtime model can use as prompt tools.

import { get, list } from "../api.js";
import { h, page, field, text, checkbox, showError, clearErrors, saveResource, removeResource } from "../ui.js";

const TOOL_TYPES = ["http", "mcp", "client"];
const BUILT_INS = ["endConversation", "updateState", "requestHumanHandoff"];

export async function realtimePage() {
  const items = await list("/v1/realtime-interfaces");
  page("Realtime interfaces",
    h("p", { class: "muted" }, "A realtime assistant may only use the tool types and built-ins its interface declares. Changing an interface never edits assistants: they list the items that became incompatible until you clean them up."),
    h("div", { class: "actions" }, h("a", { href: "#/realtime/new" }, h("button", { type: "button", tabindex: -1 }, "New interface"))),
    h("table", {}, h("thead", {}, h("tr", {}, h("th", {}, "Name"), h("th", {}, "Tool types"), h("th", {}, "Built-ins"), h("th", {}, ""))),
      h("tbody", {}, items.map((i) => {
        const p = i.fieldSchema.features.realtimePromptTools;
        return h("tr", {},
          h("td", {}, h("a", { href: `#/realtime/${encodeURIComponent(i.id)}` }, i.name)),
          h("td", {}, p.toolTypes.join(", ") || "none"),
          h("td", {}, p.builtInTools.join(", ") || "none"),
          h("td", {}, i.shipped ? h("span", { class: "pill" }, "shipped") : ""));
      }))));
}

export async function realtimeEditor(id) {
  const isNew = id === "new";
  const iface = isNew
    ? { name: "", provider: "", fieldSchema: { features: { realtimePromptTools: { toolTypes: [], builtInTools: [] } } } }
    : await get(`/v1/realtime-interfaces/${encodeURIComponent(id)}`);
  const prompt = iface.fieldSchema.features.realtimePromptTools;
  const newId = text("", { placeholder: "acme-realtime" });
  const name = text(iface.name);
  const provider = text(iface.provider);
  const types = TOOL_TYPES.map((t) => [t, checkbox(t, prompt.toolTypes.includes(t))]);
  const builtIns = BUILT_INS.map((b) => [b, checkbox(b, prompt.builtInTools.includes(b))]);
  const ro = !!iface.shipped;
  const form = h("form", { class: "card", "aria-label": "Realtime interface" },
    ro ? h("div", { class: "banner warn" }, "Shipped interfaces are read-only.") : null,
    isNew ? field("Id (optional)", "id", newId) : null,
    field("Name", "name", name), field("Provider", "provider", provider),
    h("fieldset", { class: "field", dataset: { field: "fieldSchema.features.realtimePromptTools.toolTypes" } }, h("legend", {}, "Tool types it can call"), types.map(([, [l]]) => l), h("p", { class: "error" })),
    h("fieldset", { class: "field", dataset: { field: "fieldSchema.features.realtimePromptTools.builtInTools" } }, h("legend", {}, "Built-in tools it supports"), builtIns.map(([, [l]]) => l), h("p", { class: "error" })),
    ro ? null : h("div", { class: "actions" }, h("button", { type: "submit" }, isNew ? "Create" : "Save"),
      isNew ? null : h("button", { type: "button", class: "danger", onclick: remove }, "Delete")));
  if (ro) form.querySelectorAll("input").forEach((i) => { i.disabled = true; });
  function remove() { return removeResource({ form, collection: "/v1/realtime-interfaces", route: "realtime", id, what: "interface" }); }
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    clearErrors(form);
    const body = structuredClone(iface);
    delete body.shipped; delete body.createdAt; delete body.updatedAt;
    if (isNew) { delete body.id; if (newId.value.trim()) body.id = newId.value.trim(); }
    body.name = name.value.trim();
    body.provider = provider.value.trim();
    body.fieldSchema.features.realtimePromptTools = {
      toolTypes: types.filter(([, [, box]]) => box.checked).map(([t]) => t),
      builtInTools: builtIns.filter(([, [, box]]) => box.checked).map(([b]) => b),
    };
    try {
      await saveResource({ collection: "/v1/realtime-interfaces", route: "realtime", id, body: body, what: "Realtime interface", redraw: realtimeEditor });
    } catch (e) { showError(form, e); }
  });
  page(isNew ? "New realtime interface" : `Realtime interface ${iface.name}`, form);
}

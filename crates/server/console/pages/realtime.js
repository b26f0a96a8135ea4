// Realtime interfaces: what a realtime model can use as prompt tools, and
// how its sessions reach the provider (dialect, URL, model, voice, rates,
// the API key as a {{secret__…}} reference, turn detection).

import { get, list } from "../api.js";
import { h, page, field, text, select, checkbox, showError, clearErrors, saveResource, removeResource } from "../ui.js";

const TOOL_TYPES = ["http", "mcp", "client"];
const BUILT_INS = ["endConversation", "updateState", "requestHumanHandoff"];
const DIALECTS = [["openai", "OpenAI Realtime (GA)"], ["qwen", "Qwen Omni realtime (DashScope)"], ["stepfun", "StepFun realtime"]];
const DEFAULT_RATES = { openai: "24000 / 24000", qwen: "16000 / 24000", stepfun: "24000 / 24000" };
const SECRET_REFERENCE = /^\{\{\s*secret__[A-Za-z0-9_]+\s*\}\}$/;
const TURN_DETECTION = [["server_vad", "the provider's voice activity detection"], ["semantic_vad", "semantic (the model judges the end of the turn)"], ["none", "none: the host commits the audio"]];

/**
 * The connection's fields; `read()` gives the `connection` object back
 * (null when the interface does not connect). Numbers left empty are
 * omitted, so the dialect's defaults apply.
 */
function connectionFields(conn, readOnly) {
  const td = (conn && conn.turnDetection) || { type: "server_vad" };
  const [enabledLabel, enabled] = checkbox("Sessions connect through this interface", !!conn);
  const dialect = select(DIALECTS, conn ? conn.dialect : "openai");
  const url = text(conn?.url, { placeholder: "wss://…/realtime" });
  const model = text(conn?.model);
  const voice = text(conn?.voice, { placeholder: "the provider's default" });
  const num = (v, attrs) => h("input", { type: "number", value: v ?? "", ...attrs });
  const inputRate = num(conn?.inputRate, { min: 8000, max: 48000, step: 1000 });
  const outputRate = num(conn?.outputRate, { min: 8000, max: 48000, step: 1000 });
  const apiKey = text(conn?.apiKey, { placeholder: "{{secret__provider_api_key}}", autocomplete: "off" });
  const transcription = text(conn?.transcriptionModel, { placeholder: "the dialect's default" });
  const tdType = select(TURN_DETECTION, td.type, { "aria-label": "Turn detection" });
  const threshold = num(td.threshold, { min: 0, max: 1, step: 0.05 });
  const padding = num(td.prefixPaddingMs, { min: 0, max: 5000, step: 50 });
  const silence = num(td.silenceDurationMs, { min: 100, max: 10000, step: 50 });
  const eagerness = select([["", "default"], "low", "medium", "high", "auto"], td.eagerness || "");
  const vadBox = h("div", { class: "row" },
    field("Threshold (0–1)", "connection.turnDetection.threshold", threshold),
    field("Prefix padding (ms)", "connection.turnDetection.prefixPaddingMs", padding),
    field("Silence to end a turn (ms)", "connection.turnDetection.silenceDurationMs", silence));
  const semanticBox = h("div", { class: "row" }, field("Eagerness", "connection.turnDetection.eagerness", eagerness));
  const rateHint = h("p", { class: "hint" });
  const details = h("div", {},
    h("div", { class: "row" }, field("Dialect", "connection.dialect", dialect), field("Model", "connection.model", model), field("Voice", "connection.voice", voice)),
    field("URL", "connection.url", url, "The model is added as the model query parameter."),
    field("API key", "connection.apiKey", apiKey, "A {{secret__name}} reference to a secret set on the Secrets page — never the key itself."),
    h("div", { class: "row" },
      field("Input rate (Hz)", "connection.inputRate", inputRate),
      field("Output rate (Hz)", "connection.outputRate", outputRate),
      field("Transcription model", "connection.transcriptionModel", transcription)),
    rateHint,
    field("Turn detection", "connection.turnDetection.type", tdType),
    vadBox, semanticBox);
  const sync = () => {
    details.hidden = !enabled.checked;
    // `.row` is a flex box, which the hidden attribute does not override.
    vadBox.style.display = tdType.value === "server_vad" ? "" : "none";
    semanticBox.style.display = tdType.value === "semantic_vad" ? "" : "none";
    rateHint.textContent = `PCM16 mono. Empty: the dialect's rates (${DEFAULT_RATES[dialect.value]} Hz, input / output).`;
  };
  [enabled, dialect, tdType].forEach((el) => el.addEventListener("change", sync));
  sync();
  const element = h("fieldset", { class: "field", dataset: { field: "connection" } },
    h("legend", {}, "Connection"), enabledLabel, details, h("p", { class: "error" }));
  if (readOnly) element.querySelectorAll("input, select").forEach((i) => { i.disabled = true; });
  const numberOf = (input) => (input.value.trim() === "" ? undefined : Number(input.value));
  const optional = (input) => input.value.trim() || undefined;
  function read() {
    if (!enabled.checked) return null;
    // A key typed here would be stored in the clear: only a reference.
    if (!SECRET_REFERENCE.test(apiKey.value.trim())) {
      const err = new Error("Give the API key as a {{secret__name}} reference to a secret, not the key itself.");
      err.code = "invalid_secret_reference";
      err.field = "connection.apiKey";
      throw err;
    }
    let turnDetection = { type: tdType.value };
    if (tdType.value === "server_vad") {
      turnDetection = { ...turnDetection, threshold: numberOf(threshold), prefixPaddingMs: numberOf(padding), silenceDurationMs: numberOf(silence) };
    } else if (tdType.value === "semantic_vad") {
      turnDetection.eagerness = eagerness.value || undefined;
    }
    // JSON.stringify drops the undefined members.
    return JSON.parse(JSON.stringify({
      dialect: dialect.value, url: url.value.trim(), model: model.value.trim(), voice: optional(voice),
      inputRate: numberOf(inputRate), outputRate: numberOf(outputRate), apiKey: apiKey.value.trim(),
      turnDetection, transcriptionModel: optional(transcription),
    }));
  }
  return { element, read };
}

export async function realtimePage() {
  const items = await list("/v1/realtime-interfaces");
  page("Realtime interfaces",
    h("p", { class: "muted" }, "A realtime assistant may only use the tool types and built-ins its interface declares. Changing an interface never edits assistants: they list the items that became incompatible until you clean them up."),
    h("div", { class: "actions" }, h("a", { href: "#/realtime/new" }, h("button", { type: "button", tabindex: -1 }, "New interface"))),
    h("table", {}, h("thead", {}, h("tr", {}, h("th", {}, "Name"), h("th", {}, "Connection"), h("th", {}, "Tool types"), h("th", {}, "Built-ins"), h("th", {}, ""))),
      h("tbody", {}, items.map((i) => {
        const p = i.fieldSchema.features.realtimePromptTools;
        return h("tr", {},
          h("td", {}, h("a", { href: `#/realtime/${encodeURIComponent(i.id)}` }, i.name)),
          h("td", {}, i.connection ? `${i.connection.dialect} · ${i.connection.model}` : h("span", { class: "muted" }, "not configured")),
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
  const connection = connectionFields(iface.connection, ro);
  const form = h("form", { class: "card", "aria-label": "Realtime interface" },
    ro ? h("div", { class: "banner warn" }, "Shipped interfaces are read-only.") : null,
    isNew ? field("Id (optional)", "id", newId) : null,
    field("Name", "name", name), field("Provider", "provider", provider),
    h("fieldset", { class: "field", dataset: { field: "fieldSchema.features.realtimePromptTools.toolTypes" } }, h("legend", {}, "Tool types it can call"), types.map(([, [l]]) => l), h("p", { class: "error" })),
    h("fieldset", { class: "field", dataset: { field: "fieldSchema.features.realtimePromptTools.builtInTools" } }, h("legend", {}, "Built-in tools it supports"), builtIns.map(([, [l]]) => l), h("p", { class: "error" })),
    connection.element,
    ro ? null : h("div", { class: "actions" }, h("button", { type: "submit" }, isNew ? "Create" : "Save"),
      isNew ? null : h("button", { type: "button", class: "danger", onclick: remove }, "Delete")));
  if (ro) form.querySelectorAll("input, select").forEach((i) => { i.disabled = true; });
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
      const conn = connection.read();
      if (conn) body.connection = conn; else delete body.connection;
      await saveResource({ collection: "/v1/realtime-interfaces", route: "realtime", id, body: body, what: "Realtime interface", redraw: realtimeEditor });
    } catch (e) { showError(form, e); }
  });
  page(isNew ? "New realtime interface" : `Realtime interface ${iface.name}`, form);
}

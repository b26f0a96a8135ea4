// The model of an assistant, a workflow or one of its stages, or a
// reasoner: the provider picked from the server's (`GET /v1/providers`),
// the model from what that provider names (its default and small model)
// or typed by hand ("another model…": providers do not list their
// models), temperature and max tokens.

import { list } from "./api.js";
import { h, field, text, select } from "./ui.js";

/** The model option that shows the box for a name typed by hand. */
const OTHER = " other";

/** The server's providers, asked once per page load (server-wide). */
let known = null;
function providers() {
  if (!known) known = list("/v1/providers").catch(() => { known = null; return []; });
  return known;
}

/**
 * The fields; `read()` gives `llm`, or undefined when all are empty.
 * `inherit`: what an empty provider and model mean, e.g. `{provider:
 * "the server's default", model: "the provider's default"}`; with
 * `blankIsDefault` the empty provider is the provider named `default`,
 * which is then not listed twice.
 */
export function llmFields(llm, path, { inherit = {}, blankIsDefault = false } = {}) {
  const saved = { provider: llm?.provider || "", model: llm?.model || "" };
  const provider = select([["", inherit.provider || "— default —"], ...(saved.provider ? [[saved.provider, saved.provider]] : [])], saved.provider);
  const model = select([["", inherit.model || "— default —"]], "");
  const typed = text(saved.model, { placeholder: "model name, e.g. gpt-4o", "aria-label": "Model name", spellcheck: "false" });
  const temperature = h("input", { type: "number", step: "0.1", min: 0, max: 2, value: llm?.temperature ?? "" });
  const maxTokens = h("input", { type: "number", min: 1, value: llm?.maxTokens ?? "" });
  // The name typed by hand sits beside the select, which keeps the label.
  const modelField = field("Model", `${path}.model`, model);
  const pick = h("div", { class: "model-pick" });
  model.replaceWith(pick);
  pick.append(model, typed);
  let offered = [];
  let chosen = saved.model;

  /** The models the chosen provider names, the chosen one kept. */
  const fillModels = () => {
    const p = offered.find((x) => x.name === (provider.value || "default"));
    const names = [...new Set([p?.defaultModel, p?.smallModel].filter(Boolean))];
    const blank = inherit.model || (p ? `the provider's default (${p.defaultModel})` : "the provider's default");
    model.replaceChildren(...[["", blank], ...names.map((n) => [n, n]), [OTHER, "another model…"]]
      .map(([v, l]) => h("option", { value: v }, l)));
    model.value = !chosen ? "" : names.includes(chosen) ? chosen : OTHER;
    if (model.value === OTHER) typed.value = chosen;
    typed.hidden = model.value !== OTHER;
  };
  model.addEventListener("change", () => {
    typed.hidden = model.value !== OTHER;
    chosen = typed.hidden ? model.value : typed.value.trim();
    if (!typed.hidden) typed.focus();
  });
  typed.addEventListener("input", () => { chosen = typed.value.trim(); });
  provider.addEventListener("change", fillModels);
  fillModels();
  providers().then((found) => {
    offered = found;
    const current = provider.value;
    const shown = found.filter((p) => !(blankIsDefault && p.name === "default" && current !== "default"));
    const missing = current && !found.some((p) => p.name === current) ? [[current, found.length ? `${current} (not on this server)` : current]] : [];
    provider.replaceChildren(...[["", inherit.provider || "— default —"],
      ...shown.map((p) => [p.name, `${p.name}${p.ready ? "" : " (not ready)"}`]), ...missing]
      .map(([v, l]) => h("option", { value: v }, l)));
    provider.value = current;
    fillModels();
  });

  const el = h("div", { class: "row" }, field("Provider", `${path}.provider`, provider), modelField,
    field("Temperature", `${path}.temperature`, temperature), field("Max tokens", `${path}.maxTokens`, maxTokens));
  el.read = () => {
    const out = {};
    if (provider.value) out.provider = provider.value;
    if (chosen) out.model = chosen;
    if (temperature.value !== "") out.temperature = Number(temperature.value);
    if (maxTokens.value !== "") out.maxTokens = Number(maxTokens.value);
    return Object.keys(out).length ? out : undefined;
  };
  return el;
}

// The server's model providers: base URL (credentials masked), models,
// whether a key is set, what is missing, and a check that sends one short
// request and shows the latency or the provider's error.

import { list, post } from "../api.js";
import { h, page } from "../ui.js";

export async function providersPage() {
  const providers = await list("/v1/providers");
  page("Model providers",
    h("p", { class: "hint" }, "Providers are set in the server's configuration (RTC_LLM_* for the default, [providers.NAME] in the config file); assistants pick one with llm.provider."),
    h("table", { "aria-label": "Providers" },
      h("thead", {}, h("tr", {}, h("th", {}, "Name"), h("th", {}, "Base URL"), h("th", {}, "Model"), h("th", {}, "Small model"), h("th", {}, "API key"), h("th", {}, "Status"), h("th", {}, ""))),
      h("tbody", {}, providers.map((p) => {
        const result = h("td", { class: "check", "aria-live": "polite" },
          p.ready ? h("span", { class: "pill" }, "not checked") : h("span", { class: "pill bad", title: p.problem }, "not ready"));
        const check = h("button", { type: "button", class: "small" }, "Check");
        check.addEventListener("click", async () => {
          check.disabled = true;
          result.replaceChildren(h("span", { class: "muted" }, "checking…"));
          try {
            const c = await post(`/v1/providers/${encodeURIComponent(p.name)}/check`);
            result.replaceChildren(c.ok
              ? h("span", { class: "pill ok" }, `answers · ${c.latencyMs} ms`)
              : h("span", { class: "pill bad" }, "error"), c.ok ? "" : ` ${c.error}`);
          } catch (e) { result.replaceChildren(`${e.code}: ${e.message}`); }
          check.disabled = false;
        });
        return h("tr", { dataset: { provider: p.name } },
          h("td", {}, p.name, p.isDefault ? h("span", { class: "muted" }, " (default)") : ""),
          h("td", {}, h("code", {}, p.baseUrl)), h("td", {}, p.defaultModel), h("td", {}, p.smallModel || "—"),
          h("td", {}, p.apiKeySet ? "set" : "none"), result,
          h("td", {}, check, p.problem ? h("p", { class: "hint" }, p.problem) : null));
      }))));
}

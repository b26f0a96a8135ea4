// Secrets: write-only values; only names and times come back.

import { list, put, del } from "../api.js";
import { h, page, field, text, showError, clearErrors, toast, formatTime } from "../ui.js";

export async function secretsPage() {
  const secrets = await list("/v1/secrets");
  const name = text("", { placeholder: "secret__api_key", autocomplete: "off" });
  const value = h("input", { type: "password", autocomplete: "new-password" });
  const form = h("form", { class: "card", "aria-label": "Set a secret" },
    h("h2", {}, "Set a secret"),
    h("div", { class: "row" },
      field("Name", "name", name, "Starts with secret__; used as {{secret__name}} in HTTP headers."),
      field("Value", "value", value, "Write-only: it is never shown again.")),
    h("div", { class: "actions" }, h("button", { type: "submit" }, "Save secret")));
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    clearErrors(form);
    try {
      await put(`/v1/secrets/${encodeURIComponent(name.value.trim())}`, { value: value.value });
      toast(`Secret ${name.value.trim()} saved`);
      secretsPage();
    } catch (e) {
      showError(form, e.field ? e : { code: e.code, message: e.message, field: "name" });
    }
  });
  const rows = secrets.map((s) => h("tr", {},
    h("td", {}, h("code", {}, s.name)),
    h("td", {}, formatTime(s.updatedAt)),
    h("td", {}, h("button", { type: "button", class: "danger", onclick: async () => {
      if (!confirm(`Delete secret ${s.name}?`)) return;
      try { await del(`/v1/secrets/${encodeURIComponent(s.name)}`); toast("Deleted"); secretsPage(); }
      catch (e) { toast(`${e.code}: ${e.message}`); }
    } }, "Delete"))));
  page("Secrets", form,
    secrets.length ? h("table", {}, h("thead", {}, h("tr", {}, h("th", {}, "Name"), h("th", {}, "Updated"), h("th", {}, ""))), h("tbody", {}, rows))
      : h("p", { class: "muted" }, "No secrets yet."));
}

// The tool editor's Test panel: run a saved HTTP or MCP tool once with
// sample arguments (`POST /v1/tools/{id}/test`, as a session would call
// it: the outbound guard, its secrets revealed and scrubbed from the
// answer) and show what it answered, or the error the model would read.

import { post } from "../api.js";
import { h, field, area, parseJson, showError, clearErrors } from "../ui.js";

/** A sample value of a JSON schema: its default, first example or enum
 * value, else an empty value of its type (an object's properties filled). */
export function sampleOf(schema) {
  if (!schema || typeof schema !== "object") return null;
  if (schema.default !== undefined) return schema.default;
  if (Array.isArray(schema.examples) && schema.examples.length) return schema.examples[0];
  if (Array.isArray(schema.enum) && schema.enum.length) return schema.enum[0];
  const type = Array.isArray(schema.type) ? schema.type.find((t) => t !== "null") : schema.type;
  switch (type) {
    case "string": return "";
    case "number": case "integer": return 0;
    case "boolean": return false;
    case "array": return [];
    case "object": return Object.fromEntries(Object.entries(schema.properties || {}).map(([k, s]) => [k, sampleOf(s)]));
    default: return schema.properties ? sampleOf({ ...schema, type: "object" }) : null;
  }
}

/** What a test answered: ✓ and the result, or ✗ and the error. */
function answerView(r) {
  const took = `${r.durationMs} ms`;
  return h("div", { class: `tool-test-answer ${r.ok ? "ok" : "bad"}`, dataset: { ok: String(r.ok) } },
    h("p", {}, h("span", { class: `pill ${r.ok ? "ok" : "bad"}` }, r.ok ? "✓ answered" : "✗ failed"), ` in ${took}`,
      r.images ? ` · ${r.images} image${r.images > 1 ? "s" : ""} (not shown)` : ""),
    r.ok
      ? h("pre", { class: "tool-test-result", "aria-label": "Result" }, typeof r.result === "string" ? r.result : JSON.stringify(r.result ?? null, null, 2))
      : h("p", { class: "task-error", "aria-label": "Error" }, h("code", {}, r.error?.code || "error"), `: ${r.error?.message || ""}`));
}

/**
 * The panel for saved tool `t`; `form` is its editor, whose unsaved
 * changes a test does not see (said beside the button).
 */
export function toolTestPanel(t, form) {
  const args = area(JSON.stringify(sampleOf(t.parameters || { type: "object" }) || {}, null, 2), { rows: 5, class: "code", spellcheck: "false" });
  const inputs = area(JSON.stringify(Object.fromEntries((t.templateInputs || []).map((i) => [i.name, ""])), null, 2), { rows: 3, class: "code", spellcheck: "false" });
  const run = h("button", { type: "button" }, "Test");
  const unsaved = h("span", { class: "status", role: "status" });
  const answer = h("div", { "aria-live": "polite" });
  const panel = h("section", { class: "card tool-test", "aria-label": "Test the tool" }, h("h2", {}, "Test"),
    h("p", { class: "hint" }, "Runs the saved tool once, as a session would: the outbound guard applies, secrets are filled in and scrubbed from the answer."),
    field("Sample arguments (JSON)", "arguments", args, "Prefilled from the parameters' schema."),
    (t.templateInputs || []).length ? field("Template inputs (JSON)", "inputs", inputs, "What a binding would give each {{input__name}}.") : null,
    h("div", { class: "actions" }, run, unsaved), answer);
  const changed = () => { unsaved.textContent = "The test runs the tool as saved: save your changes first."; };
  form.addEventListener("input", changed);
  form.addEventListener("change", changed);
  run.addEventListener("click", async () => {
    clearErrors(panel);
    run.disabled = true;
    answer.replaceChildren(h("p", { class: "muted" }, "Running…"));
    try {
      const body = { arguments: parseJson(args.value, "arguments", {}) };
      if ((t.templateInputs || []).length) body.inputs = parseJson(inputs.value, "inputs", {});
      answer.replaceChildren(answerView(await post(`/v1/tools/${encodeURIComponent(t.id)}/test`, body)));
    } catch (e) {
      answer.replaceChildren();
      showError(panel, e);
    }
    run.disabled = false;
  });
  return panel;
}

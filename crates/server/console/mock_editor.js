// A tool's mock response (R-BX-10), what it answers in test mode: none,
// the same answer for every call (JSON, checked as it is typed), or
// answers by case: a `when` expression over the call's arguments and the
// answer; the first true case answers and one without `when` is the
// default. Switching between the two keeps what was written: cases become
// their JSON list (which the server reads as cases), a JSON list of cases
// becomes rows again.

import { h, field, select, rows, showError } from "./ui.js";
import { exprField } from "./expr.js";

const pretty = (v) => (v === undefined ? "" : JSON.stringify(v, null, 2));

/** Whether the server reads `v` as cases (mock_rules.rs, `is_case_list`). */
export function isCaseList(v) {
  return Array.isArray(v) && v.length > 0 && v.every((c) => c !== null && typeof c === "object" && !Array.isArray(c)
    && "response" in c && Object.keys(c).every((k) => k === "when" || k === "response"));
}

/**
 * A JSON text area in a labelled field that says, as it is typed, whether
 * its text is valid JSON. `read()` gives the value (undefined when empty)
 * or throws an error naming `path`.
 */
export function jsonField(label, path, value, { hint, rows: lines = 4, placeholder } = {}) {
  const input = h("textarea", { rows: lines, class: "code", spellcheck: "false", placeholder }, pretty(value));
  const status = h("p", { class: "hint json-status", "aria-live": "polite" });
  const check = () => {
    if (!input.value.trim()) { status.textContent = ""; status.classList.remove("warn"); return; }
    try {
      JSON.parse(input.value);
      status.textContent = "✓ valid JSON";
      status.classList.remove("warn");
    } catch (e) {
      status.textContent = `✗ not valid JSON: ${e.message}`;
      status.classList.add("warn");
    }
  };
  input.addEventListener("input", check);
  // Pretty-printed again once the text is valid and the user moves on.
  input.addEventListener("change", () => {
    try { input.value = pretty(JSON.parse(input.value)); } catch { /* shown by check */ }
  });
  const el = field(label, path, input, hint);
  el.querySelector(".error").before(status);
  check();
  el.input = input;
  el.read = () => {
    if (!input.value.trim()) return undefined;
    try {
      return JSON.parse(input.value);
    } catch (e) {
      const err = new Error(`not valid JSON: ${e.message}`);
      err.code = "invalid_json";
      err.field = path;
      throw err;
    }
  };
  return el;
}

/**
 * The mock response editor. `variables()` gives the tool's parameters
 * ({name, type}) the `when` expressions read. `read()` gives the
 * `mockResponse` (undefined: none).
 */
export function mockEditor(mock, { variables }) {
  const cased = isCaseList(mock) && mock.every((c) => c.when === undefined || c.when === null || typeof c.when === "object");
  const mode = select([["none", "None: test mode answers an error"], ["value", "The same answer for every call"], ["cases", "An answer by the call's arguments"]],
    mock === undefined || mock === null ? "none" : cased ? "cases" : "value");
  const modeField = field("Mock response", "mockResponse", mode,
    "What the tool answers in test mode instead of being called.");
  const body = h("div", { class: "mock-body" });
  let value = null;
  let cases = null;

  const caseRows = (items) => rows({
    items,
    blank: () => ({ response: undefined }),
    addLabel: "Add case",
    render: (c, i) => {
      const when = exprField("When", `mockResponse[${i}].when`, c.when ?? "", {
        variables, allowLlm: false,
        hint: "Over the call's arguments, e.g. order_id == \"A1\"; empty: always (the default, usually last).",
      });
      const answer = jsonField("Answer (JSON)", `mockResponse[${i}].response`, c.response, { rows: 3, placeholder: '{"status": "shipped"}' });
      const row = h("div", { class: "mock-case" }, when, answer);
      row.read = () => {
        const response = answer.read();
        if (response === undefined) {
          const err = new Error("write the answer of this case");
          err.code = "required";
          err.field = `mockResponse[${i}].response`;
          throw err;
        }
        return when.input.value.trim() ? { when: when.read(), response } : { response };
      };
      return row;
    },
  });
  const readCases = () => cases.rows().map((r) => r.read());

  const draw = (m) => {
    value = null;
    cases = null;
    if (mode.value === "value") {
      value = jsonField("Mock response (JSON)", "mockResponse", m, { rows: 6,
        hint: "Any JSON value, answered to every call.", placeholder: '{"status": "shipped"}' });
      body.replaceChildren(value);
    } else if (mode.value === "cases") {
      cases = caseRows(isCaseList(m) ? m : [{ response: m }]);
      body.replaceChildren(h("div", { class: "field", dataset: { field: "mockResponse" } },
        h("span", { class: "label" }, "Cases, the first true one answers"), cases, h("p", { class: "error" })));
    } else {
      body.replaceChildren();
    }
  };

  let shown = mode.value;
  mode.addEventListener("change", () => {
    let m;
    try {
      m = shown === "value" ? value.read() : shown === "cases" ? readCases() : undefined;
    } catch (e) {
      mode.value = shown;
      showError(mode.closest("form") || body, e);
      return;
    }
    shown = mode.value;
    draw(m);
  });
  draw(mock ?? undefined);

  const el = h("div", { class: "mock-editor" }, modeField, body);
  el.read = () => (mode.value === "value" ? value.read() : mode.value === "cases" ? readCases() : undefined);
  return el;
}

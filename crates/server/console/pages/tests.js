// Conversation tests of an assistant or a workflow (R-BX-10): the list
// with each test's last result, run one or all (a few at a time, with a
// progress bar), the editor, and a run's report — expectations, the
// transcript, and what changed since the run before.

import { get, list, post, put, del } from "../api.js";
import { h, page, field, text, area, showError, clearErrors, toast, parseJson } from "../ui.js";
import { testBuilders, turnRows, notForForm, editable } from "./test_expectations.js";
import { sessionDraft } from "./test_draft.js";

/** Tests sent at once by "Run all" (the server bounds its runs too). */
const AT_ONCE = 4;
/** How often a running test run is read. */
const POLL_MS = 300;

const base = (kind, id) => `/v1/${kind}/${encodeURIComponent(id)}/tests`;
const route = (kind, id) => `#/${kind}/${encodeURIComponent(id)}`;

function pill(status) {
  const cls = status === "passed" ? "ok" : status ? "bad" : "";
  return h("span", { class: `pill ${cls}`, dataset: { status: status || "none" } }, status || "not run");
}

/** The tabs over an assistant's or workflow's pages. */
export function targetTabs(kind, id, current) {
  return h("nav", { class: "tabs", "aria-label": "Pages of this " + (kind === "workflows" ? "workflow" : "assistant") },
    h("a", { href: route(kind, id), "aria-current": current === "settings" ? "page" : null }, "Settings"),
    h("a", { href: `${route(kind, id)}/tests`, "aria-current": current === "tests" ? "page" : null }, "Tests"));
}

export async function testsPage(kind, id) {
  const [target, tests] = await Promise.all([get(`/v1/${kind}/${encodeURIComponent(id)}`), list(base(kind, id))]);
  const last = await Promise.all(tests.map((t) => list(`${base(kind, id)}/${t.id}/runs`).then((r) => r[0]).catch(() => null)));
  const report = h("section", { "aria-label": "Test report", "aria-live": "polite" });
  const progress = h("progress", { max: tests.length || 1, value: 0, hidden: true, "aria-label": "Tests run" });
  const counter = h("span", { class: "muted", role: "status" });
  const rowsBox = h("tbody");
  const cells = new Map();
  tests.forEach((t, i) => {
    const status = h("td", {}, pill(last[i]?.status));
    cells.set(t.id, status);
    const run = h("button", { type: "button", class: "small" }, "Run");
    run.addEventListener("click", async () => {
      run.disabled = true;
      status.replaceChildren(pill("running"));
      try { show(await runOne(t)); } catch (e) { showError(report, e); status.replaceChildren(pill(last[i]?.status)); }
      run.disabled = false;
    });
    const remove = h("button", { type: "button", class: "small danger" }, "Delete");
    remove.addEventListener("click", async () => {
      if (!confirm(`Delete the test "${t.name}" and its runs?`)) return;
      await del(`${base(kind, id)}/${t.id}`);
      toast("Test deleted");
      testsPage(kind, id);
    });
    rowsBox.append(h("tr", { dataset: { test: t.name } },
      h("td", {}, h("a", { href: `${route(kind, id)}/tests/${encodeURIComponent(t.id)}` }, t.name)),
      h("td", {}, String(t.turns.length)), status,
      h("td", { class: "actions" }, run, h("a", { href: `${route(kind, id)}/tests/${encodeURIComponent(t.id)}/runs` }, "Runs"), remove)));
  });

  /** Start a test's run (answered at once) and read it until it ends. */
  async function runOne(t) {
    let suite = await post(`${base(kind, id)}/${t.id}/run`);
    while (suite.status === "running") {
      await new Promise((done) => setTimeout(done, POLL_MS));
      suite = await get(`${base(kind, id)}/runs/${encodeURIComponent(suite.id)}`);
    }
    const r = suite.runs[0] || { status: "error", testId: t.id, testName: t.name, error: `the run was ${suite.status} before it finished; run it again` };
    cells.get(t.id).replaceChildren(pill(r.status));
    return r;
  }

  /** Show a run's report with the diff against the run before it. */
  async function show(run) {
    const runs = await list(`${base(kind, id)}/${run.testId}/runs`);
    const before = runs.find((r) => r.id !== run.id && r.startedAt <= run.startedAt);
    report.replaceChildren(runReport(run, before));
  }

  const runAll = h("button", { type: "button", disabled: tests.length ? null : true }, "Run all");
  runAll.addEventListener("click", async () => {
    runAll.disabled = true;
    progress.hidden = false;
    progress.value = 0;
    const results = [];
    let next = 0;
    const worker = async () => {
      while (next < tests.length) {
        const t = tests[next++];
        cells.get(t.id).replaceChildren(pill("running"));
        try { results.push(await runOne(t)); } catch (e) { results.push({ status: "error", testName: t.name, error: e.message }); }
        progress.value = results.length;
        counter.textContent = `${results.length} / ${tests.length} run`;
      }
    };
    await Promise.all(Array.from({ length: Math.min(AT_ONCE, tests.length) }, worker));
    const passed = results.filter((r) => r.status === "passed").length;
    counter.textContent = `${passed} passed, ${results.length - passed} not passed of ${tests.length}`;
    report.replaceChildren(h("ul", { class: "results", "aria-label": "Suite results" },
      results.map((r) => h("li", {}, pill(r.status), " ", r.testName, r.error ? ` — ${r.error}` : ""))));
    runAll.disabled = false;
  });

  page(`Tests of ${target.name}`, targetTabs(kind, id, "tests"),
    h("div", { class: "actions" },
      h("a", { href: `${route(kind, id)}/tests/new` }, h("button", { type: "button", tabindex: -1, class: "ghost" }, "New test")),
      runAll, progress, counter),
    h("p", { class: "hint" }, "Tests run in test mode: tools answer their mock response (or the test's scripted results) and nothing but the model is called."),
    tests.length
      ? h("table", { "aria-label": "Tests" }, h("thead", {}, h("tr", {}, h("th", {}, "Test"), h("th", {}, "Turns"), h("th", {}, "Last run"), h("th", {}, ""))), rowsBox)
      : h("p", { class: "muted" }, "No tests yet."),
    report);
}

/** Lines of a transcript as a run shows it. */
function transcriptLines(run) {
  return (run?.transcript || []).flatMap((m) => [
    ...(m.toolCalls || []).map((c) => `assistant → ${c.name}(${c.arguments})`),
    ...(m.content ? [`${m.role === "tool" ? `tool ${m.name || ""}` : m.role}: ${m.content}`] : []),
  ]);
}

/** A line diff (longest common subsequence): [op, line], op in " +-". */
export function diffLines(a, b) {
  const n = a.length, m = b.length;
  const lcs = Array.from({ length: n + 1 }, () => new Array(m + 1).fill(0));
  for (let i = n - 1; i >= 0; i--) for (let j = m - 1; j >= 0; j--) {
    lcs[i][j] = a[i] === b[j] ? lcs[i + 1][j + 1] + 1 : Math.max(lcs[i + 1][j], lcs[i][j + 1]);
  }
  const out = [];
  let i = 0, j = 0;
  while (i < n && j < m) {
    if (a[i] === b[j]) { out.push([" ", a[i]]); i++; j++; }
    else if (lcs[i + 1][j] >= lcs[i][j + 1]) out.push(["-", a[i++]]);
    else out.push(["+", b[j++]]);
  }
  while (i < n) out.push(["-", a[i++]]);
  while (j < m) out.push(["+", b[j++]]);
  return out;
}

/** A run's report: verdict, expectations, transcript, diff with `before`. */
export function runReport(run, before) {
  const was = new Map((before?.expectations || []).map((e) => [`${e.kind}/${e.subject}`, e.passed]));
  const expectations = h("ul", { class: "expectations", "aria-label": "Expectations" },
    run.expectations.map((e) => {
      const prev = was.get(`${e.kind}/${e.subject}`);
      const change = prev === undefined || prev === e.passed ? "" : e.passed ? " (fixed since the last run)" : " (broke since the last run)";
      return h("li", { class: e.passed ? "ok" : "bad", dataset: { passed: String(e.passed) } },
        e.passed ? "✓ " : "✗ ", h("strong", {}, `${e.kind} ${e.subject}`), `: ${e.detail}${change}`);
    }));
  const lines = transcriptLines(run);
  const diff = before ? diffLines(transcriptLines(before), lines) : null;
  const changed = diff && diff.some(([op]) => op !== " ");
  return h("div", { class: "card", dataset: { run: run.id } },
    h("h2", {}, pill(run.status), ` ${run.testName}`),
    h("p", { class: "muted" }, `${(run.durationMs / 1000).toFixed(1)} s · ${run.turnsSent} turn(s) sent`,
      run.sessionId ? [" · session ", h("a", { href: `#/sessions/${encodeURIComponent(run.sessionId)}` }, run.sessionId)] : null,
      run.endReason ? ` · ended: ${run.endReason}` : ""),
    run.error ? h("div", { class: "banner bad", role: "alert" }, run.error) : null,
    expectations,
    h("details", { open: true }, h("summary", {}, "Transcript"), h("pre", { class: "transcript" }, lines.join("\n"))),
    before ? h("details", { open: changed ? true : null }, h("summary", {}, changed ? "Changes since the last run" : "No change in the transcript since the last run"),
      h("pre", { class: "diff", "aria-label": "Transcript diff" }, diff.map(([op, l]) => h("span", { class: op === "+" ? "add" : op === "-" ? "del" : "" }, `${op} ${l}\n`)))) : null);
}

/** A test's runs, newest first, each with its report on demand. */
export async function testRunsPage(kind, id, testId) {
  const [test, runs] = await Promise.all([get(`${base(kind, id)}/${encodeURIComponent(testId)}`), list(`${base(kind, id)}/${encodeURIComponent(testId)}/runs`)]);
  const report = h("section", { "aria-label": "Test report" });
  page(`Runs of ${test.name}`, targetTabs(kind, id, "tests"),
    runs.length ? h("table", { "aria-label": "Runs" }, h("tbody", {}, runs.map((r, i) => h("tr", {},
      h("td", {}, pill(r.status)), h("td", {}, new Date(r.startedAt).toLocaleString()),
      h("td", {}, h("button", { type: "button", class: "small ghost", onclick: () => report.replaceChildren(runReport(r, runs[i + 1])) }, "Show"))))))
      : h("p", { class: "muted" }, "Not run yet."),
    report);
}

/**
 * Create or edit a test: its fields and the builders of its variables,
 * scripted results and expectations, or the whole test as JSON. A new
 * test may be drafted from a session (`?session=<id>`, "Save as test").
 */
export async function testEditor(kind, id, testId) {
  const isNew = testId === "new";
  const fromSession = isNew ? new URLSearchParams(location.hash.split("?")[1] || "").get("session") : null;
  const [target, tools] = await Promise.all([get(`/v1/${kind}/${encodeURIComponent(id)}`), list("/v1/tools")]);
  const draft = fromSession ? await sessionDraft(fromSession, { target, tools }) : null;
  const t = draft ? draft.test : isNew ? { name: "", turns: [], expect: {}, timeoutSeconds: 120 } : await get(`${base(kind, id)}/${encodeURIComponent(testId)}`);
  const ctx = { tools, variables: target.dynamicVariables || [] };
  const formView = h("div");
  let readForm = null;
  /** Draw the form from test `v`. */
  const draw = (v) => {
    const name = text(v.name || "");
    const description = text(v.description || "");
    const userId = text(v.userId || "", { placeholder: "optional" });
    const turns = turnRows(v.turns || []);
    const builders = testBuilders(v, ctx);
    const timeout = h("input", { type: "number", min: 1, max: 600, value: v.timeoutSeconds ?? 120 });
    formView.replaceChildren(
      h("div", { class: "row" }, field("Name", "name", name), field("Description", "description", description), field("User id", "userId", userId)),
      turns, builders, field("Timeout (seconds)", "timeoutSeconds", timeout));
    readForm = () => {
      const out = { name: name.value.trim(), description: description.value, turns: turns.read(), ...builders.read(), timeoutSeconds: Number(timeout.value || 120) };
      if (userId.value.trim()) out.userId = userId.value.trim();
      return out;
    };
  };
  draw(t);

  // The JSON view: the whole test, for power users.
  const json = area("", { rows: 22, class: "code", spellcheck: "false" });
  const jsonView = field("Test (JSON)", "json", json, "Switch back to the form to check it there, or save it as it is.");
  jsonView.hidden = true;
  const note = h("p", { class: "hint schema-note warn", role: "status" });
  const formBtn = h("button", { type: "button", class: "ghost small", "aria-pressed": "true" }, "Form");
  const jsonBtn = h("button", { type: "button", class: "ghost small", "aria-pressed": "false" }, "JSON");
  const inJson = () => !jsonView.hidden;
  const setView = (toJson) => {
    jsonView.hidden = !toJson;
    formView.hidden = toJson;
    formBtn.setAttribute("aria-pressed", String(!toJson));
    jsonBtn.setAttribute("aria-pressed", String(toJson));
  };
  jsonBtn.addEventListener("click", () => {
    if (inJson()) return;
    clearErrors(form);
    try { json.value = JSON.stringify(readForm(), null, 2); } catch (err) { showError(form, err); return; }
    note.textContent = "";
    setView(true);
  });
  formBtn.addEventListener("click", () => {
    if (!inJson()) return;
    let v;
    try { v = JSON.parse(json.value); } catch (err) { note.textContent = `Not valid JSON: ${err.message}. Fix it to go back to the form.`; return; }
    const why = notForForm(v);
    if (why) { note.textContent = `The form cannot show this test: ${why}.`; return; }
    note.textContent = "";
    draw(v);
    setView(false);
  });

  const form = h("form", { class: "card", "aria-label": "Test" },
    draft ? h("div", { class: "banner warn draft-note", role: "status" }, draft.note) : null,
    h("div", { class: "field-head" }, h("span", {}),
      h("div", { class: "view-toggle", role: "group", "aria-label": "Test view" }, formBtn, jsonBtn)),
    note, formView, jsonView,
    h("div", { class: "actions" }, h("button", { type: "submit" }, isNew ? "Create test" : "Save"),
      h("a", { href: `${route(kind, id)}/tests` }, "Back to the tests")));
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    clearErrors(form);
    const asJson = inJson();
    try {
      const body = asJson ? editable(parseJson(json.value, "json", {})) : readForm();
      const saved = isNew ? await post(base(kind, id), body) : await put(`${base(kind, id)}/${encodeURIComponent(testId)}`, body);
      toast(`Test ${saved.name} saved`);
      location.hash = `${route(kind, id)}/tests`;
    } catch (err) {
      // In the JSON view the form's fields are hidden: the error is shown
      // at the JSON, naming the field.
      showError(form, asJson && err.field && err.field !== "json" ? { code: err.code, message: `${err.field}: ${err.message}`, field: "json" } : err);
    }
  });
  page(isNew ? (draft ? "New test from a session" : "New test") : `Test ${t.name}`, targetTabs(kind, id, "tests"), form);
}

// Conversation tests of an assistant or a workflow (R-BX-10): the list
// with each test's last result, run one or all (a few at a time, with a
// progress bar), the editor, and a run's report — expectations, the
// transcript, and what changed since the run before.

import { get, list, post, put, del } from "../api.js";
import { h, page, field, text, area, showError, clearErrors, toast, parseJson } from "../ui.js";

/** Tests sent at once by "Run all" (the server bounds its runs too). */
const AT_ONCE = 4;

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

  async function runOne(t) {
    const r = await post(`${base(kind, id)}/${t.id}/run`);
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

const pretty = (v) => (v === undefined || v === null || (typeof v === "object" && !Object.keys(v).length) ? "" : JSON.stringify(v, null, 2));

/** Create or edit a test. */
export async function testEditor(kind, id, testId) {
  const isNew = testId === "new";
  const t = isNew ? { name: "", turns: [], expect: {}, timeoutSeconds: 120 } : await get(`${base(kind, id)}/${encodeURIComponent(testId)}`);
  const e = t.expect || {};
  const name = text(t.name);
  const description = text(t.description || "");
  const turns = area(t.turns.join("\n"), { rows: 4, placeholder: "Where is my order A1?\nThanks, bye." });
  const variables = area(pretty(t.variables), { rows: 3, class: "code", placeholder: '{"customer_name": "Ann"}' });
  const responses = area(pretty(t.toolResponses), { rows: 4, class: "code", placeholder: '{"lookup_order": [{"response": {"status": "shipped"}}]}' });
  const calls = area(pretty(e.toolCalls), { rows: 4, class: "code", placeholder: '[{"name": "lookup_order", "arguments": {"order_id": "A1"}}]' });
  const finalVars = area(pretty(e.variables), { rows: 3, class: "code", placeholder: '{"order_status": "shipped"}' });
  const endReason = text(e.endReason === undefined ? "" : JSON.stringify(e.endReason), { class: "code", placeholder: '{"$exists": false}' });
  const criterion = area(e.successCriterion || "", { rows: 2, placeholder: "The assistant tells the user the order has shipped." });
  const timeout = h("input", { type: "number", min: 1, max: 600, value: t.timeoutSeconds });
  const form = h("form", { class: "card", "aria-label": "Test" },
    h("div", { class: "row" }, field("Name", "name", name), field("Description", "description", description)),
    field("User turns, one per line", "turns", turns, "Sent one after another, each once the assistant has finished; an open askUser question is answered with the turn."),
    field("Initial variables (JSON)", "variables", variables),
    field("Scripted tool results (JSON)", "toolResponses", responses, "Per tool name, the results of its calls in order: {\"response\": …} or {\"error\": \"…\"}. Other calls answer the tool's mock response."),
    h("h2", {}, "Expectations"),
    field("Tool calls (JSON)", "expect.toolCalls", calls, "Each {name, arguments?: {arg: matcher}, minCalls = 1, maxCalls?}. A matcher is a value, or {\"$contains\"|\"$regex\"|\"$exists\"|\"$oneOf\"|\"$gt\"|\"$lt\": …}."),
    field("Final variables (JSON)", "expect.variables", finalVars),
    field("End reason (matcher, JSON)", "expect.endReason", endReason),
    field("Success criterion", "expect.successCriterion", criterion, "Judged by the small model over the transcript."),
    field("Timeout (seconds)", "timeoutSeconds", timeout),
    h("div", { class: "actions" }, h("button", { type: "submit" }, isNew ? "Create test" : "Save"),
      h("a", { href: `${route(kind, id)}/tests` }, "Back to the tests")));
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    clearErrors(form);
    try {
      const body = {
        name: name.value.trim(), description: description.value,
        turns: turns.value.split("\n").map((l) => l.trim()).filter(Boolean),
        variables: parseJson(variables.value, "variables", {}),
        toolResponses: parseJson(responses.value, "toolResponses", {}),
        expect: {
          toolCalls: parseJson(calls.value, "expect.toolCalls", []),
          variables: parseJson(finalVars.value, "expect.variables", {}),
        },
        timeoutSeconds: Number(timeout.value || 120),
      };
      const reason = parseJson(endReason.value, "expect.endReason", undefined);
      if (reason !== undefined) body.expect.endReason = reason;
      if (criterion.value.trim()) body.expect.successCriterion = criterion.value.trim();
      const saved = isNew ? await post(base(kind, id), body) : await put(`${base(kind, id)}/${encodeURIComponent(testId)}`, body);
      toast(`Test ${saved.name} saved`);
      location.hash = `${route(kind, id)}/tests`;
    } catch (err) { showError(form, err); }
  });
  page(isNew ? "New test" : `Test ${t.name}`, targetTabs(kind, id, "tests"), form);
}

// Past and current sessions: the list (names, status, test mode, filters),
// a session's transcript, delegated tasks and event log, and ending one.

import { get, list, post, key } from "../api.js";
import { h, page, select, formatTime, usageLine, toast, stillOn } from "../ui.js";
import { eventLog } from "./event_log.js";
import { tasksPanel, sessionTasks, taskDialog } from "./tasks.js";
import { saveAsTestAction } from "./test_draft.js";

/** The assistants' and workflows' names by id (a deleted one keeps its id). */
async function targetNames() {
  const [assistants, workflows] = await Promise.all([list("/v1/assistants"), list("/v1/workflows").catch(() => [])]);
  return new Map([...assistants.map((a) => [`a:${a.id}`, a.name]), ...workflows.map((w) => [`w:${w.id}`, w.name])]);
}

/** What a session runs on: `{key, kind, id}` (a workflow's, else an assistant's). */
const targetOf = (s) => (s.workflowId ? { key: `w:${s.workflowId}`, kind: "workflow", id: s.workflowId } : { key: `a:${s.assistantId}`, kind: "assistant", id: s.assistantId });

const statusPill = (status) => h("span", { class: `pill ${status === "ended" ? "bad" : "ok"}` }, status);
const testPill = () => h("span", { class: "pill warn", title: "Tools answer their mock responses" }, "test mode");

/**
 * The newest sessions (the API lists at most 200 and filters none): what
 * each runs on by name, status, test mode; filters on status, assistant
 * or workflow and test mode, applied here and kept in the address.
 */
export async function sessionsPage() {
  const [sessions, names] = await Promise.all([list("/v1/sessions"), targetNames()]);
  const params = new URLSearchParams(location.hash.split("?")[1] || "");
  const targets = [...new Map(sessions.map((s) => {
    const t = targetOf(s);
    return [t.key, `${names.get(t.key) || t.id} (${t.kind})`];
  })).entries()].sort((a, b) => a[1].localeCompare(b[1]));
  const status = select([["", "any status"], ["active", "active"], ["handoff", "handed off"], ["ended", "ended"]], params.get("status") || "", { "aria-label": "Status" });
  const target = select([["", "any assistant or workflow"], ...targets], params.get("target") || "", { "aria-label": "Assistant or workflow" });
  const test = select([["", "test mode or not"], ["only", "test mode only"], ["none", "without test mode"]], params.get("test") || "", { "aria-label": "Test mode" });
  const body = h("tbody");
  const count = h("span", { class: "status", role: "status" });
  const draw = () => {
    const shown = sessions.filter((s) => (!status.value || s.status === status.value)
      && (!target.value || targetOf(s).key === target.value)
      && (!test.value || s.testMode === (test.value === "only")));
    body.replaceChildren(...shown.map((s) => {
      const t = targetOf(s);
      return h("tr", { dataset: { session: s.id } },
        h("td", {}, h("a", { href: `#/sessions/${encodeURIComponent(s.id)}` }, s.title || s.id), s.parentSessionId ? h("div", { class: "status" }, "sub-agent") : null),
        h("td", {}, h("a", { href: `#/${t.kind}s/${encodeURIComponent(t.id)}` }, names.get(t.key) || t.id), t.kind === "workflow" ? h("span", { class: "status" }, " workflow") : null),
        h("td", {}, statusPill(s.status), s.testMode ? [" ", testPill()] : null),
        h("td", { class: "small" }, s.userId || ""),
        h("td", { class: "small" }, formatTime(s.createdAt)),
        h("td", {}, s.status === "ended" ? "" : h("a", { href: `#/playground/${encodeURIComponent(s.id)}` }, "Open live")));
    }));
    count.textContent = `${shown.length} of ${sessions.length} session${sessions.length === 1 ? "" : "s"}`;
    const q = new URLSearchParams(Object.entries({ status: status.value, target: target.value, test: test.value }).filter(([, v]) => v));
    history.replaceState(null, "", `#/sessions${q.toString() ? `?${q}` : ""}`);
  };
  [status, target, test].forEach((f) => f.addEventListener("change", draw));
  page("Sessions", ...(sessions.length ? [
    h("div", { class: "actions filters", role: "search", "aria-label": "Filter sessions" }, status, target, test, count),
    h("table", { "aria-label": "Sessions" }, h("thead", {}, h("tr", {}, h("th", {}, "Session"), h("th", {}, "Assistant or workflow"), h("th", {}, "Status"), h("th", {}, "User"), h("th", {}, "Started"), h("th", {}, ""))), body),
    sessions.length >= 200 ? h("p", { class: "hint" }, "The 200 newest sessions; the filters apply to them.") : null,
  ] : [h("p", { class: "muted" }, "No sessions yet.")]));
  draw();
}

/** An "End session" button (asks first); `ended()` runs once it is ended. */
export function endButton(id, ended) {
  const b = h("button", { type: "button", class: "danger small" }, "End session");
  b.addEventListener("click", async () => {
    if (!confirm("End this session? No more turns; its history stays.")) return;
    b.disabled = true;
    try {
      await post(`/v1/sessions/${encodeURIComponent(id)}/end`);
      toast("Session ended");
      ended();
    } catch (e) {
      b.disabled = false;
      toast(`${e.code}: ${e.message}`);
    }
  });
  return b;
}

/**
 * The stored events of a session: read its SSE stream (each event carries
 * its type as the SSE event name) until it has been quiet for a moment.
 */
async function storedEvents(id) {
  const out = [];
  const abort = new AbortController();
  let quiet = setTimeout(() => abort.abort(), 1500);
  try {
    const resp = await fetch(`/v1/sessions/${encodeURIComponent(id)}/events?after=0`, {
      headers: { Authorization: `Bearer ${key()}` }, signal: abort.signal,
    });
    const reader = resp.body.getReader();
    const decoder = new TextDecoder();
    let buf = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += decoder.decode(value, { stream: true });
      let end;
      while ((end = buf.indexOf("\n\n")) >= 0) {
        const block = buf.slice(0, end);
        buf = buf.slice(end + 2);
        const data = block.split("\n").filter((l) => l.startsWith("data:")).map((l) => l.slice(5).trim()).join("\n");
        if (data) out.push(JSON.parse(data));
      }
      clearTimeout(quiet);
      quiet = setTimeout(() => abort.abort(), 400);
    }
  } catch (e) {
    if (e.name !== "AbortError") throw e;
  }
  return out;
}

export async function sessionDetail(id) {
  const [s, messages, tasks, names] = await Promise.all([get(`/v1/sessions/${encodeURIComponent(id)}`), list(`/v1/sessions/${encodeURIComponent(id)}/messages`), sessionTasks(id), targetNames().catch(() => new Map())]);
  const taskView = taskDialog(id);
  const log = h("div", { class: "card" }, h("p", { class: "muted" }, "Loading events…"));
  const target = targetOf(s);
  page(`Session ${s.title || s.id}`,
    h("p", {}, statusPill(s.status), s.testMode ? [" ", testPill()] : null, " ",
      `${target.kind} `, h("a", { href: `#/${target.kind}s/${encodeURIComponent(target.id)}` }, names.get(target.key) || target.id), s.userId ? ` · user ${s.userId}` : "", s.endReason ? ` · ended: ${s.endReason}` : "",
      s.parentSessionId ? h("span", {}, " · sub-agent of ", h("a", { href: `#/sessions/${encodeURIComponent(s.parentSessionId)}` }, s.parentSessionId)) : null,
      s.status === "ended" ? null : h("span", {}, " · ", h("a", { href: `#/playground/${encodeURIComponent(id)}` }, "open live"), " ",
        endButton(id, () => { if (stillOn(id)) sessionDetail(id); }))),
    s.usage ? h("p", { class: "small", "aria-label": "Usage" }, usageLine(s.usage)) : null,
    s.workflow ? h("p", { class: "small", "aria-label": "Workflow position" }, `at node ${s.workflow.currentNodeId} · path ${s.workflow.path.join(" → ")}`) : null,
    h("h2", {}, "Transcript"),
    saveAsTestAction(s),
    h("div", { class: "card log", style: null }, messages.length ? messages.map((m) => m.role === "tool"
      ? h("div", { class: "toolcard" }, h("strong", {}, `${m.name || "tool"} result`), h("pre", {}, m.content))
      : h("div", { class: `msg ${m.role}${m.interrupted ? " interrupted" : ""}` },
        h("span", { class: "who" }, [m.role, m.name, m.source === "audio" ? "spoken" : null].filter(Boolean).join(" · ")),
        m.content || (m.toolCalls || []).map((c) => `→ ${c.name}(${c.arguments})`).join("\n"),
        m.interrupted ? h("span", { class: "pill" }, "interrupted") : null))
      : h("p", { class: "muted" }, "No messages.")),
    h("div", { hidden: !tasks.length }, h("h2", {}, "Tasks"), h("section", { class: "card", "aria-label": "Tasks" }, tasksPanel(tasks, (t) => taskView.show(t), s.status === "ended" ? null : id)), taskView.element),
    h("h2", {}, "Event log"), log);
  log.replaceChildren(eventLog(await storedEvents(id)));
}

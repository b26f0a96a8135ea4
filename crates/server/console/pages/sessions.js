// Past and current sessions: list, transcript, delegated tasks and event log.

import { get, list, key } from "../api.js";
import { h, page, formatTime, usageLine } from "../ui.js";
import { tasksPanel, sessionTasks, taskDialog } from "./tasks.js";

export async function sessionsPage() {
  const sessions = await list("/v1/sessions");
  page("Sessions",
    sessions.length ? h("table", {}, h("thead", {}, h("tr", {}, h("th", {}, "Session"), h("th", {}, "Assistant"), h("th", {}, "Status"), h("th", {}, "Started"), h("th", {}, ""))),
      h("tbody", {}, sessions.map((s) => h("tr", {},
        h("td", {}, h("a", { href: `#/sessions/${encodeURIComponent(s.id)}` }, s.title || s.id), s.parentSessionId ? h("div", { class: "status" }, "sub-agent") : null),
        h("td", {}, s.assistantId),
        h("td", {}, h("span", { class: `pill ${s.status === "ended" ? "bad" : "ok"}` }, s.status)),
        h("td", { class: "small" }, formatTime(s.createdAt)),
        h("td", {}, s.status === "ended" ? "" : h("a", { href: `#/playground/${encodeURIComponent(s.id)}` }, "Open live"))))))
      : h("p", { class: "muted" }, "No sessions yet."));
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
  const [s, messages, tasks] = await Promise.all([get(`/v1/sessions/${encodeURIComponent(id)}`), list(`/v1/sessions/${encodeURIComponent(id)}/messages`), sessionTasks(id)]);
  const taskView = taskDialog(id);
  const log = h("div", { class: "card" }, h("p", { class: "muted" }, "Loading events…"));
  page(`Session ${s.title || s.id}`,
    h("p", {}, h("span", { class: `pill ${s.status === "ended" ? "bad" : "ok"}` }, s.status), " ",
      s.workflowId ? h("span", {}, "workflow ", h("a", { href: `#/workflows/${encodeURIComponent(s.workflowId)}` }, s.workflowId)) : `assistant ${s.assistantId}`, s.userId ? ` · user ${s.userId}` : "", s.endReason ? ` · ended: ${s.endReason}` : "",
      s.parentSessionId ? h("span", {}, " · sub-agent of ", h("a", { href: `#/sessions/${encodeURIComponent(s.parentSessionId)}` }, s.parentSessionId)) : null,
      s.status === "ended" ? null : h("span", {}, " · ", h("a", { href: `#/playground/${encodeURIComponent(id)}` }, "open live"))),
    s.usage ? h("p", { class: "small", "aria-label": "Usage" }, usageLine(s.usage)) : null,
    s.workflow ? h("p", { class: "small", "aria-label": "Workflow position" }, `at node ${s.workflow.currentNodeId} · path ${s.workflow.path.join(" → ")}`) : null,
    h("h2", {}, "Transcript"),
    h("div", { class: "card log", style: null }, messages.length ? messages.map((m) => m.role === "tool"
      ? h("div", { class: "toolcard" }, h("strong", {}, `${m.name || "tool"} result`), h("pre", {}, m.content))
      : h("div", { class: `msg ${m.role}${m.interrupted ? " interrupted" : ""}` },
        h("span", { class: "who" }, [m.role, m.name, m.source === "audio" ? "spoken" : null].filter(Boolean).join(" · ")),
        m.content || (m.toolCalls || []).map((c) => `→ ${c.name}(${c.arguments})`).join("\n"),
        m.interrupted ? h("span", { class: "pill" }, "interrupted") : null))
      : h("p", { class: "muted" }, "No messages.")),
    h("div", { hidden: !tasks.length }, h("h2", {}, "Tasks"), h("section", { class: "card", "aria-label": "Tasks" }, tasksPanel(tasks, (t) => taskView.show(t), s.status === "ended" ? null : id)), taskView.element),
    h("h2", {}, "Event log"), log);
  const events = await storedEvents(id);
  log.replaceChildren(h("table", { "aria-label": "Event log" }, h("thead", {}, h("tr", {}, h("th", {}, "#"), h("th", {}, "Type"), h("th", {}, "Time"), h("th", {}, "Data"))),
    h("tbody", {}, events.map((e) => {
      const { type, seq, timestamp, sessionId, ...data } = e;
      void sessionId;
      return h("tr", {}, h("td", {}, String(seq)), h("td", {}, h("code", {}, type)), h("td", { class: "small" }, formatTime(timestamp)),
        h("td", { class: "small" }, h("code", {}, JSON.stringify(data).slice(0, 300))));
    }))));
}

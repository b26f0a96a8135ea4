// A session's delegated tasks (task backends): the playground's Tasks
// panel and one task opened in a dialog with its instruction, outcome and,
// for a reasoner task, the background agent's transcript; a running task
// can be cancelled from either.

import { get, list, post } from "../api.js";
import { h, formatTime, toast } from "../ui.js";

const STATUS_CLASS = { running: "", completed: "ok", failed: "bad", cancelled: "bad" };

/** A status pill: running, completed, failed or cancelled. */
function statusPill(status) {
  return h("span", { class: `pill ${STATUS_CLASS[status] ?? ""}`, dataset: { status } }, status);
}

/** What a task came to: its result, its error or its latest progress note. */
function outcome(t) {
  if (t.status === "completed" && t.result !== undefined) return h("pre", { class: "task-result" }, t.result);
  if (t.error) return h("p", { class: "task-error" }, t.error);
  if (t.detail) return h("p", { class: "status task-detail" }, t.detail);
  return null;
}

/** The session's tasks, newest first; `open(task)` shows one. */
export function tasksPanel(tasks, open, sid) {
  if (!tasks.length) return h("p", { class: "muted small" }, "No tasks.");
  const sorted = [...tasks].sort((a, b) => (b.startedAt || "").localeCompare(a.startedAt || ""));
  return h("ul", { class: "tasks" }, sorted.map((t) => h("li", { dataset: { taskId: t.id } },
    statusPill(t.status), " ", h("strong", {}, t.title),
    h("div", { class: "status" }, `${t.backendType} · ${t.steps} step${t.steps === 1 ? "" : "s"}`),
    outcome(t),
    h("div", { class: "actions" },
      h("button", { type: "button", class: "link", "aria-label": `Open task ${t.title}`, onclick: () => open(t) }, "Open"),
      t.status === "running" && sid ? cancelButton(sid, t) : null))));
}

/** Cancel a running task (the conversation gets its report). */
function cancelButton(sid, t) {
  const button = h("button", { type: "button", class: "link", "aria-label": `Cancel task ${t.title}` }, "Cancel");
  button.addEventListener("click", async () => {
    if (!confirm(`Cancel the task “${t.title}”?`)) return;
    button.disabled = true;
    try {
      await post(`/v1/sessions/${encodeURIComponent(sid)}/tasks/${encodeURIComponent(t.id)}/cancel`, {});
      toast(`Task ${t.title} cancelled`);
    } catch (e) {
      button.disabled = false;
      toast(`${e.code}: ${e.message}`);
    }
  });
  return button;
}

/** The session's tasks from the API. */
export const sessionTasks = (sid) => list(`/v1/sessions/${encodeURIComponent(sid)}/tasks`);

/** One task with its transcript. */
export const sessionTask = (sid, taskId) => get(`/v1/sessions/${encodeURIComponent(sid)}/tasks/${encodeURIComponent(taskId)}`);

/** One transcript message; `called` names the tool of each call id. */
function transcriptMessage(m, called) {
  if (m.role === "tool") {
    const name = m.name || called.get(m.toolCallId) || "tool";
    return h("div", { class: "toolcard", dataset: { callId: m.toolCallId || "" } }, h("span", { class: "pill" }, "tool"), " ", h("strong", {}, `${name} result`), h("pre", {}, m.content));
  }
  const calls = (m.toolCalls || []).map((c) => h("div", { class: "toolcard", dataset: { callId: c.id } },
    h("span", { class: "pill" }, "tool"), " ", h("strong", {}, c.name), h("pre", { class: "args" }, c.arguments || "{}")));
  return [m.content ? h("div", { class: `msg ${m.role}` }, h("span", { class: "who" }, m.role), m.content) : null, ...calls];
}

/** The body of the task dialog. */
export function taskDetail(t, sid) {
  const rows = [
    ["Status", [statusPill(t.status), t.status === "running" ? [" ", cancelButton(sid, t)] : null]],
    ["Backend", [h("a", { href: `#/task-backends/${encodeURIComponent(t.backendId)}` }, t.backendId), ` (${t.backendType})`]],
    ["Steps", String(t.steps)],
    ["Started", formatTime(t.startedAt)],
    ["Updated", formatTime(t.updatedAt)],
    t.finishedAt ? ["Finished", formatTime(t.finishedAt)] : null,
    t.externalId ? ["OpenCode session", h("code", {}, t.externalId)] : null,
  ].filter(Boolean);
  const transcript = t.transcript || [];
  const called = new Map(transcript.flatMap((m) => (m.toolCalls || []).map((c) => [c.id, c.name])));
  return [
    h("dl", { class: "task-facts" }, rows.flatMap(([k, v]) => [h("dt", {}, k), h("dd", {}, [v].flat(2))])),
    h("h3", {}, "Instruction"), h("pre", { class: "task-instruction" }, t.instruction),
    t.status === "completed" && t.result !== undefined ? [h("h3", {}, "Result"), h("pre", { class: "task-result" }, t.result)] : null,
    t.error ? [h("h3", {}, t.status === "cancelled" ? "Cancelled" : "Error"), h("p", { class: "task-error" }, t.error)] : null,
    t.detail && t.status === "running" ? [h("h3", {}, "Progress"), h("p", { class: "task-detail" }, t.detail)] : null,
    t.backendType === "reasoner" ? [h("h3", {}, "Transcript"),
      h("div", { class: "log task-transcript", role: "log", "aria-label": "Task transcript" },
        transcript.length ? transcript.flatMap((m) => transcriptMessage(m, called)) : h("p", { class: "muted small" }, "No messages yet."))]
      : h("p", { class: "hint" }, "The OpenCode server keeps this task's conversation; its session id is above."),
  ];
}

/**
 * A modal dialog showing one task of session `sid`. Returns `{show(task),
 * changed(taskId)}`: `changed` redraws the dialog when the task it shows
 * changed.
 */
export function taskDialog(sid) {
  const title = h("h2", {});
  const body = h("div");
  const close = h("button", { type: "button", class: "ghost" }, "Close");
  const dialog = h("dialog", { class: "task-dialog", "aria-labelledby": "task-dialog-title" },
    Object.assign(title, { id: "task-dialog-title" }), body, h("div", { class: "actions" }, close));
  close.addEventListener("click", () => dialog.close());
  let shown = null;
  let asked = 0;
  const load = async (taskId) => {
    const mine = ++asked;
    try {
      const t = await sessionTask(sid, taskId);
      if (mine !== asked || shown !== taskId) return;
      title.textContent = `Task ${t.title}`;
      body.replaceChildren(...taskDetail(t, sid).flat().filter(Boolean));
    } catch (e) {
      if (mine === asked) body.replaceChildren(h("div", { class: "banner bad", role: "alert" }, `${e.code}: ${e.message}`));
    }
  };
  dialog.addEventListener("close", () => { shown = null; });
  return {
    element: dialog,
    show(task) {
      shown = task.id;
      title.textContent = `Task ${task.title}`;
      body.replaceChildren(h("p", { class: "muted" }, "Loading…"));
      if (!dialog.open) dialog.showModal();
      return load(task.id);
    },
    changed(taskId) {
      if (shown === taskId) load(taskId);
    },
  };
}

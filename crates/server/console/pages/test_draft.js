// "Save as test" (issue 39): a conversation test drafted from a session's
// transcript, for the test editor to show and the user to finish. The
// user's messages become the turns (an askUser question answered with a
// chip becomes the turn that answers it; goal, loop and report inputs the
// platform wrote are left out), the variables the session started with
// are kept, and the calls of the workspace's tools become expected calls
// with their arguments. A session that called the real tools has their
// results scripted, so the test replays the same data; a test-mode
// session's tools answered their mock responses, as they will in the test.
// Also the "Save as test" action a session's page shows.

import { list, get, key, isAdmin, opened } from "../api.js";
import { h } from "../ui.js";

/** A tool message the platform wrote when a call never ran. */
const CANCELLED = "Cancelled: the user interrupted before this call ran.";
const ANSWERED = /^User has answered your questions: "[\s\S]*?"="([\s\S]*?)"(?:, "|\. You can now continue)/;
/** Built-in tools a test may script (they answer an error in test mode). */
const SCRIPTABLE_BUILT_INS = ["webSearch", "webFetch"];

/** The variables a session started with (its first event), or {}. */
async function startVariables(id) {
  const headers = { Authorization: `Bearer ${key()}` };
  const ws = isAdmin() && opened();
  if (ws) headers["X-Rtc-Workspace"] = ws.id;
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), 3000);
  try {
    const resp = await fetch(`/v1/sessions/${encodeURIComponent(id)}/events?after=0`, { headers, signal: abort.signal });
    const reader = resp.body.getReader();
    const decoder = new TextDecoder();
    let buf = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return {};
      buf += decoder.decode(value, { stream: true });
      let end;
      while ((end = buf.indexOf("\n\n")) >= 0) {
        const data = buf.slice(0, end).split("\n").filter((l) => l.startsWith("data:")).map((l) => l.slice(5).trim()).join("\n");
        buf = buf.slice(end + 2);
        if (!data) continue;
        const e = JSON.parse(data);
        if (e.type === "session.started") return e.variables || {};
      }
    }
  } catch {
    return {};
  } finally {
    clearTimeout(timer);
    abort.abort();
  }
}

/** A tool message's content as a scripted result. */
function scripted(content) {
  if (content.startsWith("Error: ")) return { error: content.slice(7) };
  try { return { response: JSON.parse(content) }; } catch { return { response: content }; }
}

/**
 * The draft of a test of `target` ({dynamicVariables}) from session `id`:
 * `{test, note}`. `tools` are the workspace's tools.
 */
export async function sessionDraft(id, { target, tools }) {
  const [s, messages] = await Promise.all([get(`/v1/sessions/${encodeURIComponent(id)}`), list(`/v1/sessions/${encodeURIComponent(id)}/messages`)]);
  const declared = target.dynamicVariables || [];
  const names = new Set([...tools.map((t) => t.name), ...SCRIPTABLE_BUILT_INS]);
  const turns = [];
  const toolResponses = {};
  const calls = new Map();
  for (const m of messages) {
    if (m.role === "user" && !m.name && m.content.trim()) turns.push(m.content);
    if (m.role === "tool" && m.name === "askUser") {
      const answer = ANSWERED.exec(m.content);
      if (answer) turns.push(answer[1]);
    }
    if (m.role === "tool" && names.has(m.name) && m.content !== CANCELLED && !s.testMode) {
      (toolResponses[m.name] ||= []).push(scripted(m.content));
    }
    for (const c of m.role === "assistant" ? m.toolCalls || [] : []) {
      if (!names.has(c.name)) continue;
      let args = {};
      try { args = JSON.parse(c.arguments || "{}"); } catch { /* kept without arguments */ }
      const expectation = { name: c.name, minCalls: 1 };
      if (args && typeof args === "object" && !Array.isArray(args) && Object.keys(args).length) expectation.arguments = args;
      calls.set(JSON.stringify(expectation), expectation);
    }
  }
  const started = await startVariables(id);
  const variables = {};
  for (const v of declared) {
    if (!(v.name in started)) continue;
    if (v.default !== undefined && JSON.stringify(v.default) === JSON.stringify(started[v.name])) continue;
    variables[v.name] = started[v.name];
  }
  const scriptedCount = Object.values(toolResponses).reduce((n, l) => n + l.length, 0);
  const test = {
    name: `From session ${s.title || id}`.slice(0, 128),
    description: `Drafted from session ${id} (${s.testMode ? "test mode" : "live"}, ${new Date(s.createdAt).toLocaleString()}).`,
    turns, variables, toolResponses,
    expect: { toolCalls: [...calls.values()] },
    timeoutSeconds: 120,
  };
  if (s.userId) test.userId = s.userId;
  const note = [
    `Drafted from session ${id}: ${turns.length} user turn(s), ${calls.size} expected tool call(s) from what happened`,
    s.testMode ? " (its tools answered their mock responses, as they will in the test)"
      : `, ${scriptedCount} tool result(s) scripted from the real answers`,
    ". Add or change expectations, then save.",
  ].join("");
  return { test, note };
}

/** The "Save as test" action of a session's transcript (none for a
 * sub-agent's session: its turns come from its parent). */
export function saveAsTestAction(s) {
  if (s.parentSessionId) return null;
  const [kind, target] = s.workflowId ? ["workflows", s.workflowId] : ["assistants", s.assistantId];
  const href = `#/${kind}/${encodeURIComponent(target)}/tests/new?session=${encodeURIComponent(s.id)}`;
  return h("div", { class: "actions inline" },
    h("a", { href }, h("button", { type: "button", tabindex: -1, class: "ghost" }, "Save as test")),
    h("span", { class: "hint" }, "A conversation test with this session's user turns, opened in the test editor to add expectations."));
}

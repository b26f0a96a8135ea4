// The playground: start a session with variable values, chat over the
// live WebSocket with streamed replies, tool calls as cards, askUser
// questions as option chips, client tools answered by hand or
// automatically, handoff replies as the human agent, and live panels
// (delegated tasks among them, each openable with its transcript).
// A dropped connection resumes from the last event seen; a reloaded page
// shows the client calls already answered as answered. End ends the
// session. A realtime assistant's session, or a pipeline assistant's with
// a voice, adds the voice bar (microphone in, audio out) and shows the
// spoken transcripts, an interrupted answer marked (cut to what was heard),
// and for a voice session the interim transcript and each turn's latency.

import { get, list, post, key } from "../api.js";
import { RtcSession } from "/sdk/rtc-agent.js";
import { h, page, field, text, area, select, checkbox, showError, clearErrors, toast } from "../ui.js";
import { variablesPanel, todoPanel, goalsPanel, loopsPanel, treePanel } from "./panels.js";
import { workflowPanel } from "./workflows/live.js";
import { tasksPanel, sessionTasks, taskDialog } from "./tasks.js";
import { voiceOf, voiceBar } from "./playground_voice.js";
import { endButton } from "./sessions.js";

const CLIENT_KEY = (sid) => `rtc.playground.client.${sid}`;

export async function playgroundPage(sessionId) {
  return sessionId ? liveSession(sessionId) : startForm();
}

/** The client tools an assistant or a workflow binds, for the playground to declare. */
async function clientTools(target) {
  const tools = await list("/v1/tools");
  const bindings = [...(target.toolBindings || []), ...(target.nodes || []).flatMap((n) => n.toolBindings || [])];
  const ids = new Set(bindings.map((b) => b.toolId));
  return tools.filter((t) => t.type === "client" && ids.has(t.id));
}

async function startForm() {
  const [assistants, workflows, providers] = await Promise.all([list("/v1/assistants"), list("/v1/workflows").catch(() => []), list("/v1/providers").catch(() => [])]);
  const params = new URLSearchParams(location.hash.split("?")[1] || "");
  const wanted = params.get("assistant");
  const wantedWorkflow = params.get("workflow");
  const runs = select([["assistant", "an assistant"], ["workflow", "a workflow"]], wantedWorkflow ? "workflow" : "assistant", { "aria-label": "Start the session on" });
  const choice = select([["", "— choose an assistant —"], ...assistants.map((a) => [a.id, a.name])], wanted || assistants[0]?.id || "");
  const flow = select([["", "— choose a workflow —"], ...workflows.map((w) => [w.id, w.name])], wantedWorkflow || workflows[0]?.id || "");
  const choiceField = field("Assistant", "assistantId", choice);
  const flowField = field("Workflow", "workflowId", flow);
  const onWorkflow = () => runs.value === "workflow";
  const userId = text("", { placeholder: "optional end-user id (memories)" });
  const [testLabel, testBox] = checkbox("Test mode: tools answer their mock responses, nothing but the model is called", false);
  const varsBox = h("div");
  const clientBox = h("div");
  let varInputs = [];
  let clientModes = [];
  const providerNote = h("div", { "aria-live": "polite" });
  const load = async () => {
    choiceField.hidden = onWorkflow();
    flowField.hidden = !onWorkflow();
    const a = onWorkflow() ? workflows.find((x) => x.id === flow.value) : assistants.find((x) => x.id === choice.value);
    const wanted = a?.llm?.provider || "default";
    const p = providers.find((x) => x.name === wanted);
    providerNote.replaceChildren(...(p && !p.ready
      ? [h("div", { class: "banner warn", role: "alert" }, h("strong", {}, `No usable model provider (${p.name}): `), p.problem, " ",
        h("a", { href: "#/providers" }, "See the providers"))]
      : []));
    varInputs = (a?.dynamicVariables || []).map((v) => [v, text(v.default === undefined ? "" : (typeof v.default === "string" ? v.default : JSON.stringify(v.default)), { placeholder: v.default === undefined ? "required" : "" })]);
    varsBox.replaceChildren(...(varInputs.length ? [h("h2", {}, "Variables")] : []),
      ...varInputs.map(([v, input]) => field(`${v.name} (${v.type})`, `dynamicVariables.${v.name}`, input)));
    const tools = a ? await clientTools(a) : [];
    clientModes = tools.map((t) => {
      const mode = select([["manual", "answer by hand"], ["auto", "answer automatically"]], "manual", { "aria-label": `How to answer ${t.client.functionName}` });
      const reply = text('{"ok": true}', { "aria-label": `Automatic result of ${t.client.functionName}` });
      return [t.client.functionName, mode, reply];
    });
    clientBox.replaceChildren(...(clientModes.length ? [h("h2", {}, "Client tools this playground declares")] : []),
      ...clientModes.map(([fn, mode, reply]) => h("div", { class: "source" }, h("span", { class: "name" }, fn), mode, reply)));
  };
  choice.addEventListener("change", load);
  flow.addEventListener("change", load);
  runs.addEventListener("change", load);
  const form = h("form", { class: "card", "aria-label": "Start a session" },
    providerNote,
    h("div", { class: "row" }, field("Start on", "", runs), choiceField, flowField, field("User id", "userId", userId)),
    varsBox, clientBox, h("div", { class: "field", dataset: { field: "testMode" } }, testLabel, h("p", { class: "error" })),
    h("div", { class: "actions" }, h("button", { type: "submit" }, "Start session")));
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    clearErrors(form);
    const dynamicVariables = {};
    for (const [v, input] of varInputs) {
      if (input.value === "" && v.default === undefined) continue;
      if (v.type === "string") dynamicVariables[v.name] = input.value;
      else { try { dynamicVariables[v.name] = JSON.parse(input.value); } catch { dynamicVariables[v.name] = input.value; } }
    }
    const body = onWorkflow() ? { workflowId: flow.value, dynamicVariables } : { assistantId: choice.value, dynamicVariables };
    if (userId.value.trim()) body.userId = userId.value.trim();
    if (testBox.checked) body.testMode = true;
    try {
      const s = await post("/v1/sessions", body);
      sessionStorage.setItem(CLIENT_KEY(s.id), JSON.stringify(clientModes.map(([fn, mode, reply]) => ({ fn, mode: mode.value, reply: reply.value }))));
      location.hash = `#/playground/${encodeURIComponent(s.id)}`;
    } catch (e) { showError(form, e); }
  });
  page("Playground", form);
  await load();
}

async function liveSession(sid) {
  const client = JSON.parse(sessionStorage.getItem(CLIENT_KEY(sid)) || "[]");
  const session = await get(`/v1/sessions/${encodeURIComponent(sid)}`);
  // Client calls the history already answers: a reloaded page replays
  // their client_tool.call, shown answered and never answered again.
  const answered = new Set((await list(`/v1/sessions/${encodeURIComponent(sid)}/messages`).catch(() => []))
    .filter((m) => m.role === "tool" && m.toolCallId).map((m) => m.toolCallId));
  const voiceConfig = await voiceOf(session).catch(() => null);
  const voice = voiceConfig && voiceBar({ config: voiceConfig, frame: (obj) => frame(obj), line: (t, cls) => line(t, cls) });
  const log = h("div", { class: "log", role: "log", "aria-live": "polite", "aria-label": "Conversation" });
  const status = h("span", { class: "status", role: "status" }, "connecting…");
  // Several lines: Enter sends, Shift+Enter starts a new line.
  const input = h("textarea", { rows: 2, placeholder: "Write a message… (Shift+Enter for a new line)", "aria-label": "Message" });
  const send = h("button", { type: "submit" }, "Send");
  const composer = h("form", { class: "composer", "aria-label": "Send a message" }, input, send);
  const handoff = h("div", { class: "card", hidden: true, role: "region", "aria-label": "Human agent" });
  const panel = (title) => { const body = h("div"); return [h("section", { class: "card", "aria-label": title }, h("h2", {}, title), body), body]; };
  const [todoCard, todoBody] = panel("Todo list");
  const [varCard, varBody] = panel("Variables");
  const [goalCard, goalBody] = panel("Goals");
  const [loopCard, loopBody] = panel("Loops");
  const [treeCard, treeBody] = panel("Sub-agents");
  const [taskCard, taskBody] = panel("Tasks");
  taskCard.hidden = true;
  const taskView = taskDialog(sid);
  const flowSlot = h("div");
  const end = endButton(sid, () => {});
  end.hidden = session.status === "ended";
  page("Playground",
    h("p", {}, h("a", { href: `#/sessions/${encodeURIComponent(sid)}` }, sid), " · ", status,
      session.testMode ? [" · ", h("span", { class: "pill warn", title: "Tools answer their mock responses" }, "test mode")] : null, " ", end),
    flowSlot,
    h("div", { class: "play" },
      h("div", { class: "chat" }, voice ? voice.element : null, log, handoff, composer, voice ? voice.interim : null),
      h("div", { class: "panels" }, taskCard, todoCard, varCard, goalCard, loopCard, treeCard)),
    taskView.element);

  const goals = new Map();
  const loops = new Map();
  const bubbles = new Map();
  const cards = new Map();
  // Client calls waiting for an answer: callId → the box with the buttons.
  const waiting = new Map();
  let closed = false;
  // The host SDK keeps the socket: events once each and in order, resumed
  // after a dropped connection.
  const live = new RtcSession({
    sessionId: sid,
    token: key(),
    clientTools: Object.fromEntries(client.map((c) => [c.fn, {}])),
    hello: () => (voice ? { audio: voice.hello() } : {}),
  });

  const refresh = {
    todos: async () => todoBody.replaceChildren(todoPanel((await get(`/v1/sessions/${sid}/todos`)).todos)),
    vars: async () => varBody.replaceChildren(variablesPanel((await get(`/v1/sessions/${sid}/state`)).variables)),
    goals: async () => { (await list(`/v1/sessions/${sid}/goals`)).forEach((g) => goals.set(g.id, g)); goalBody.replaceChildren(goalsPanel([...goals.values()])); },
    loops: async () => { (await list(`/v1/sessions/${sid}/loops`)).forEach((l) => loops.set(l.id, l)); loopBody.replaceChildren(loopsPanel([...loops.values()])); },
    tree: async () => treeBody.replaceChildren(treePanel(await get(`/v1/sessions/${sid}/tree`))),
    tasks: (() => {
      // Answers may arrive out of order: only the latest asked is shown.
      let asked = 0;
      return async () => {
        const mine = ++asked;
        const tasks = await sessionTasks(sid);
        if (mine !== asked) return;
        taskCard.hidden = !tasks.length;
        taskBody.replaceChildren(tasksPanel(tasks, (t) => taskView.show(t), sid));
      };
    })(),
  };
  Object.values(refresh).forEach((f) => f().catch(() => {}));

  const scroll = () => { log.scrollTop = log.scrollHeight; };
  const line = (textValue, cls = "sysline") => { const el = h("div", { class: cls }, textValue); log.append(el); scroll(); return el; };
  const bubble = (id, role, content, label) => {
    let b = bubbles.get(id);
    if (!b) {
      const body = h("span", { class: "body" });
      b = h("div", { class: `msg ${role}`, dataset: { messageId: id } }, h("span", { class: "who" }, label || role), body);
      b.body = body;
      bubbles.set(id, b);
      log.append(b);
    }
    if (content !== undefined) b.body.textContent = content;
    scroll();
    return b;
  };
  const frame = (obj) => live.send(obj);

  function toolCard(e) {
    const card = h("div", { class: "toolcard", dataset: { callId: e.callId } },
      h("span", { class: "pill" }, "tool"), " ", h("strong", {}, e.name), h("pre", { class: "args" }, e.arguments || "{}"), h("div", { class: "result muted small" }, "running…"));
    cards.set(e.callId, card);
    log.append(card);
    scroll();
  }
  function toolProgress(e) {
    const card = cards.get(e.callId);
    if (!card) return;
    const done = e.total ? `${e.progress} / ${e.total}` : `${e.progress}`;
    const bar = e.total ? h("progress", { value: e.progress, max: e.total }) : null;
    card.querySelector(".result").replaceChildren(bar || "", ` running… ${done}`, e.message ? ` · ${e.message}` : "");
  }
  function toolDone(e) {
    let card = cards.get(e.callId);
    if (!card) { toolCard({ callId: e.callId, name: e.name, arguments: "" }); card = cards.get(e.callId); }
    card.classList.toggle("err", !!e.isError);
    const shown = e.cancelled ? "cancelled" : typeof e.result === "string" ? e.result : JSON.stringify(e.result, null, 2);
    card.querySelector(".result").replaceChildren(h("span", {}, e.isError ? "error: " : "result: "), h("pre", {}, shown ?? ""));
    // A client call answered elsewhere (another tab, or before a reload).
    waiting.get(e.callId)?.replaceChildren(h("div", { class: "muted small" }, e.isError ? "ended with an error (see the tool's card)" : "answered"));
    waiting.delete(e.callId);
  }

  function clientCall(e) {
    const mine = client.find((c) => c.fn === e.functionName);
    const card = h("div", { class: "toolcard", dataset: { callId: e.callId } },
      h("span", { class: "pill" }, "client tool"), " ", h("strong", {}, e.functionName), h("pre", {}, JSON.stringify(e.arguments, null, 2)));
    log.append(card);
    scroll();
    if (!e.waitForResponse) { card.append(h("div", { class: "muted small" }, "no result expected")); return; }
    if (answered.has(e.callId)) { card.append(h("div", { class: "muted small" }, "answered")); return; }
    if (mine && mine.mode === "auto") {
      let result;
      try { result = JSON.parse(mine.reply); } catch { result = mine.reply; }
      frame({ type: "client_tool.result", callId: e.callId, result });
      card.append(h("div", { class: "muted small" }, "answered automatically"));
      return;
    }
    const reply = area('{"ok": true}', { rows: 2, "aria-label": `Result for ${e.functionName}` });
    const answer = (isError) => {
      let payload;
      if (isError) payload = { type: "client_tool.result", callId: e.callId, error: reply.value };
      else { let r; try { r = JSON.parse(reply.value); } catch { r = reply.value; } payload = { type: "client_tool.result", callId: e.callId, result: r }; }
      frame(payload);
      waiting.delete(e.callId);
      box.replaceChildren(h("div", { class: "muted small" }, isError ? "answered with an error" : "answered"));
    };
    const box = h("div", {}, reply, h("div", { class: "actions" },
      h("button", { type: "button", onclick: () => answer(false) }, "Send result"),
      h("button", { type: "button", class: "ghost", onclick: () => answer(true) }, "Send error")));
    waiting.set(e.callId, box);
    card.append(box);
  }

  function question(e) {
    const q = h("div", { class: "question", role: "group", "aria-label": "Question from the assistant", dataset: { callId: e.callId } });
    if (e.subSessionTitle) q.append(h("div", { class: "status" }, `Sub-agent “${e.subSessionTitle}” asks:`));
    const picks = e.questions.map((qq) => {
      const chosen = new Set();
      const other = text("", { placeholder: "Other…", "aria-label": `Other answer to: ${qq.question}` });
      const chips = qq.options.map((o, i) => {
        const chip = h("button", { type: "button", class: "chip", "aria-pressed": "false", title: o.description }, `${i + 1}. ${o.label}`);
        chip.addEventListener("click", () => {
          if (!qq.multiSelect) { chosen.clear(); chips.forEach((c) => c.setAttribute("aria-pressed", "false")); }
          if (chosen.has(o.label)) { chosen.delete(o.label); chip.setAttribute("aria-pressed", "false"); }
          else { chosen.add(o.label); chip.setAttribute("aria-pressed", "true"); }
          if (!qq.multiSelect) other.value = "";
        });
        return chip;
      });
      q.append(h("div", {}, h("span", { class: "pill" }, qq.header), " ", h("strong", {}, qq.question), qq.multiSelect ? h("span", { class: "status" }, " (choose any)") : null),
        h("div", { class: "chips" }, chips), other);
      return () => {
        const extra = other.value.trim();
        const answers = [...chosen];
        if (extra) answers.push(extra);
        return qq.multiSelect ? answers : (extra || answers[0] || "");
      };
    });
    const err = h("p", { class: "error", role: "alert" });
    q.append(h("div", { class: "actions" }, h("button", { type: "button", onclick: () => {
      const answers = picks.map((p) => p());
      if (answers.some((a) => (Array.isArray(a) ? !a.length : !a))) { err.textContent = "Answer every question (pick an option or write your own)."; return; }
      frame({ type: "ask_user.answer", callId: e.callId, answers });
    } }, "Answer")), err);
    log.append(q);
    scroll();
  }

  function showHandoff() {
    const reply = area("", { class: "prose", rows: 2, "aria-label": "Reply as the human agent" });
    handoff.hidden = false;
    handoff.replaceChildren(h("strong", {}, "Handed off to a human agent"), h("p", { class: "hint" }, "Reply as the agent, then hand the conversation back to the model."),
      reply, h("div", { class: "actions" },
        h("button", { type: "button", onclick: async () => {
          if (!reply.value.trim()) return;
          try { await post(`/v1/sessions/${sid}/handoff/messages`, { text: reply.value }); reply.value = ""; } catch (e) { toast(`${e.code}: ${e.message}`); }
        } }, "Send as agent"),
        h("button", { type: "button", class: "ghost", onclick: async () => {
          try { await post(`/v1/sessions/${sid}/handoff/release`, {}); } catch (e) { toast(`${e.code}: ${e.message}`); }
        } }, "Hand back to the model")));
  }

  // A workflow session shows its graph with the current node above the chat.
  let flow = null;
  const pending = [];
  if (session.workflowId) {
    workflowPanel(session).then((panel) => {
      if (closed) return;
      flow = panel;
      flowSlot.replaceChildren(flow.card);
      pending.splice(0).forEach((e) => flow.onEvent(e));
    }).catch((e) => line(`workflow graph unavailable: ${e.message}`, "sysline bad"));
  }

  function onEvent(e) {
    if (voice && voice.onEvent(e)) return;
    switch (e.type) {
      case "session.started": line("session started"); break;
      case "turn.started": status.textContent = "thinking…"; break;
      case "turn.completed":
        if (!log.querySelector(".question")) status.textContent = e.interrupted ? "interrupted" : "idle";
        break;
      case "message.delta": {
        const role = e.role || "assistant";
        const b = bubble(e.messageId, role, undefined, e.source === "audio" ? `${role} · spoken` : role);
        b.body.textContent += e.delta;
        scroll();
        break;
      }
      case "message.completed": {
        const label = e.goalId ? "goal" : e.loopId ? "loop" : e.fromSessionId ? (e.role === "user" ? "sub-agent" : e.role) : e.role === "human_agent" ? "human agent" : e.role;
        const b = bubble(e.messageId, e.role, e.content, e.source === "audio" ? `${label} · spoken` : label);
        if (e.interrupted && !b.classList.contains("interrupted")) {
          b.classList.add("interrupted");
          b.append(h("span", { class: "pill" }, "interrupted"));
        }
        break;
      }
      case "message.truncated": {
        // A barge-in after the answer was stored: it is cut to what was heard.
        const b = bubble(e.messageId, "assistant", e.content);
        if (!b.classList.contains("interrupted")) { b.classList.add("interrupted"); b.append(h("span", { class: "pill" }, "interrupted")); }
        break;
      }
      case "tool.called": toolCard(e); break;
      case "tool.progress": toolProgress(e); break;
      case "tool.completed": toolDone(e); break;
      case "client_tool.call": clientCall(e); break;
      case "state.updated": varBody.replaceChildren(variablesPanel(e.variables)); break;
      case "todo.updated": todoBody.replaceChildren(todoPanel(e.todos)); break;
      case "goal.updated": goals.set(e.goal.id, e.goal); goalBody.replaceChildren(goalsPanel([...goals.values()])); break;
      case "loop.updated": loops.set(e.loop.id, e.loop); loopBody.replaceChildren(loopsPanel([...loops.values()])); break;
      case "subagent.started": case "subagent.completed":
        line(`sub-agent “${e.title}” ${e.type === "subagent.started" ? "started" : e.status}`);
        refresh.tree().catch(() => {});
        break;
      case "task.started": case "task.updated": case "task.completed":
        if (e.type === "task.started") line(`task “${e.title}” started on ${e.backendType}`);
        if (e.type === "task.completed") line(`task “${e.title}” ${e.status}`);
        refresh.tasks().catch((err) => line(`tasks unavailable: ${err.message}`, "sysline bad"));
        taskView.changed(e.taskId);
        break;
      case "ask_user.question": question(e); status.textContent = "waiting for your answer"; break;
      case "ask_user.answered": {
        log.querySelectorAll(`.question[data-call-id="${CSS.escape(e.callId)}"]`).forEach((q) => q.remove());
        line(e.dismissed ? "question dismissed" : `answered: ${(e.answers || []).join(" · ")}`);
        break;
      }
      case "handoff.requested": showHandoff(); line("handed off to a human agent"); break;
      case "handoff.released": handoff.hidden = true; line("back to the model"); break;
      case "turn.skipped": line("the model stayed silent"); break;
      case "context.compacted":
        line(`older messages summarized for the model: ${e.tokensBefore} → ${e.tokensAfter} tokens of ${e.contextWindow}`);
        break;
      case "session.ended":
        status.textContent = "ended";
        line(`session ended${e.reason ? `: ${e.reason}` : ""}`);
        input.disabled = true; send.disabled = true; end.hidden = true;
        break;
      case "error": line(`error ${e.code}: ${e.message}`, "sysline bad"); break;
      case "workflow.node_entered": case "workflow.evaluated": {
        if (!flow) { pending.push(e); break; }
        const said = flow.onEvent(e);
        if (said) line(said);
        break;
      }
      default: break;
    }
  }

  live.on("frame", (e) => { try { onEvent(e); } catch (err) { console.error(err); } });
  live.on("frame.error", (e) => onEvent({ type: "error", code: e.code, message: e.message }));
  live.on("status", (state) => {
    if (state === "open") status.textContent = "connected";
    else if (state === "reconnecting") status.textContent = "reconnecting…";
  });
  live.connect();

  input.addEventListener("keydown", (ev) => {
    if (ev.key === "Enter" && !ev.shiftKey && !ev.isComposing) {
      ev.preventDefault();
      composer.requestSubmit();
    }
  });
  composer.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const value = input.value.trim();
    if (!value) return;
    input.value = "";
    // A realtime answer is spoken: this click lets the page play it.
    if (voice) voice.unlock();
    if (!frame({ type: "user.message", text: value })) {
      try { await post(`/v1/sessions/${sid}/messages`, { text: value }); } catch (e) { toast(`${e.code}: ${e.message}`); }
    }
  });
  input.focus();
  return () => { closed = true; live.close(); if (voice) voice.close(); };
}

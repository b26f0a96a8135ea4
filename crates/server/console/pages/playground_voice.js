// The playground's voice bar for a session of a realtime assistant, or of
// a pipeline assistant with a voice (its `speech` block: the frames are the
// same shapes): the provider's ready state (dialect, rates), a Talk/Stop
// toggle streaming the microphone as `audio.append`, the assistant's
// `audio.delta` played back to back, and on `speech.started` the playback
// flushed and `playback.interrupted` sent for the item that was playing.
// A voice session also shows a streaming STT's `transcript.interim` under
// the input and each turn's latency figures. Counters of what was sent and
// heard (and the last turn's `latency`) are shown, and kept on
// `window.rtcVoice` for whoever debugs (or tests) the page.

import { get } from "../api.js";
import { h } from "../ui.js";
import { RealtimeAudio, microphoneUnavailable } from "../realtime_audio.js";

/** The rates a host may ask for in `client.hello`. */
const HOST_RATES = [16000, 24000];
const DIALECT_RATES = { openai: [24000, 24000], qwen: [16000, 24000], stepfun: [24000, 24000] };

/**
 * The voice settings of a session's assistant (or workflow), or null when
 * it has no voice: `kind` is `realtime` (the host asks for the provider's
 * own rates when it may, no resampling on the server, else 24 kHz) or
 * `speech`, a pipeline assistant with a `speech` block (the microphone at
 * 16 kHz, the answer at 24 kHz).
 */
export async function voiceOf(session) {
  const target = session.workflowId
    ? await get(`/v1/workflows/${encodeURIComponent(session.workflowId)}`)
    : await get(`/v1/assistants/${encodeURIComponent(session.assistantId)}`);
  if (target.runMode !== "realtime") {
    if (!target.speech) return null;
    return { kind: "speech", inputRate: 16000, outputRate: 24000, manualCommit: target.speech.turnDetection?.type === "none" };
  }
  let connection = null;
  if (target.realtimeInterfaceId) {
    connection = await get(`/v1/realtime-interfaces/${encodeURIComponent(target.realtimeInterfaceId)}`)
      .then((i) => i.connection || null, () => null);
  }
  const [dIn, dOut] = DIALECT_RATES[connection?.dialect] || [24000, 24000];
  const pick = (rate) => (HOST_RATES.includes(rate) ? rate : 24000);
  return {
    kind: "realtime",
    inputRate: pick(connection?.inputRate ?? dIn),
    outputRate: pick(connection?.outputRate ?? dOut),
    // Without turn detection the host says when the user is done.
    manualCommit: connection?.turnDetection?.type === "none",
  };
}

const seconds = (ms) => `${(ms / 1000).toFixed(1)} s`;

/**
 * A turn's latency figures as the playground shows them, e.g. "STT 140 ·
 * LLM 310 · TTS 95 · first audio 910 ms · server 6 ms"; the steps that did
 * not happen (null) are left out.
 */
export function latencyText(l) {
  const part = (label, v, unit = "") => (v === null || v === undefined ? null : `${label} ${v}${unit}`);
  return [part("STT", l.sttMs), part("LLM", l.llmTtftMs), part("TTS", l.ttsTtfbMs),
    part("first audio", l.firstAudioMs, " ms"), part("server", l.serverMs, " ms")].filter(Boolean).join(" · ");
}

/** All seven figures, for the readout's tooltip. */
const latencyTitle = (l) => Object.entries(l).map(([k, v]) => `${k}: ${v ?? "—"}`).join("\n");

/** The ready state's text of a realtime or voice session. */
function readyText(r) {
  const rates = `in ${r.inputRate} Hz · out ${r.outputRate} Hz`;
  if (!r.stt) return `ready · ${r.dialect} · ${rates}`;
  const side = (name, s, detail) => `${name} ${s.dialect}${detail ? ` (${detail})` : ""}`;
  return `ready · ${side("STT", r.stt, r.stt.model)} · ${side("TTS", r.tts, r.tts.voice)} · ${rates}`;
}

/**
 * The bar. `frame(obj)` sends a WebSocket frame (false when the socket is
 * not open); `line(text, cls)` writes to the conversation log.
 */
export function voiceBar({ config, frame, line }) {
  const audio = new RealtimeAudio();
  const rates = { inputRate: config.inputRate, outputRate: config.outputRate };
  const speech = config.kind === "speech";
  const state = speech
    ? h("span", { class: "status", role: "status", "aria-label": "Voice state" }, "waiting for the speech providers…")
    : h("span", { class: "status", role: "status", "aria-label": "Realtime state" }, "waiting for the realtime provider…");
  // What a streaming STT hears so far, shown under the input.
  const interim = h("div", { class: "status interim", role: "status", "aria-label": "Interim transcript", hidden: true });
  const setInterim = (t) => { interim.textContent = t || ""; interim.hidden = !t; };
  const talk = h("button", { type: "button", disabled: true, "aria-pressed": "false" }, "Talk");
  const meter = h("span", { class: "status", "aria-label": "Audio counters" });
  const element = h("section", { class: "card voice", "aria-label": "Voice" },
    h("strong", {}, "Voice"), state, talk, meter);
  const stats = {
    ready: null,
    appends: 0,
    sentMs: 0,
    deltas: 0,
    receivedMs: 0,
    interrupted: [],
    /** The last turn's latency figures (voice sessions). */
    latency: null,
    get chunksQueued() { return audio.player ? audio.player.chunks : 0; },
    get playedMs() { return audio.player ? audio.player.playedMs : 0; },
    get playing() { return !!audio.player && audio.player.busy; },
    /** Per provider item: `{receivedMs, heardMs}`. */
    items() {
      const p = audio.player;
      if (!p) return {};
      return Object.fromEntries([...p.received].map(([id, ms]) => [id, { receivedMs: ms, heardMs: p.heardMs(id) }]));
    },
  };
  window.rtcVoice = stats;
  const show = () => {
    meter.textContent = `sent ${seconds(stats.sentMs)} · received ${seconds(stats.receivedMs)} · heard ${seconds(stats.playedMs)}`;
  };
  const ticker = setInterval(show, 250);
  show();

  const setTalking = (on) => {
    talk.textContent = on ? "Stop" : "Talk";
    talk.setAttribute("aria-pressed", on ? "true" : "false");
  };
  async function start() {
    talk.disabled = true;
    try {
      await audio.startMicrophone({
        inputRate: rates.inputRate,
        onChunk: (b64, ms) => {
          if (!frame({ type: "audio.append", audio: b64 })) return;
          stats.appends += 1;
          stats.sentMs += ms;
        },
      });
      setTalking(true);
    } catch (e) {
      line(`microphone: ${e.message}`, "sysline bad");
    } finally {
      talk.disabled = !stats.ready;
    }
  }
  async function stop() {
    setTalking(false);
    await audio.stopMicrophone();
    // Without turn detection, the end of the audio ends the user's turn.
    if (config.manualCommit) frame({ type: "audio.commit" });
  }
  talk.addEventListener("click", () => (audio.talking ? stop() : start()));

  /** The user spoke: drop what is still to play and say how much was heard. */
  function bargeIn() {
    const cut = audio.player && audio.player.flush();
    if (!cut) return;
    stats.interrupted.push(cut);
    frame({ type: "playback.interrupted", itemId: cut.itemId, playedMs: cut.playedMs });
  }

  /** Handles the realtime events; returns true for those only it shows. */
  function onEvent(e) {
    switch (e.type) {
      case "session.realtime_ready":
      case "session.speech_ready": {
        stats.ready = e.stt
          ? { dialect: `${e.stt.dialect}/${e.tts.dialect}`, stt: e.stt, tts: e.tts, inputRate: e.inputRate, outputRate: e.outputRate }
          : { dialect: e.dialect, inputRate: e.inputRate, outputRate: e.outputRate };
        rates.inputRate = e.inputRate;
        rates.outputRate = e.outputRate;
        state.textContent = readyText(stats.ready);
        const why = microphoneUnavailable();
        talk.disabled = !!why;
        if (why) talk.title = why;
        return true;
      }
      case "speech.started":
        bargeIn();
        state.textContent = stats.ready ? `listening… · ${stats.ready.dialect}` : "listening…";
        return true;
      case "audio.delta": {
        const player = audio.player || (audio.unlock(), audio.player);
        stats.receivedMs += player.enqueue(e.itemId, e.audio, e.rate);
        stats.deltas += 1;
        return true;
      }
      case "speech.stopped":
        if (stats.ready) state.textContent = `thinking… · ${stats.ready.dialect}`;
        return true;
      case "transcript.interim":
        setInterim(e.text);
        return true;
      case "message.completed":
        if (audio.player && e.itemId && e.role === "assistant") audio.player.settle(e.itemId);
        if (e.role === "user") setInterim("");
        return false;
      case "turn.completed":
        if (audio.player) audio.player.settle();
        if (stats.ready) state.textContent = readyText(stats.ready);
        if (e.latency && typeof e.latency === "object") {
          stats.latency = e.latency;
          const said = latencyText(e.latency);
          const el = said && line(said, "sysline latency");
          if (el) { el.title = latencyTitle(e.latency); el.setAttribute("aria-label", `Latency: ${said}`); }
        }
        return false;
      case "session.ended":
        setInterim("");
        if (audio.talking) stop();
        talk.disabled = true;
        return false;
      default:
        return false;
    }
  }

  return {
    element,
    /** The interim transcript, to place under the input. */
    interim,
    /** The `audio` part of `client.hello`. */
    hello: () => ({ ...rates }),
    onEvent,
    /** Let the page play sound (call from a click). */
    unlock: () => audio.unlock(),
    close() { clearInterval(ticker); audio.close(); if (window.rtcVoice === stats) delete window.rtcVoice; },
  };
}

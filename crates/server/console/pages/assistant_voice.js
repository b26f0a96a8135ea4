// The assistant editor's Voice section (design voice-pipeline.md §4(a),
// §4(h)): a pipeline assistant's `speech` block — the STT and TTS
// interfaces it hears and speaks through, turn detection (type and
// silence; threshold, padding and the longest utterance under "More"),
// barge-in and the tool filler. "No voice" removes the block (the
// assistant is text only). Each input carries its API path
// (`speech.turnDetection.silenceDurationMs`, …) so a save's error is
// shown at it.

import { h, field, text, select, checkbox } from "../ui.js";

const TURN_DETECTION = [
  ["server_vad", "Voice activity detection on this server"],
  ["stt", "The STT's endpointing (Deepgram)"],
  ["none", "None: the host commits each utterance"],
];

// No min/max/step: the browser would refuse the form before the server
// could say which value is out of range (and the form has no novalidate).
const number = (value, attrs = {}) => h("input", { type: "number", step: "any", value: value ?? "", ...attrs });
const readNumber = (input) => (input.value.trim() === "" ? undefined : Number(input.value));

/** A picker of the interfaces of `kind` (a saved id no longer there stays, marked). */
function interfacePicker(interfaces, kind, value) {
  const own = interfaces.filter((i) => i.kind === kind).map((i) => [i.id, `${i.name} (${i.connection.dialect})`]);
  if (value && !own.some(([v]) => v === value)) {
    const other = interfaces.find((i) => i.id === value);
    own.unshift([value, other ? `${other.name} (${other.kind.toUpperCase()}, not ${kind.toUpperCase()})` : `${value} (not found)`]);
  }
  return select([["", `— choose an ${kind.toUpperCase()} interface —`], ...own], value || "");
}

/**
 * The Voice section for `speech` (the saved block, or undefined) with the
 * workspace's speech interfaces. `section.read()` gives the block to
 * save, or undefined for no voice; `section.showFor(runMode)` shows it
 * only for pipeline assistants.
 */
export function voiceSection(speech, interfaces) {
  const s = speech || {};
  const td = s.turnDetection || {};
  const bi = s.bargeIn || {};
  let on = !!speech;
  const stt = interfacePicker(interfaces, "stt", s.sttInterfaceId);
  const tts = interfacePicker(interfaces, "tts", s.ttsInterfaceId);
  const tdType = select(TURN_DETECTION, td.type || "server_vad");
  const silence = number(td.silenceDurationMs, { placeholder: "500" });
  const threshold = number(td.threshold, { placeholder: "0.5" });
  const padding = number(td.prefixPaddingMs, { placeholder: "300" });
  const maxUtterance = number(td.maxUtteranceMs, { placeholder: "30000" });
  const [bargeLabel, barge] = checkbox("The user can interrupt the assistant (barge-in)", bi.enabled !== false);
  const minSpeech = number(bi.minSpeechMs, { placeholder: "300" });
  const [fillerLabel, filler] = checkbox("Say something while slow tools run", !!s.toolFiller);
  const fillerAfter = number(s.toolFiller?.afterMs ?? 1500);
  const fillerText = text(s.toolFiller?.text ?? "One moment, please.");

  const none = () => (interfaces.length ? null : h("p", { class: "hint" }, "No speech interfaces yet: ", h("a", { href: "#/speech" }, "create an STT and a TTS interface on the Speech page"), "."));
  const silenceField = field("Silence that ends a turn (ms)", "speech.turnDetection.silenceDurationMs", silence, "100 to 5,000 (not used with None).");
  const thresholdField = field("Voice threshold (0–1)", "speech.turnDetection.threshold", threshold, "Server VAD: a frame at or above it is speech.");
  const paddingField = field("Audio kept before speech (ms)", "speech.turnDetection.prefixPaddingMs", padding, "Server VAD: 0 to 2,000.");
  const more = h("details", { class: "more" }, h("summary", {}, "More turn-taking settings"),
    h("div", { class: "row" }, thresholdField, paddingField,
      field("Longest utterance (ms)", "speech.turnDetection.maxUtteranceMs", maxUtterance, "1,000 to 120,000.")));
  const minSpeechField = field("Shortest speech that interrupts (ms)", "speech.bargeIn.minSpeechMs", minSpeech, "0 to 3,000; shorter noises never interrupt.");
  const fillerFields = h("div", { class: "row" },
    field("After (ms)", "speech.toolFiller.afterMs", fillerAfter, "0 to 30,000: spoken once per turn when tools take longer."),
    field("Filler text", "speech.toolFiller.text", fillerText, "1 to 500 characters."));
  const body = h("div", {},
    none(),
    h("div", { class: "row" },
      field("Speech to text (STT)", "speech.sttInterfaceId", stt, "Hears the user."),
      field("Text to speech (TTS)", "speech.ttsInterfaceId", tts, "Speaks the answers.")),
    h("div", { class: "row" }, field("Turn detection", "speech.turnDetection.type", tdType, "How the end of the user's turn is found."), silenceField),
    more,
    h("div", { class: "field", dataset: { field: "speech.bargeIn.enabled" } }, bargeLabel, h("p", { class: "error" })),
    minSpeechField,
    h("div", { class: "field", dataset: { field: "speech.toolFiller" } }, fillerLabel, h("p", { class: "error" })),
    fillerFields,
    h("div", { class: "actions" }, h("button", { type: "button", class: "ghost", onclick: () => { on = false; sync(); } }, "No voice")));
  const off = h("div", {},
    h("p", { class: "muted" }, "No voice: this assistant is text only."),
    none(),
    h("div", { class: "actions" }, h("button", { type: "button", class: "ghost", onclick: () => { on = true; sync(); } }, "Give it a voice")));
  const section = h("fieldset", { class: "card", "aria-label": "Voice" }, h("legend", {}, "Voice"),
    h("p", { class: "hint" }, "A pipeline assistant hears the user through an STT interface and speaks through a TTS interface."),
    h("div", { class: "field", dataset: { field: "speech" } }, h("p", { class: "error" })),
    body, off);
  function sync() {
    body.hidden = !on;
    off.hidden = on;
    // Values that are sent stay visible (an error may name them); the
    // filler's are sent only when it is on.
    fillerFields.hidden = !filler.checked;
  }
  filler.addEventListener("change", sync);
  sync();
  section.showFor = (runMode) => { section.hidden = runMode !== "pipeline"; };
  section.read = () => {
    if (!on) return undefined;
    // Every value is sent whatever the type (a hidden one is kept as saved).
    const turnDetection = {
      type: tdType.value, silenceDurationMs: readNumber(silence), threshold: readNumber(threshold),
      prefixPaddingMs: readNumber(padding), maxUtteranceMs: readNumber(maxUtterance),
    };
    const out = {
      sttInterfaceId: stt.value || undefined, ttsInterfaceId: tts.value || undefined, turnDetection,
      bargeIn: { enabled: barge.checked, minSpeechMs: readNumber(minSpeech) },
    };
    if (filler.checked) out.toolFiller = { afterMs: readNumber(fillerAfter), text: fillerText.value };
    // JSON drops the members left empty: the server's defaults apply.
    return JSON.parse(JSON.stringify(out));
  };
  return section;
}

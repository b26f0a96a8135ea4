// Speech interfaces (design voice-pipeline.md §4(a), §4(h)): the
// speech-to-text and text-to-speech providers a pipeline assistant hears
// and speaks through. The form shows the fields the chosen kind and
// dialect take (the design's table), the key as a {{secret__…}} picked
// from the workspace's secrets, errors at the field they name; espeak is
// admin only; Check asks the provider once and shows the latency, the
// audio length or the provider's error; Delete names the assistants that
// still use an interface.

import { get, list, post, del } from "../api.js";
import { h, page, field, text, area, select, showError, clearErrors, saveResource, toast, assistantLinks } from "../ui.js";

export const DIALECTS = {
  stt: [["openai", "OpenAI-compatible (HTTP)"], ["deepgram", "Deepgram (streaming)"]],
  tts: [["openai", "OpenAI-compatible (HTTP)"], ["elevenlabs", "ElevenLabs (streaming)"], ["espeak", "espeak-ng (local) — admin only"]],
};

const RATES_STT = [8000, 16000, 24000, 48000];

/**
 * What each kind and dialect takes (§4(a)'s table): per field, a hint
 * (which says whether it is required) and a placeholder; a field absent
 * here is not shown and not sent.
 */
const SPEC = {
  "stt openai": {
    url: ["Required. The base URL; /audio/transcriptions is appended.", "https://api.openai.com/v1"],
    model: ["Required.", "gpt-4o-mini-transcribe"],
    language: ["Optional, e.g. en or en-US.", "en"],
    sampleRate: [RATES_STT, 16000, "The rate of the WAV sent."],
    apiKey: ["Optional (a local server may need none). Sent as Authorization: Bearer."],
  },
  "stt deepgram": {
    url: ["Required. The base URL; /v1/listen is appended.", "wss://api.deepgram.com"],
    model: ["Optional; default nova-3.", "nova-3"],
    language: ["Optional, e.g. en-US.", "en-US"],
    sampleRate: [RATES_STT, 16000, "linear16 audio at this rate."],
    apiKey: ["Required. Sent as Authorization: Token."],
  },
  "tts openai": {
    url: ["Required. The base URL; /audio/speech is appended.", "https://api.openai.com/v1"],
    model: ["Required.", "gpt-4o-mini-tts"],
    voice: ["Required.", "marin"],
    sampleRate: [[24000], 24000, "pcm is 24 kHz; a wav's rate is read from its header."],
    format: true,
    apiKey: ["Optional (a local server may need none). Sent as Authorization: Bearer."],
    speed: ["Optional, 0.25 to 4.0.", "1.0", { min: 0.25, max: 4, step: 0.05 }],
    instructions: true,
  },
  "tts elevenlabs": {
    url: ["Required. The base URL; /v1/text-to-speech/{voice}/stream-input is appended.", "wss://api.elevenlabs.io"],
    model: ["Required (model_id).", "eleven_flash_v2_5"],
    voice: ["Required: the voice id.", "JBFqnCBsd6RMkjVDRZzb"],
    language: ["Optional (language_code), e.g. en.", "en"],
    sampleRate: [[8000, 16000, 22050, 24000, 44100], 24000, "PCM at this rate (pcm_<rate>)."],
    apiKey: ["Required. Sent as xi-api-key."],
    voiceSettings: true,
  },
  "tts espeak": {
    voice: ["Required: an espeak-ng voice (-v), letters, digits, _ + -.", "en-us"],
    sampleRate: [[22050], 22050, "espeak-ng speaks at 22,050 Hz."],
    speed: ["Optional, words per minute, 80 to 450.", "175", { min: 80, max: 450, step: 5 }],
  },
};

/** What a connection is, in a few words, for the list. */
function summary(c) {
  return [c.model, c.voice].filter(Boolean).join(" · ") || (c.dialect === "deepgram" ? "nova-3" : "");
}

export async function speechPage() {
  const items = await list("/v1/speech-interfaces");
  page("Speech interfaces",
    h("p", { class: "muted" }, "The speech-to-text (STT) and text-to-speech (TTS) providers a pipeline assistant hears and speaks through. Give an assistant a voice in its Voice section."),
    h("div", { class: "actions" }, h("a", { href: "#/speech/new" }, h("button", { type: "button", tabindex: -1 }, "New speech interface"))),
    items.length ? h("table", { "aria-label": "Speech interfaces" },
      h("thead", {}, h("tr", {}, h("th", {}, "Name"), h("th", {}, "Kind"), h("th", {}, "Dialect"), h("th", {}, "Model / voice"))),
      h("tbody", {}, items.map((i) => h("tr", { dataset: { id: i.id } },
        h("td", {}, h("a", { href: `#/speech/${encodeURIComponent(i.id)}` }, i.name)),
        h("td", {}, h("span", { class: "pill" }, i.kind.toUpperCase())),
        h("td", {}, i.connection.dialect, i.connection.dialect === "espeak" ? [" ", h("span", { class: "pill warn" }, "admin only")] : null),
        h("td", { class: "small" }, summary(i.connection))))))
      : h("p", { class: "muted" }, "No speech interfaces yet."));
}

const number = (value, attrs = {}) => h("input", { type: "number", value: value ?? "", ...attrs });
const readNumber = (input) => (input.value.trim() === "" ? undefined : Number(input.value));

/** The key picker: the workspace's secrets as {{secret__…}} references
 * (a saved reference to a secret since deleted stays, marked). */
function secretPicker(value, secrets) {
  const refs = secrets.map((s) => [`{{${s.name}}}`, `{{${s.name}}}`]);
  if (value && !refs.some(([r]) => r === value)) refs.unshift([value, `${value} (not found)`]);
  return select([["", "— no key —"], ...refs], value || "");
}

/**
 * The connection's fields, shown as the kind and dialect take them.
 * `read()` gives the `connection` object with only those fields.
 */
function connectionFields(conn, kind, secrets) {
  const vs = conn.voiceSettings || {};
  const dialect = select(DIALECTS[kind.value], conn.dialect);
  const url = text(conn.url);
  const model = text(conn.model);
  const voice = text(conn.voice);
  const language = text(conn.language);
  const sampleRate = select([], "");
  const format = select([["pcm", "pcm (24 kHz PCM16)"], ["wav", "wav"]], conn.format || "pcm");
  const apiKey = secretPicker(conn.apiKey, secrets);
  const speed = number(conn.speed);
  const instructions = area(conn.instructions || "", { rows: 2, placeholder: "Speak warmly and briskly." });
  const stability = number(vs.stability, { min: 0, max: 1, step: 0.05, placeholder: "provider default" });
  const similarity = number(vs.similarityBoost, { min: 0, max: 1, step: 0.05, placeholder: "provider default" });
  const vsSpeed = number(vs.speed, { min: 0.7, max: 1.2, step: 0.05, placeholder: "1.0" });
  const f = {
    url: field("URL", "connection.url", url, " "),
    model: field("Model", "connection.model", model, " "),
    voice: field("Voice", "connection.voice", voice, " "),
    language: field("Language", "connection.language", language, " "),
    sampleRate: field("Sample rate (Hz)", "connection.sampleRate", sampleRate, " "),
    format: field("Audio format", "connection.format", format, "What the provider answers with."),
    apiKey: field("API key", "connection.apiKey", apiKey, " "),
    speed: field("Speed", "connection.speed", speed, " "),
    instructions: field("Instructions", "connection.instructions", instructions, "How to speak (not for tts-1 models)."),
    voiceSettings: h("fieldset", { class: "field", dataset: { field: "connection.voiceSettings" } }, h("legend", {}, "Voice settings"),
      h("div", { class: "row" },
        field("Stability (0–1)", "connection.voiceSettings.stability", stability),
        field("Similarity boost (0–1)", "connection.voiceSettings.similarityBoost", similarity),
        field("Voice speed (0.7–1.2)", "connection.voiceSettings.speed", vsSpeed)),
      h("p", { class: "error" })),
  };
  const keyNote = h("p", { class: "hint" }, secrets.length
    ? ["The key is a secret of this workspace, sent to the provider only. ", h("a", { href: "#/secrets" }, "Add one on the Secrets page.")]
    : ["No secrets yet: ", h("a", { href: "#/secrets" }, "add the provider's key on the Secrets page"), " first."]);
  f.apiKey.querySelector(".hint").after(keyNote);
  const adminNote = h("div", { class: "banner warn", role: "note" },
    h("strong", {}, "Admin only. "), "espeak-ng runs on this server: only the admin token may create, change or delete an espeak interface; a workspace key is refused. No URL, model or key: the voice and speed are all it takes.");
  const dialectField = field("Dialect", "connection.dialect", dialect);
  let spec = {};
  function sync() {
    // The dialects offered follow the kind.
    const offered = DIALECTS[kind.value];
    if (!offered.some(([d]) => d === dialect.value)) {
      dialect.replaceChildren(...offered.map(([v, l]) => h("option", { value: v }, l)));
      dialect.value = offered[0][0];
    } else if (dialect.options.length !== offered.length) {
      const keep = dialect.value;
      dialect.replaceChildren(...offered.map(([v, l]) => h("option", { value: v }, l)));
      dialect.value = keep;
    }
    spec = SPEC[`${kind.value} ${dialect.value}`];
    for (const [name, el] of Object.entries(f)) el.hidden = !spec[name];
    adminNote.hidden = dialect.value !== "espeak";
    for (const name of ["url", "model", "voice", "language", "apiKey", "speed"]) {
      const s = spec[name];
      if (!s) continue;
      f[name].querySelector(".hint").textContent = s[0];
      const input = f[name].querySelector("input, select");
      if (s[1]) input.placeholder = s[1];
      if (s[2]) Object.entries(s[2]).forEach(([k, v]) => input.setAttribute(k, v));
    }
    f.speed.querySelector("label").textContent = dialect.value === "espeak" ? "Speed (words per minute)" : "Speed";
    if (spec.sampleRate) {
      const [rates, dflt, hint] = spec.sampleRate;
      const was = sampleRate.value || (conn.sampleRate ? String(conn.sampleRate) : "");
      sampleRate.replaceChildren(h("option", { value: "" }, `default (${dflt})`), ...rates.map((r) => h("option", { value: String(r) }, String(r))));
      sampleRate.value = rates.map(String).includes(was) ? was : "";
      f.sampleRate.querySelector(".hint").textContent = hint;
    }
  }
  kind.addEventListener("change", sync);
  dialect.addEventListener("change", sync);
  sync();
  const element = h("fieldset", { class: "card" }, h("legend", {}, "Connection"),
    dialectField, adminNote,
    f.url, h("div", { class: "row" }, f.model, f.voice, f.language), h("div", { class: "row" }, f.sampleRate, f.format, f.speed),
    f.apiKey, f.instructions, f.voiceSettings);
  function read() {
    const out = { dialect: dialect.value };
    const put = (k, v) => { if (v !== undefined && v !== "") out[k] = v; };
    if (spec.url) put("url", url.value.trim());
    if (spec.model) put("model", model.value.trim());
    if (spec.voice) put("voice", voice.value.trim());
    if (spec.language) put("language", language.value.trim());
    if (spec.sampleRate) put("sampleRate", readNumber(sampleRate));
    if (spec.format) put("format", format.value);
    if (spec.apiKey) put("apiKey", apiKey.value);
    if (spec.speed) put("speed", readNumber(speed));
    if (spec.instructions) put("instructions", instructions.value.trim());
    if (spec.voiceSettings) {
      const s = JSON.parse(JSON.stringify({ stability: readNumber(stability), similarityBoost: readNumber(similarity), speed: readNumber(vsSpeed) }));
      if (Object.keys(s).length) out.voiceSettings = s;
    }
    return out;
  }
  return { element, read, dialect };
}

/** What a check answered, in words. */
function checkLine(kind, r) {
  const n = (x) => Number(x).toLocaleString("en-US");
  if (!r.ok) return `Failed after ${n(r.latencyMs)} ms: ${r.error || "the provider gave no answer"}`;
  if (kind === "tts") {
    return `OK · first audio in ${n(r.latencyMs)} ms${r.audioMs != null ? ` · "This is a test." is ${n(r.audioMs)} ms of audio` : ""}`;
  }
  return `OK · transcript of 1 s of silence in ${n(r.latencyMs)} ms`;
}

/** The Check panel: one request to the provider through the saved interface. */
function checkPanel(iface) {
  const out = h("div", { role: "status", "aria-label": "Check result", "aria-live": "polite", class: "check-result" });
  const button = h("button", { type: "button", class: "ghost" }, "Check");
  button.addEventListener("click", async () => {
    button.disabled = true;
    out.replaceChildren(h("p", { class: "muted" }, iface.kind === "tts" ? "Asking the provider to say \"This is a test.\"…" : "Sending 1 s of silence to the provider…"));
    try {
      const r = await post(`/v1/speech-interfaces/${encodeURIComponent(iface.id)}/check`, {});
      out.replaceChildren(h("div", { class: `banner ${r.ok ? "ok" : "bad"}`, dataset: { ok: String(r.ok) } },
        h("span", { class: `pill ${r.ok ? "ok" : "bad"}` }, r.ok ? "ok" : "failed"), " ", h("span", { class: "check-line" }, checkLine(iface.kind, r)),
        r.ok && iface.kind === "tts" ? h("p", { class: "hint" }, "The check reports the audio's length; hear the voice in the playground.") : null));
    } catch (e) {
      out.replaceChildren(h("div", { class: "banner bad", role: "alert" }, h("strong", {}, e.code), `: ${e.message}`));
    } finally {
      button.disabled = false;
    }
  });
  return h("section", { class: "card", "aria-label": "Check" }, h("h2", {}, "Check"),
    h("p", { class: "hint" }, iface.kind === "tts"
      ? "Asks the provider to say \"This is a test.\" with the saved settings: the time to the first audio and the audio's length, or the provider's error."
      : "Sends 1 s of silence with the saved settings: the time to the transcript, or the provider's error."),
    h("div", { class: "actions" }, button), out);
}

/** The assistants whose voice names interface `id`. */
const usersOf = (assistants, id) => assistants.filter((a) => a.speech && (a.speech.sttInterfaceId === id || a.speech.ttsInterfaceId === id));

export async function speechEditor(id) {
  const isNew = id === "new";
  const [iface, secrets, assistants] = await Promise.all([
    isNew ? Promise.resolve({ name: "", kind: "tts", connection: { dialect: "openai" } }) : get(`/v1/speech-interfaces/${encodeURIComponent(id)}`),
    list("/v1/secrets"),
    isNew ? Promise.resolve([]) : list("/v1/assistants").catch(() => []),
  ]);
  const newId = text("", { placeholder: "optional, e.g. dg-nova3" });
  const name = text(iface.name, { placeholder: "Deepgram Nova-3" });
  const kind = select([["stt", "STT — speech to text (hears)"], ["tts", "TTS — text to speech (speaks)"]], iface.kind);
  const connection = connectionFields(iface.connection || { dialect: "openai" }, kind, secrets);
  const users = usersOf(assistants, id);
  const deleteNote = h("div", { "aria-live": "polite" });
  const form = h("form", { "aria-label": "Speech interface", novalidate: true },
    h("fieldset", { class: "card" }, h("legend", {}, "Basics"),
      isNew ? field("Id", "id", newId) : null,
      h("div", { class: "row" }, field("Name", "name", name), field("Kind", "kind", kind)),
      users.length ? h("p", { class: "hint" }, "Used by: ", assistantLinks(users)) : null),
    connection.element,
    h("div", { class: "actions" }, h("button", { type: "submit" }, isNew ? "Create speech interface" : "Save"),
      isNew ? null : h("button", { type: "button", class: "danger", onclick: remove }, "Delete")),
    deleteNote);

  async function remove() {
    if (!confirm("Delete this speech interface?")) return;
    clearErrors(form);
    deleteNote.replaceChildren();
    try {
      await del(`/v1/speech-interfaces/${encodeURIComponent(id)}`);
      toast("Speech interface deleted");
      location.hash = "#/speech";
    } catch (e) {
      if (e.code !== "in_use") return showError(form, adminNoted(e));
      // Who uses it, as the list of assistants now says.
      const now = usersOf(await list("/v1/assistants").catch(() => []), id);
      deleteNote.replaceChildren(h("div", { class: "banner bad", role: "alert", "aria-label": "In use" },
        h("strong", {}, "Not deleted: in use. "), e.message,
        now.length ? h("p", {}, "Used by ", assistantLinks(now),
          ". Remove the voice from these assistants (or pick another interface) first.") : null));
    }
  }

  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    clearErrors(form);
    const body = { name: name.value.trim(), kind: kind.value, connection: connection.read() };
    if (isNew && newId.value.trim()) body.id = newId.value.trim();
    try {
      await saveResource({ collection: "/v1/speech-interfaces", route: "speech", id, body, what: "Speech interface", redraw: speechEditor });
    } catch (e) { showError(form, adminNoted(e)); }
  });
  page(isNew ? "New speech interface" : `Speech interface ${iface.name}`, form, isNew ? null : checkPanel(iface));
}

/** A 403 for espeak names no field: shown at the dialect (its message says why). */
function adminNoted(e) {
  if (e.code !== "stdio_requires_admin") return e;
  const out = new Error(e.message.charAt(0).toUpperCase() + e.message.slice(1));
  out.code = e.code;
  out.field = "connection.dialect";
  return out;
}

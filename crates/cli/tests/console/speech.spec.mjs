// Speech interfaces and an assistant's voice in a real browser (design
// voice-pipeline.md §4(h)). The Speech page lists the interfaces (espeak
// marked admin only); the form shows the fields each kind and dialect
// take; an espeak interface is refused to a workspace key, said at the
// dialect; an OpenAI TTS (a missing model shown at its field, then made)
// and a Deepgram STT are made against the testkit's mocks with keys picked
// from the workspace's secrets; Check shows the latency and the audio's
// length, and for a wrong key the provider's error without the key. A
// pipeline assistant gets a voice (a bad silence at its field), saved and
// shown again after a reload; the Voice section hides for realtime. An
// interface in use is not deleted (the assistant named), until "No voice"
// took it off that assistant. The Rust side checks what was saved.

import assert from "node:assert/strict";
import { scenario } from "./lib.mjs";

const OPENAI_URL = process.env.OPENAI_URL;
const DEEPGRAM_URL = process.env.DEEPGRAM_URL;
const WRONG_KEY = process.env.WRONG_KEY;

await scenario("speech", async (t) => {
  const { page } = t;
  page.on("dialog", (d) => d.accept());
  await t.signIn();
  const visible = (label) => page.getByLabel(label, { exact: true }).isVisible();
  const newInterface = async () => {
    await page.getByRole("link", { name: "Speech", exact: true }).click();
    await page.getByRole("heading", { name: "Speech interfaces" }).waitFor();
    await page.getByRole("button", { name: "New speech interface" }).click();
    await page.getByRole("heading", { name: "New speech interface" }).waitFor();
  };

  t.step = "the Speech page lists the interfaces, espeak marked admin only";
  await page.getByRole("link", { name: "Speech", exact: true }).click();
  await page.getByRole("heading", { name: "Speech interfaces" }).waitFor();
  await page.getByRole("row", { name: /Broken TTS/ }).getByText("gpt-4o-mini-tts · marin").waitFor();
  await page.getByRole("row", { name: /Local espeak/ }).getByText("admin only").waitFor();
  await t.shot("01-list");

  t.step = "the form's fields follow the kind and the dialect";
  await page.getByRole("button", { name: "New speech interface" }).click();
  await page.getByRole("heading", { name: "New speech interface" }).waitFor();
  assert.equal(await page.getByLabel("Kind").inputValue(), "tts");
  assert.equal(await page.getByLabel("Dialect").inputValue(), "openai");
  for (const l of ["URL", "Model", "Voice", "Audio format", "API key", "Speed", "Instructions"]) assert.ok(await visible(l), `${l} for OpenAI TTS`);
  for (const l of ["Language", "Stability (0–1)"]) assert.ok(!(await visible(l)), `no ${l} for OpenAI TTS`);
  assert.deepEqual(await page.getByLabel("Sample rate (Hz)").locator("option").allInnerTexts(), ["default (24000)", "24000"], "OpenAI's PCM is 24 kHz");
  await page.getByLabel("Dialect").selectOption("elevenlabs");
  for (const l of ["URL", "Model", "Voice", "Language", "Sample rate (Hz)", "API key", "Stability (0–1)", "Voice speed (0.7–1.2)"]) assert.ok(await visible(l), `${l} for ElevenLabs`);
  for (const l of ["Audio format", "Speed", "Instructions"]) assert.ok(!(await visible(l)), `no ${l} for ElevenLabs`);
  await page.getByLabel("Kind").selectOption("stt");
  const sttDialects = await page.getByLabel("Dialect").locator("option").evaluateAll((os) => os.map((o) => o.value));
  assert.deepEqual(sttDialects, ["openai", "deepgram"]);
  await page.getByLabel("Dialect").selectOption("deepgram");
  for (const l of ["URL", "Model", "Language", "Sample rate (Hz)", "API key"]) assert.ok(await visible(l), `${l} for Deepgram`);
  for (const l of ["Voice", "Audio format", "Speed"]) assert.ok(!(await visible(l)), `no ${l} for Deepgram`);

  t.step = "espeak: admin only, refused to a workspace key at the dialect";
  await page.getByLabel("Kind").selectOption("tts");
  await page.getByLabel("Dialect").selectOption("espeak");
  await page.getByRole("note").filter({ hasText: "Admin only." }).waitFor();
  for (const l of ["URL", "Model", "API key", "Language"]) assert.ok(!(await visible(l)), `no ${l} for espeak`);
  await page.getByLabel("Name", { exact: true }).fill("Console espeak");
  await page.getByLabel("Voice", { exact: true }).fill("en-us");
  await page.getByRole("button", { name: "Create speech interface" }).click();
  await t.fieldError("connection.dialect").filter({ hasText: "admin token" }).waitFor();
  await page.getByRole("alert").filter({ hasText: "stdio_requires_admin" }).waitFor();
  await t.shot("02-espeak-admin-only");

  t.step = "an OpenAI TTS: a missing model is shown at its field";
  await page.getByLabel("Dialect").selectOption("openai");
  await page.getByLabel("Name", { exact: true }).fill("OpenAI TTS");
  await page.getByLabel("URL").fill(OPENAI_URL);
  await page.getByLabel("Voice", { exact: true }).fill("marin");
  await page.getByLabel("Speed", { exact: true }).fill("1.25");
  const keys = await page.getByLabel("API key").locator("option").allInnerTexts();
  assert.ok(keys.includes("{{secret__openai_speech}}") && keys.includes("{{secret__deepgram}}"), `the workspace's secrets are offered: ${keys}`);
  await page.getByLabel("API key").selectOption("{{secret__openai_speech}}");
  await page.getByRole("button", { name: "Create speech interface" }).click();
  await t.fieldError("connection.model").waitFor();
  assert.equal(await page.getByLabel("Model").getAttribute("aria-invalid"), "true");
  await t.shot("03-missing-model");
  await page.getByLabel("Model").fill("gpt-4o-mini-tts");
  await page.getByRole("button", { name: "Create speech interface" }).click();
  await page.getByRole("heading", { name: "Speech interface OpenAI TTS" }).waitFor();
  assert.equal(await page.getByLabel("API key").inputValue(), "{{secret__openai_speech}}", "the key stays a reference");

  t.step = "Check of the TTS: the latency and the audio's length";
  const result = page.getByRole("status", { name: "Check result" });
  await page.getByRole("button", { name: "Check", exact: true }).click();
  const spoke = result.getByText(/^OK · first audio in [\d,]+ ms · "This is a test\." is [\d,]+ ms of audio$/);
  await spoke.waitFor();
  // The mock speaks 20 ms per non-whitespace character: 12 of them.
  const audioMs = Number((await spoke.innerText()).match(/is ([\d,]+) ms of audio/)[1].replace(/,/g, ""));
  assert.ok(Math.abs(audioMs - 240) <= 5, `the mock's 240 ms of audio (${audioMs})`);
  await t.shot("04-tts-checked");

  t.step = "a Deepgram STT made and checked";
  await newInterface();
  await page.getByLabel("Kind").selectOption("stt");
  await page.getByLabel("Dialect").selectOption("deepgram");
  await page.getByLabel("Name", { exact: true }).fill("Deepgram STT");
  await page.getByLabel("URL").fill(DEEPGRAM_URL);
  assert.equal(await page.getByLabel("Model").getAttribute("placeholder"), "nova-3");
  await page.getByLabel("Language").fill("en-US");
  await page.getByLabel("Sample rate (Hz)").selectOption("16000");
  await page.getByLabel("API key").selectOption("{{secret__deepgram}}");
  await page.getByRole("button", { name: "Create speech interface" }).click();
  await page.getByRole("heading", { name: "Speech interface Deepgram STT" }).waitFor();
  await page.getByRole("button", { name: "Check", exact: true }).click();
  await result.getByText(/^OK · transcript of 1 s of silence in [\d,]+ ms$/).waitFor({ timeout: 20000 });
  await t.shot("05-stt-checked");

  t.step = "a failing Check shows the provider's error, not the key";
  await page.getByRole("link", { name: "Speech", exact: true }).click();
  await page.getByRole("link", { name: "Broken TTS" }).click();
  await page.getByRole("heading", { name: "Speech interface Broken TTS" }).waitFor();
  await page.getByRole("button", { name: "Check", exact: true }).click();
  await result.locator('[data-ok="false"]').waitFor();
  const failed = await result.innerText();
  assert.match(failed, /failed\s+Failed after [\d,]+ ms: .+/);
  assert.ok(!failed.includes(WRONG_KEY), `the key is scrubbed: ${failed}`);
  await t.shot("06-check-failed");

  t.step = "a pipeline assistant gets a voice: pickers of the right kind";
  await page.getByRole("link", { name: "Assistants", exact: true }).click();
  await page.getByRole("link", { name: "Receptionist" }).click();
  await page.getByRole("heading", { name: "Assistant Receptionist" }).waitFor();
  const voice = page.getByRole("group", { name: "Voice", exact: true });
  await voice.getByText("No voice: this assistant is text only.").waitFor();
  await voice.getByRole("button", { name: "Give it a voice" }).click();
  const stts = await voice.getByLabel("Speech to text (STT)").locator("option").allInnerTexts();
  const ttss = await voice.getByLabel("Text to speech (TTS)").locator("option").allInnerTexts();
  assert.ok(stts.includes("Deepgram STT (deepgram)") && !stts.some((o) => o.includes("OpenAI TTS")), `STT interfaces only: ${stts}`);
  assert.ok(ttss.includes("OpenAI TTS (openai)") && !ttss.some((o) => o.includes("Deepgram")), `TTS interfaces only: ${ttss}`);
  await voice.getByLabel("Speech to text (STT)").selectOption({ label: "Deepgram STT (deepgram)" });
  await voice.getByLabel("Text to speech (TTS)").selectOption({ label: "OpenAI TTS (openai)" });
  await voice.getByLabel("Turn detection").selectOption("stt");

  t.step = "the Voice section is for pipeline assistants only";
  await page.getByLabel("Run mode").selectOption("realtime");
  assert.ok(!(await voice.isVisible()), "hidden for realtime");
  await page.getByLabel("Run mode").selectOption("pipeline");
  await voice.waitFor();

  t.step = "a silence out of range is shown at its field";
  await voice.getByLabel("Silence that ends a turn (ms)").fill("50");
  await page.getByRole("button", { name: "Save", exact: true }).click();
  await t.fieldError("speech.turnDetection.silenceDurationMs").waitFor();
  assert.equal(await voice.getByLabel("Silence that ends a turn (ms)").getAttribute("aria-invalid"), "true");
  await t.shot("07-silence-error");

  t.step = "the voice saved, and shown again after a reload";
  await voice.getByLabel("Silence that ends a turn (ms)").fill("700");
  await voice.getByText("More turn-taking settings").click();
  await voice.getByLabel("Longest utterance (ms)").fill("20000");
  await voice.getByLabel("Shortest speech that interrupts (ms)").fill("250");
  await voice.getByLabel("Say something while slow tools run").check();
  await voice.getByLabel("After (ms)").fill("800");
  await voice.getByLabel("Filler text").fill("One moment.");
  await page.getByRole("button", { name: "Save", exact: true }).click();
  await page.getByText("Assistant Receptionist saved").waitFor();
  await page.reload();
  await page.getByRole("heading", { name: "Assistant Receptionist" }).waitFor();
  assert.equal(await voice.getByLabel("Speech to text (STT)").locator("option:checked").innerText(), "Deepgram STT (deepgram)");
  assert.equal(await voice.getByLabel("Text to speech (TTS)").locator("option:checked").innerText(), "OpenAI TTS (openai)");
  assert.equal(await voice.getByLabel("Turn detection").inputValue(), "stt");
  assert.equal(await voice.getByLabel("Silence that ends a turn (ms)").inputValue(), "700");
  assert.equal(await voice.getByLabel("Shortest speech that interrupts (ms)").inputValue(), "250");
  assert.ok(await voice.getByLabel("The user can interrupt the assistant (barge-in)").isChecked());
  assert.equal(await voice.getByLabel("Filler text").inputValue(), "One moment.");
  await t.shot("08-voice-reloaded");
  await page.getByRole("link", { name: "Assistants", exact: true }).click();
  await page.getByRole("row", { name: /Receptionist/ }).getByText("voice", { exact: true }).waitFor();

  t.step = "an interface in use is not deleted: the assistant is named";
  await page.getByRole("link", { name: "Speech", exact: true }).click();
  await page.getByRole("link", { name: "Old STT" }).click();
  await page.getByRole("heading", { name: "Speech interface Old STT" }).waitFor();
  await page.getByRole("button", { name: "Delete" }).click();
  const inUse = page.getByRole("alert", { name: "In use" });
  await inUse.getByText("Not deleted: in use.").waitFor();
  await t.shot("09-in-use");

  t.step = "No voice takes the interface off the assistant; then it can go";
  await inUse.getByRole("link", { name: "Spare" }).click();
  await page.getByRole("heading", { name: "Assistant Spare" }).waitFor();
  await voice.getByRole("button", { name: "No voice" }).click();
  await voice.getByText("No voice: this assistant is text only.").waitFor();
  await page.getByRole("button", { name: "Save", exact: true }).click();
  await page.getByText("Assistant Spare saved").waitFor();
  await page.reload();
  await voice.getByText("No voice: this assistant is text only.").waitFor();
  await page.getByRole("link", { name: "Speech", exact: true }).click();
  await page.getByRole("link", { name: "Old STT" }).click();
  await page.getByRole("heading", { name: "Speech interface Old STT" }).waitFor();
  await page.getByRole("button", { name: "Delete" }).click();
  await page.getByRole("heading", { name: "Speech interfaces" }).waitFor();
  await page.getByRole("row", { name: /Deepgram STT/ }).waitFor();
  assert.equal(await page.getByRole("link", { name: "Old STT" }).count(), 0);
  await t.shot("10-deleted");
});

// The realtime playground: Chromium's fake microphone plays MIC_WAV (a
// tone, then silence) into a session of a realtime assistant whose
// interface points at the mock realtime provider. The interface's
// connection is shown and edited in its form; in the playground the
// provider's ready state is shown, Talk streams the microphone, the user's
// and the assistant's transcripts appear, and the answer's audio is
// played to its end through Web Audio (the page's counters on
// `window.rtcVoice`). A typed message then has the model call an HTTP
// tool (its card with the result) and answer aloud. The Rust side checks
// the mock's log.

import assert from "node:assert/strict";
import { scenario } from "./lib.mjs";

const MIC_WAV = process.env.MIC_WAV;
const PROVIDER_URL = process.env.PROVIDER_URL;
const USER_TEXT = process.env.USER_TEXT;
const ASSISTANT_TEXT = process.env.ASSISTANT_TEXT;
const AUDIO_MS = Number(process.env.AUDIO_MS);

scenario("realtime", async (t) => {
  const { page } = t;
  t.step = "sign in";
  await t.signIn();

  t.step = "the interface's connection is shown and edited in its form";
  await page.getByRole("link", { name: "Realtime", exact: true }).click();
  await page.getByRole("row", { name: /Mock Realtime/ }).getByText("openai · mock-realtime").waitFor();
  await page.getByRole("link", { name: "Mock Realtime" }).click();
  await page.getByRole("heading", { name: "Realtime interface Mock Realtime" }).waitFor();
  assert.equal(await page.getByLabel("URL").inputValue(), PROVIDER_URL);
  assert.equal(await page.getByLabel("API key").inputValue(), "{{secret__mock_realtime_key}}");
  // A key typed in the clear is refused at its field, before any request.
  await page.getByLabel("API key").fill("sk-live-0123456789");
  await page.getByRole("button", { name: "Save" }).click();
  await t.fieldError("connection.apiKey").filter({ hasText: "{{secret__name}} reference" }).waitFor();
  await page.getByLabel("API key").fill("{{secret__mock_realtime_key}}");
  await page.getByLabel("Voice").fill("verse");
  await page.getByRole("button", { name: "Save" }).click();
  await page.getByText("Realtime interface Mock Realtime saved").waitFor();

  t.step = "a session of the realtime assistant: the provider is ready";
  await t.startSession("Voice desk", () => page.getByLabel("tenant_id (string)").fill("acme"));
  const state = page.getByRole("status", { name: "Realtime state" });
  await state.filter({ hasText: "ready · openai · in 24000 Hz · out 24000 Hz" }).waitFor();
  await t.shot("ready");

  t.step = "Talk streams the microphone";
  await page.getByRole("button", { name: "Talk" }).click();
  await page.getByRole("button", { name: "Stop", pressed: true }).waitFor();

  t.step = "the user's spoken transcript";
  await page.locator(".msg.user", { hasText: USER_TEXT }).getByText("user · spoken").waitFor({ timeout: 20000 });

  t.step = "the assistant's spoken transcript";
  await page.locator(".msg.assistant", { hasText: ASSISTANT_TEXT }).waitFor({ timeout: 20000 });

  t.step = "the answer's audio is played to its end";
  await page.waitForFunction((ms) => {
    const v = globalThis.rtcVoice;
    return v && v.receivedMs >= ms - 1 && !v.playing && v.playedMs >= v.receivedMs - 1;
  }, AUDIO_MS, { timeout: 20000 });
  const stats = await page.evaluate(() => {
    const v = globalThis.rtcVoice;
    return { appends: v.appends, sentMs: v.sentMs, deltas: v.deltas, receivedMs: v.receivedMs, playedMs: v.playedMs, interrupted: v.interrupted };
  });
  console.log(`voice counters: ${JSON.stringify(stats)}`);
  assert.ok(Math.abs(stats.receivedMs - AUDIO_MS) < 25, `the scripted ${AUDIO_MS} ms arrived: ${stats.receivedMs}`);
  assert.ok(stats.sentMs >= 1000, `the tone and some silence were sent: ${stats.sentMs} ms`);
  assert.deepEqual(stats.interrupted, [], "nobody spoke over the answer");
  await page.getByLabel("Audio counters").filter({ hasNotText: "heard 0.0 s" }).waitFor();
  await t.shot("answered");

  t.step = "Stop ends the microphone";
  await page.getByRole("button", { name: "Stop" }).click();
  await page.getByRole("button", { name: "Talk", pressed: false }).waitFor();

  t.step = "a typed message: the tool's card, then a spoken answer";
  await t.say("look up order A-1");
  const card = page.locator(".toolcard", { hasText: "lookup_order" });
  await card.locator(".result", { hasText: "shipped" }).waitFor();
  await page.locator(".msg.assistant", { hasText: "Order A-1 has shipped." }).waitFor();
  await page.waitForFunction((ms) => {
    const v = globalThis.rtcVoice;
    return v.receivedMs >= ms - 1 && !v.playing && v.playedMs >= v.receivedMs - 1;
  }, AUDIO_MS + 200, { timeout: 20000 });
  await t.shot("typed");
}, {
  args: [
    "--use-fake-ui-for-media-stream",
    "--use-fake-device-for-media-stream",
    // Played once: one utterance, then silence.
    `--use-file-for-fake-audio-capture=${MIC_WAV}%noloop`,
  ],
});

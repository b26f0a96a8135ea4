// The realtime playground: Chromium's fake microphone plays MIC_WAV (a
// tone, silence, a second tone, silence) into a session of a realtime
// assistant whose interface points at the mock realtime provider. The
// interface's connection is shown and edited in its form; in the
// playground the provider's ready state is shown, Talk streams the
// microphone, the user's and the assistant's transcripts appear, the
// second tone speaks over the first answer (its playback stops, the
// heard part is reported, the answer is marked interrupted), and the
// second answer is played to its end through Web Audio (the page's
// counters on `window.rtcVoice`). A typed message then has the model call
// an HTTP tool (its card with the result) and answer aloud. Last, a
// session on an interface without turn detection (Qwen, 16 kHz in): Stop
// commits the audio, and the turn is answered. The Rust side checks the
// mocks' logs.

import assert from "node:assert/strict";
import { scenario } from "./lib.mjs";

const MIC_WAV = process.env.MIC_WAV;
const PROVIDER_URL = process.env.PROVIDER_URL;
const [USER_TEXT, SECOND_USER_TEXT] = JSON.parse(process.env.USER_TEXTS);
const [ASSISTANT_TEXT, SECOND_ANSWER, TYPED_ANSWER] = JSON.parse(process.env.ANSWERS);
const [AUDIO_MS, SECOND_AUDIO_MS, TYPED_AUDIO_MS] = JSON.parse(process.env.ANSWER_MS);
/** The push-to-talk turn: the user's transcript, the answer, its ms. */
const PUSH_TO_TALK = JSON.parse(process.env.PUSH_TO_TALK);

/** Wait until an item other than `skip` was received (`ms`) and heard to its end. */
async function playedToEnd(page, ms, skip) {
  await page.waitForFunction(([want, skipped]) => {
    const v = globalThis.rtcVoice;
    return !v.playing && Object.entries(v.items()).some(([id, i]) =>
      !skipped.includes(id) && Math.abs(i.receivedMs - want) < 25 && i.heardMs >= i.receivedMs - 1);
  }, [ms, skip], { timeout: 20000 });
}

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
  assert.equal(await page.getByLabel("Silence to end a turn (ms)").inputValue(), "300");
  await page.getByLabel("Silence to end a turn (ms)").fill("400");
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
  const first = page.locator(".msg.assistant", { hasText: ASSISTANT_TEXT });
  await first.waitFor({ timeout: 20000 });

  t.step = "speaking over the answer stops its playback";
  await first.locator(".pill", { hasText: "interrupted" }).waitFor({ timeout: 20000 });
  await page.waitForFunction(() => globalThis.rtcVoice.interrupted.length > 0);
  const cut = await page.evaluate(() => globalThis.rtcVoice.interrupted);
  console.log(`interrupted: ${JSON.stringify(cut)}`);
  assert.equal(cut.length, 1, "one barge-in");
  assert.ok(cut[0].playedMs > 0 && cut[0].playedMs < AUDIO_MS, `part of the answer was heard: ${cut[0].playedMs} ms`);

  t.step = "the second turn's answer is played to its end";
  await page.locator(".msg.user", { hasText: SECOND_USER_TEXT }).waitFor({ timeout: 20000 });
  await page.locator(".msg.assistant", { hasText: SECOND_ANSWER }).waitFor({ timeout: 20000 });
  await playedToEnd(page, SECOND_AUDIO_MS, [cut[0].itemId]);
  const stats = await page.evaluate(() => {
    const v = globalThis.rtcVoice;
    return { appends: v.appends, sentMs: v.sentMs, deltas: v.deltas, receivedMs: v.receivedMs, playedMs: v.playedMs, items: v.items() };
  });
  console.log(`voice counters: ${JSON.stringify(stats)}`);
  assert.ok(stats.sentMs >= 3500, `both tones and some silence were sent: ${stats.sentMs} ms`);
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
  await playedToEnd(page, TYPED_AUDIO_MS, []);
  await t.shot("typed");

  t.step = "Talk again after Stop";
  const sent = await page.evaluate(() => globalThis.rtcVoice.appends);
  await page.getByRole("button", { name: "Talk" }).click();
  await page.waitForFunction((before) => globalThis.rtcVoice.appends > before + 5, sent);
  await page.getByRole("button", { name: "Stop", pressed: true }).click();
  await page.getByRole("button", { name: "Talk", pressed: false }).waitFor();

  t.step = "push to talk: Stop commits the audio";
  await t.startSession("Push to talk", () => page.getByLabel("tenant_id (string)").fill("acme"));
  await state.filter({ hasText: "ready · qwen · in 16000 Hz · out 24000 Hz" }).waitFor();
  await page.getByRole("button", { name: "Talk" }).click();
  await page.waitForFunction(() => globalThis.rtcVoice.sentMs >= 500);
  await page.getByRole("button", { name: "Stop", pressed: true }).click();
  await page.locator(".msg.user", { hasText: PUSH_TO_TALK[0] }).waitFor({ timeout: 20000 });
  await page.locator(".msg.assistant", { hasText: PUSH_TO_TALK[1] }).waitFor({ timeout: 20000 });
  await playedToEnd(page, PUSH_TO_TALK[2], []);
  await t.shot("push-to-talk");
}, {
  args: [
    "--use-fake-ui-for-media-stream",
    "--use-fake-device-for-media-stream",
    // Played once: two utterances, then silence.
    `--use-file-for-fake-audio-capture=${MIC_WAV}%noloop`,
  ],
});

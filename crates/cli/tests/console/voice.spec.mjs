// The playground of a voice session (design voice-pipeline.md §4(h),
// scenario 26): a pipeline assistant with a `speech` block, its session
// opened directly at `#/playground/{id}`. Chromium's fake microphone plays
// MIC_WAV (silence, espeak-ng's "Where is my order?" over the STT mock's
// pilot tone, silence). The voice bar shows the speech providers' ready
// state; Talk streams the microphone at 16 kHz; the user's transcript and
// the scripted answer appear as spoken, the answer's audio is received
// and played (`window.rtcVoice`), and the turn shows its latency readout.
// A typed message is then answered aloud, its readout without STT. Run
// again with STREAMING=1 on a session whose STT is Deepgram's streaming
// one: its interim text shows under the input while the user speaks, and
// is gone once the final transcript is the user's message. The Rust side
// checks the mocks' logs and what was stored.

import assert from "node:assert/strict";
import { scenario, BASE } from "./lib.mjs";

const MIC_WAV = process.env.MIC_WAV;
const SESSION_ID = process.env.SESSION_ID;
const USER_TEXT = process.env.USER_TEXT;
const ANSWER = process.env.ANSWER;
const READY = process.env.READY;
/** The typed turn and its answer, or none. */
const [TYPED, TYPED_ANSWER] = process.env.TYPED ? JSON.parse(process.env.TYPED) : [];
/** A streaming STT: interim text is expected. */
const STREAMING = process.env.STREAMING === "1";

/** A spoken turn's readout: every figure, in the design's words. */
const SPOKEN_READOUT = /^STT \d+ · LLM \d+ · TTS \d+ · first audio \d+ ms · server \d+ ms$/;
/** A typed turn's: no STT. */
const TYPED_READOUT = /^LLM \d+ · TTS \d+ · first audio \d+ ms · server \d+ ms$/;

scenario("voice", async (t) => {
  const { page } = t;
  t.step = "sign in";
  await t.signIn();

  t.step = "the voice session opened directly: the speech providers are ready";
  await page.goto(`${BASE}/#/playground/${encodeURIComponent(SESSION_ID)}`);
  await page.getByText("connected").waitFor();
  const state = page.getByRole("status", { name: "Voice state" });
  await state.filter({ hasText: READY }).waitFor();
  await t.shot(STREAMING ? "streaming-ready" : "voice-ready");
  // Every interim text the page shows, however briefly.
  await page.evaluate(() => {
    globalThis.seenInterim = [];
    const el = document.querySelector(".interim");
    new MutationObserver(() => { if (el.textContent) globalThis.seenInterim.push(el.textContent); })
      .observe(el, { childList: true, characterData: true, subtree: true });
  });

  t.step = "Talk streams the microphone";
  await page.getByRole("button", { name: "Talk" }).click();
  await page.getByRole("button", { name: "Stop", pressed: true }).waitFor();

  t.step = "the user's spoken transcript";
  await page.locator(".msg.user", { hasText: USER_TEXT }).getByText("user · spoken").waitFor({ timeout: 30000 });
  const interim = page.getByRole("status", { name: "Interim transcript" });
  const seen = await page.evaluate(() => globalThis.seenInterim);
  console.log(`interim: ${JSON.stringify(seen)}`);
  if (STREAMING) {
    assert.ok(seen.length > 0, "interim text was shown");
    assert.ok(seen.every((s) => USER_TEXT.startsWith(s)), `interim texts are prefixes: ${JSON.stringify(seen)}`);
  } else {
    assert.deepEqual(seen, [], "a batch STT has no interim text");
  }
  await interim.waitFor({ state: "hidden" });

  t.step = "the scripted answer, spoken";
  await page.locator(".msg.assistant", { hasText: ANSWER }).getByText("assistant · spoken").waitFor({ timeout: 20000 });

  t.step = "the turn's latency readout";
  const readouts = page.locator(".sysline.latency");
  await readouts.first().waitFor({ timeout: 20000 });
  const spoken = await readouts.first().textContent();
  console.log(`latency: ${spoken}`);
  assert.match(spoken, SPOKEN_READOUT);

  t.step = "the answer's audio was received and played";
  await page.waitForFunction(() => globalThis.rtcVoice.receivedMs > 0 && globalThis.rtcVoice.playedMs > 0, null, { timeout: 20000 });
  const stats = await page.evaluate(() => {
    const v = globalThis.rtcVoice;
    return { ready: v.ready, appends: v.appends, sentMs: v.sentMs, deltas: v.deltas, receivedMs: v.receivedMs, latency: v.latency };
  });
  console.log(`voice counters: ${JSON.stringify(stats)}`);
  assert.ok(stats.sentMs >= 1000, `the utterance was sent: ${stats.sentMs} ms`);
  assert.ok(stats.receivedMs > 0, "audio received");
  assert.equal(stats.ready.inputRate, 16000);
  for (const f of ["endpointMs", "sttMs", "llmTtftMs", "chunkMs", "ttsTtfbMs", "firstAudioMs", "serverMs"]) {
    assert.equal(typeof stats.latency[f], "number", `latency.${f}: ${JSON.stringify(stats.latency)}`);
  }
  assert.ok(spoken.includes(`STT ${stats.latency.sttMs} ·`) && spoken.includes(`server ${stats.latency.serverMs} ms`), spoken);
  await page.getByLabel("Audio counters").filter({ hasNotText: "received 0.0 s" }).waitFor();
  await t.shot(STREAMING ? "streaming-answered" : "voice-answered");

  t.step = "Stop ends the microphone";
  await page.getByRole("button", { name: "Stop" }).click();
  await page.getByRole("button", { name: "Talk", pressed: false }).waitFor();

  if (!TYPED) return;
  t.step = "a typed message is answered aloud, its readout without STT";
  const received = stats.receivedMs;
  await t.say(TYPED);
  await page.locator(".msg.assistant", { hasText: TYPED_ANSWER }).waitFor({ timeout: 20000 });
  await readouts.nth(1).waitFor({ timeout: 20000 });
  assert.match(await readouts.nth(1).textContent(), TYPED_READOUT);
  await page.waitForFunction((before) => globalThis.rtcVoice.receivedMs > before, received, { timeout: 20000 });
  await t.shot("voice-typed");
}, {
  args: [
    "--use-fake-ui-for-media-stream",
    "--use-fake-device-for-media-stream",
    // Played once: the utterance, then silence.
    `--use-file-for-fake-audio-capture=${MIC_WAV}%noloop`,
  ],
});

// The SDK against a real rtc-agent server (run by the Rust test
// `crates/cli/tests/sdk_js.rs`, which starts the binary and the scripted
// model): a client tool answered by its function (schema hash declared),
// a dropped connection resumed with no gap and no duplicate, a message sent
// over HTTP while reconnecting, an askUser question answered, and typed
// events throughout. The WebSocket constructor is passed in, as Node 20
// needs (it runs with --experimental-websocket).

import assert from "node:assert/strict";
import { RtcSession } from "../rtc-agent.js";

const { BASE_URL, SESSION_ID, TOKEN } = process.env;
const SCHEMA = JSON.parse(process.env.SCHEMA);

const sockets = [];
class Tracked extends globalThis.WebSocket {
  constructor(url) { super(url); sockets.push(this); }
}

const s = new RtcSession({
  baseUrl: BASE_URL, sessionId: SESSION_ID, token: TOKEN, WebSocket: Tracked,
  reconnect: { initialDelayMs: 100 },
  clientTools: { showCard: { parameters: SCHEMA, handler: async ({ title }) => ({ shown: title }) } },
});
const events = [];
s.on("*", (e) => events.push(e));
const errors = [];
s.on("frame.error", (e) => errors.push(e));

/** Resolve with the first event of `type` after now that `pick` accepts. */
function next(type, pick = () => true) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no ${type}; got ${events.map((e) => e.type).join(", ")}`)), 15000);
    const off = s.on(type, (e) => { if (pick(e)) { clearTimeout(timer); off(); resolve(e); } });
  });
}
const status = (want) => new Promise((resolve) => {
  if (s.state === want) return resolve();
  const off = s.on("status", (st) => { if (st === want) { off(); resolve(); } });
});

s.connect();
await status("open");

// A turn with a client tool the SDK answers.
let done = next("turn.completed");
await s.sendMessage("first");
await done;
const toolDone = events.find((e) => e.type === "tool.completed" && e.name === "show_card");
assert.ok(toolDone, "the client tool completed");
assert.deepEqual(toolDone.result, { shown: "A" });

// The connection drops; a message goes over HTTP meanwhile; the socket
// comes back and replays what it missed.
sockets[0].close();
await status("reconnecting");
const question = next("ask_user.question");
await s.sendMessage("second");
await status("open");
const q = await question;
assert.equal(q.questions[0].question, "Proceed?");
done = next("turn.completed", (e) => e.seq > q.seq);
await s.answer(["Yes"]);
await done;
assert.ok(events.some((e) => e.type === "message.completed" && e.content === "ok then"), "answered");

const seqs = events.map((e) => e.seq);
assert.deepEqual(seqs, [...seqs].sort((a, b) => a - b), "in order");
assert.equal(new Set(seqs).size, seqs.length, "no duplicate");
assert.equal(seqs.at(-1) - seqs[0] + 1, seqs.length, `no gap: ${seqs.join(",")}`);
assert.ok(sockets.length >= 2, "reconnected");
assert.equal(new URL(sockets[1].url).searchParams.get("after") > "0", true);
assert.deepEqual(errors, []);
s.close();
console.log(`sdk e2e: passed (${seqs.length} events, ${sockets.length} sockets)`);

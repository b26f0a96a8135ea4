// The SDK without a server: schema hashes as the server computes them, and
// a session over an in-memory WebSocket — hello, events once each and in
// order across a dropped connection, client tools, error frames, REST
// fallback when the socket is down.

import test from "node:test";
import assert from "node:assert/strict";
import { RtcSession, RtcError, canonicalJson, schemaHash, VERSION } from "../rtc-agent.js";
import { readFileSync } from "node:fs";

const SCHEMA = { type: "object", properties: { city: { type: "string" }, zoom: { type: "integer", minimum: 1 } }, required: ["city"] };
// The same value is asserted by the server's `broker::schema_hash` test.
const HASH = "fc83dbab2f49fe0aedde8461e43882aa13f86c0974ba48c1587d26d4e70b8094";

test("the schema hash is the server's", async () => {
  assert.equal(canonicalJson(SCHEMA), '{"properties":{"city":{"type":"string"},"zoom":{"minimum":1,"type":"integer"}},"required":["city"],"type":"object"}');
  assert.equal(await schemaHash(SCHEMA), HASH);
});

test("the version is the package's", () => {
  const pkg = JSON.parse(readFileSync(new URL("../package.json", import.meta.url)));
  assert.equal(VERSION, pkg.version);
});

/** An in-memory WebSocket: records what is sent; the test plays the server. */
class FakeSocket {
  static all = [];
  constructor(url) {
    this.url = new URL(url);
    this.sent = [];
    this.readyState = 0;
    FakeSocket.all.push(this);
    queueMicrotask(() => { this.readyState = 1; this.onopen?.(); });
  }
  send(text) { this.sent.push(JSON.parse(text)); }
  close() { this.readyState = 3; this.onclose?.(); }
  push(frame) { this.onmessage?.({ data: JSON.stringify(frame) }); }
}

const tick = (ms = 5) => new Promise((r) => setTimeout(r, ms));
/** Wait until `cond()` holds (at most 2 s). */
async function until(cond) {
  for (let i = 0; i < 400 && !cond(); i++) await tick();
  assert.ok(cond(), "the condition never held");
}
const ev = (seq, type, fields = {}) => ({ type, seq, sessionId: "s", timestamp: "", ...fields });

test("events arrive once, in order, across a dropped connection", async () => {
  FakeSocket.all = [];
  const s = new RtcSession({ baseUrl: "http://h:1", sessionId: "s", token: "tok", WebSocket: FakeSocket, reconnect: { initialDelayMs: 1 } });
  const seen = [];
  const states = [];
  s.on("*", (e) => seen.push(e.seq));
  s.on("status", (st) => states.push(st));
  s.connect();
  await until(() => FakeSocket.all[0]?.sent.length === 1);
  const first = FakeSocket.all[0];
  assert.equal(first.url.searchParams.get("after"), "0");
  assert.equal(first.url.searchParams.get("token"), "tok");
  assert.equal(first.url.protocol, "ws:");
  assert.deepEqual(first.sent[0], { type: "client.hello", clientTools: [] });
  first.push(ev(1, "session.started"));
  first.push(ev(2, "turn.started"));
  first.close();
  await until(() => FakeSocket.all[1]?.sent.length === 1 && s.state === "open");
  const second = FakeSocket.all[1];
  assert.equal(second.url.searchParams.get("after"), "2", "resumes after the last event");
  second.push(ev(2, "turn.started"));
  second.push(ev(3, "turn.completed"));
  assert.deepEqual(seen, [1, 2, 3]);
  assert.equal(s.lastSeq, 3);
  assert.ok(states.includes("reconnecting") && states.at(-1) === "open", states.join(","));
  second.push(ev(4, "session.ended", { endedBy: "host" }));
  second.close();
  await tick(20);
  assert.equal(FakeSocket.all.length, 2, "no reconnect after the end");
  assert.equal(s.state, "closed");
});

test("client tools are answered by their function, with the schema hash declared", async () => {
  FakeSocket.all = [];
  const s = new RtcSession({
    baseUrl: "https://h", sessionId: "s", token: "t", WebSocket: FakeSocket,
    clientTools: {
      showMap: { parameters: SCHEMA, handler: async ({ city }) => ({ shown: city }) },
      failing: () => { throw new Error("no map here"); },
      manual: {},
      fireAndForget: () => "ignored",
    },
  });
  const errors = [];
  s.on("frame.error", (e) => errors.push(e));
  s.connect();
  await until(() => FakeSocket.all[0]?.sent.length === 1);
  const ws = FakeSocket.all[0];
  assert.equal(ws.url.protocol, "wss:");
  assert.deepEqual(ws.sent[0].clientTools, [{ name: "showMap", schemaHash: HASH }, "failing", "manual", "fireAndForget"]);
  ws.push(ev(1, "client_tool.call", { callId: "c1", functionName: "showMap", arguments: { city: "Oslo" }, waitForResponse: true }));
  ws.push(ev(2, "client_tool.call", { callId: "c2", functionName: "failing", arguments: {}, waitForResponse: true }));
  ws.push(ev(3, "client_tool.call", { callId: "c3", functionName: "manual", arguments: {}, waitForResponse: true }));
  ws.push(ev(4, "client_tool.call", { callId: "c4", functionName: "fireAndForget", arguments: {}, waitForResponse: false }));
  await until(() => ws.sent.length >= 3);
  await tick();
  assert.deepEqual(ws.sent.slice(1).sort((a, b) => a.callId.localeCompare(b.callId)), [
    { type: "client_tool.result", callId: "c1", result: { shown: "Oslo" } },
    { type: "client_tool.result", callId: "c2", error: "no map here" },
  ]);
  assert.equal(s.respond("c3", { ok: true }), true);
  assert.deepEqual(ws.sent.at(-1), { type: "client_tool.result", callId: "c3", result: { ok: true } });
  ws.push({ type: "error", code: "unknown_call", message: "no such call" });
  assert.ok(errors[0] instanceof RtcError && errors[0].code === "unknown_call");
  await s.answer(["Yes"], "q1");
  assert.deepEqual(ws.sent.at(-1), { type: "ask_user.answer", answers: ["Yes"], callId: "q1" });
  await s.sendMessage("hi");
  assert.deepEqual(ws.sent.at(-1), { type: "user.message", text: "hi" });
  s.close();
});

test("without a socket, messages and answers go over HTTP", async () => {
  const calls = [];
  const realFetch = globalThis.fetch;
  globalThis.fetch = async (url, init) => {
    calls.push([url, init.method, init.headers.Authorization, JSON.parse(init.body)]);
    if (url.endsWith("/answers")) return new Response(JSON.stringify({ error: { code: "no_question", message: "nothing asked" } }), { status: 409 });
    return new Response(JSON.stringify({ messageId: "m", accepted: true }), { status: 202 });
  };
  try {
    const s = new RtcSession({ baseUrl: "http://h:1/", sessionId: "s 1", token: "tok", WebSocket: FakeSocket });
    await s.sendMessage("hello");
    assert.deepEqual(calls[0], ["http://h:1/v1/sessions/s%201/messages", "POST", "Bearer tok", { text: "hello" }]);
    await assert.rejects(s.answer({ "Which?": "A" }), (e) => e instanceof RtcError && e.code === "no_question" && e.status === 409);
  } finally {
    globalThis.fetch = realFetch;
  }
});

test("an answer given while reconnecting waits for the socket; statuses are reported once", async () => {
  FakeSocket.all = [];
  const s = new RtcSession({ baseUrl: "http://h:1", sessionId: "s", token: "tok", WebSocket: FakeSocket, reconnect: { initialDelayMs: 30 } });
  const states = [];
  s.on("status", (st) => states.push(st));
  s.connect();
  await until(() => s.state === "open");
  FakeSocket.all[0].close();
  assert.equal(s.state, "reconnecting");
  let sent = false;
  const answered = s.answer({ "Which?": "A" }).then(() => { sent = true; });
  await tick(10);
  assert.equal(sent, false, "not sent while the socket is down");
  await until(() => sent);
  const second = FakeSocket.all[1];
  assert.deepEqual(second.sent.map((f) => f.type), ["client.hello", "ask_user.answer"]);
  assert.deepEqual(second.sent[1].answers, { "Which?": "A" });
  await answered;
  for (let i = 1; i < states.length; i++) assert.notEqual(states[i], states[i - 1], states.join(","));
  // Closed while waiting: the answer is refused, not lost silently.
  second.close();
  const late = s.answer(["B"]);
  s.close();
  await assert.rejects(late, (e) => e instanceof RtcError && e.code === "closed");
});

test("bad options are refused", () => {
  assert.throws(() => new RtcSession({ sessionId: "s" }), TypeError);
  assert.throws(() => new RtcSession({ sessionId: "s", token: "t", baseUrl: "http://h", WebSocket: null }), /WebSocket/);
});

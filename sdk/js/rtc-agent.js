// rtc-agent host SDK: connect a host application (browser or Node ≥ 20) to
// one session of an rtc-agent server over its WebSocket, with the
// session's client token. No dependencies.
//
//   const s = new RtcSession({ baseUrl, sessionId, token, clientTools: { showMap: ({ city }) => ({ shown: city }) } });
//   s.on("message.completed", (e) => console.log(e.role, e.content));
//   s.connect();
//   await s.sendMessage("Hello");
//
// Events arrive in order, once each: a dropped connection is reopened with
// `?after=<last seq>` (backoff 0.5 s doubling to 8 s), and an event already
// seen is skipped. Client tools are plain functions; the schema hash the
// server checks (SHA-256 of the parameters as compact JSON with sorted
// keys) is computed for a tool given with its `parameters`.

export const VERSION = "0.1.0";

/** `value` as compact JSON with object keys sorted (the schema hash's input). */
export function canonicalJson(value) {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (value && typeof value === "object") {
    return `{${Object.keys(value).sort().map((k) => `${JSON.stringify(k)}:${canonicalJson(value[k])}`).join(",")}}`;
  }
  return JSON.stringify(value);
}

/** SHA-256 (hex) of a parameter schema, as `client.hello` declares it. */
export async function schemaHash(schema) {
  const bytes = new TextEncoder().encode(canonicalJson(schema));
  const digest = await globalThis.crypto.subtle.digest("SHA-256", bytes);
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/** An error the server answered (HTTP or a WebSocket error frame). */
export class RtcError extends Error {
  constructor(code, message, status, field) {
    super(message);
    this.name = "RtcError";
    this.code = code;
    this.status = status ?? 0;
    this.field = field ?? null;
  }
}

function defaultBase() {
  return typeof location !== "undefined" ? location.origin : undefined;
}

export class RtcSession {
  #opts;
  #ws = null;
  #listeners = new Map();
  #lastSeq;
  #state = "idle";
  #retry;
  #timer = null;
  #ended = false;
  /** Frames waiting for the socket to open again (answers). */
  #queued = [];

  /**
   * @param {object} opts `baseUrl` (default: the page's origin), `sessionId`,
   * `token` (the session's `clientToken`, or a workspace key), `WebSocket`
   * (a constructor; required on Node 20, which has none), `clientTools`
   * (`{ functionName: handler | { handler?, parameters? } }`: without a
   * handler the call is answered with `respond` or `fail`), `after` (the
   * last event already seen, default 0), `hello` (a function returning more
   * `client.hello` fields), `reconnect` (`{ initialDelayMs, maxDelayMs }`).
   */
  constructor(opts) {
    if (!opts || !opts.sessionId || !opts.token) throw new TypeError("RtcSession needs sessionId and token");
    const baseUrl = (opts.baseUrl ?? defaultBase())?.replace(/\/+$/, "");
    if (!baseUrl) throw new TypeError("RtcSession needs baseUrl outside a browser");
    const WS = opts.WebSocket ?? globalThis.WebSocket;
    if (!WS) throw new TypeError("no WebSocket here: pass one as the WebSocket option (Node 20: the `ws` package)");
    this.#opts = { ...opts, baseUrl, WebSocket: WS, clientTools: opts.clientTools ?? {} };
    this.#lastSeq = opts.after ?? 0;
    this.#retry = opts.reconnect?.initialDelayMs ?? 500;
  }

  /** The sequence number of the last event delivered. */
  get lastSeq() { return this.#lastSeq; }

  /** `idle`, `connecting`, `open`, `reconnecting` or `closed`. */
  get state() { return this.#state; }

  /**
   * Listen to events of `type` (`message.completed`, …), every stored
   * event (`*`), every frame including ephemeral ones such as realtime
   * `audio.delta` (`frame`), the connection's `status`, or `frame.error`
   * (a frame the server could not take). Returns the function that stops
   * listening.
   */
  on(type, fn) {
    if (!this.#listeners.has(type)) this.#listeners.set(type, new Set());
    this.#listeners.get(type).add(fn);
    return () => this.#listeners.get(type)?.delete(fn);
  }

  #emit(type, value) {
    for (const fn of this.#listeners.get(type) ?? []) {
      try { fn(value); } catch (e) { queueMicrotask(() => { throw e; }); }
    }
  }

  #setState(state) {
    // A status is reported when it changes (not once per retry).
    if (this.#state === state) return;
    this.#state = state;
    this.#emit("status", state);
  }

  /** Open the socket (again after `close`, it resumes where it stopped). */
  connect() {
    if (this.#state === "open" || this.#state === "connecting") return this;
    this.#ended = false;
    this.#open(false);
    return this;
  }

  #url() {
    const u = new URL(`${this.#opts.baseUrl}/v1/sessions/${encodeURIComponent(this.#opts.sessionId)}/ws`);
    u.protocol = u.protocol === "https:" ? "wss:" : "ws:";
    u.searchParams.set("after", String(this.#lastSeq));
    u.searchParams.set("token", this.#opts.token);
    return u.toString();
  }

  #open(again) {
    this.#setState(again ? "reconnecting" : "connecting");
    const ws = new this.#opts.WebSocket(this.#url());
    this.#ws = ws;
    ws.onopen = async () => {
      this.#retry = this.#opts.reconnect?.initialDelayMs ?? 500;
      try {
        this.send(await this.#hello());
      } catch (e) {
        this.#emit("frame.error", new RtcError("hello_failed", e.message));
      }
      if (this.#ws === ws) {
        this.#setState("open");
        this.#flush();
      }
    };
    ws.onmessage = (m) => {
      let frame;
      try { frame = JSON.parse(typeof m.data === "string" ? m.data : String(m.data)); } catch { return; }
      this.#receive(frame);
    };
    ws.onclose = () => {
      if (this.#ws !== ws) return;
      this.#ws = null;
      if (this.#state === "closed" || this.#ended) { this.#setState("closed"); return; }
      this.#setState("reconnecting");
      this.#timer = setTimeout(() => this.#open(true), this.#retry);
      this.#retry = Math.min(this.#retry * 2, this.#opts.reconnect?.maxDelayMs ?? 8000);
    };
    ws.onerror = () => {};
  }

  async #hello() {
    const clientTools = [];
    for (const [name, tool] of Object.entries(this.#opts.clientTools)) {
      const parameters = typeof tool === "function" ? undefined : tool?.parameters;
      clientTools.push(parameters ? { name, schemaHash: await schemaHash(parameters) } : name);
    }
    return { type: "client.hello", clientTools, ...(this.#opts.hello ? this.#opts.hello() : {}) };
  }

  #receive(frame) {
    if (frame.seq === undefined) {
      if (frame.type === "error") {
        this.#emit("frame.error", new RtcError(frame.code, frame.message, 0, frame.field));
      } else {
        this.#emit(frame.type, frame);
        this.#emit("frame", frame);
      }
      return;
    }
    if (frame.seq <= this.#lastSeq) return;
    this.#lastSeq = frame.seq;
    if (frame.type === "session.ended") this.#ended = true;
    this.#emit(frame.type, frame);
    this.#emit("*", frame);
    this.#emit("frame", frame);
    if (frame.type === "client_tool.call") this.#runClientTool(frame);
  }

  async #runClientTool(call) {
    const tool = this.#opts.clientTools[call.functionName];
    const handler = typeof tool === "function" ? tool : tool?.handler;
    if (!handler) return;
    let reply;
    try {
      reply = { result: (await handler(call.arguments ?? {}, call)) ?? null };
    } catch (e) {
      reply = { error: e instanceof Error ? e.message : String(e) };
    }
    if (call.waitForResponse !== false) this.send({ type: "client_tool.result", callId: call.callId, ...reply });
  }

  /** Send a frame now; whether the socket was open. */
  send(frame) {
    const ws = this.#ws;
    if (!ws || ws.readyState !== 1) return false;
    ws.send(JSON.stringify(frame));
    return true;
  }

  async #post(path, body) {
    const resp = await fetch(`${this.#opts.baseUrl}/v1/sessions/${encodeURIComponent(this.#opts.sessionId)}${path}`, {
      method: "POST",
      headers: { Authorization: `Bearer ${this.#opts.token}`, "Content-Type": "application/json" },
      body: JSON.stringify(body),
    });
    if (resp.ok) return resp.status === 204 ? null : resp.json();
    const e = (await resp.json().catch(() => null))?.error ?? {};
    throw new RtcError(e.code ?? `http_${resp.status}`, e.message ?? resp.statusText, resp.status, e.field);
  }

  /** A user turn: over the socket when open, else `POST …/messages`. */
  async sendMessage(text) {
    if (this.send({ type: "user.message", text })) return;
    await this.#post("/messages", { text });
  }

  /**
   * Answer the askUser question (`answers`: one per question in order, or
   * `{question: answer}`); `callId` defaults to the pending question.
   * While the socket reconnects the answer waits and goes out once it is
   * open again; without a socket it goes over HTTP.
   */
  async answer(answers, callId) {
    const body = { answers, ...(callId ? { callId } : {}) };
    const frame = { type: "ask_user.answer", ...body };
    if (this.send(frame)) return;
    if (this.#state === "reconnecting" || this.#state === "connecting") {
      await new Promise((resolve, reject) => this.#queued.push({ frame, resolve, reject }));
      return;
    }
    await this.#post("/answers", body);
  }

  /** Send what waited for the socket. */
  #flush() {
    while (this.#queued.length) {
      const { frame, resolve } = this.#queued[0];
      if (!this.send(frame)) return;
      this.#queued.shift();
      resolve();
    }
  }

  /** Answer a client tool call by hand (tools without a handler). */
  respond(callId, result) {
    return this.send({ type: "client_tool.result", callId, result });
  }

  /** Fail a client tool call by hand; the model reads `message`. */
  fail(callId, message) {
    return this.send({ type: "client_tool.result", callId, error: message });
  }

  /** Close for good (until `connect` again). */
  close() {
    clearTimeout(this.#timer);
    this.#setState("closed");
    for (const { reject } of this.#queued.splice(0)) {
      reject(new RtcError("closed", "the session was closed before the answer could be sent"));
    }
    const ws = this.#ws;
    this.#ws = null;
    if (ws) ws.close();
  }
}

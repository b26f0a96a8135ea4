// Audio for a realtime session in the browser: the microphone captured
// through an AudioWorklet as PCM16 mono at the session's input rate, and
// the assistant's PCM16 chunks played back to back, with how much of each
// provider item was actually heard (what `playback.interrupted` reports
// when the user speaks over it).

const WORKLET_URL = "/console/pcm_capture.worklet.js";

/** Base64 of the bytes of a PCM16 array (little-endian, as browsers are). */
export function pcm16ToBase64(samples) {
  const bytes = new Uint8Array(samples.buffer, samples.byteOffset, samples.byteLength);
  let binary = "";
  for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(binary);
}

/** Float samples in [-1, 1) from base64 PCM16 little-endian. */
export function base64ToFloat32(b64) {
  const binary = atob(b64);
  const count = binary.length >> 1;
  const out = new Float32Array(count);
  for (let i = 0; i < count; i++) {
    let s = binary.charCodeAt(2 * i) | (binary.charCodeAt(2 * i + 1) << 8);
    if (s >= 0x8000) s -= 0x10000;
    out[i] = s / 0x8000;
  }
  return out;
}

/** Why this page cannot use the microphone, or null when it can. */
export function microphoneUnavailable() {
  if (!window.isSecureContext) return "the microphone needs a secure page (https, or http on localhost)";
  if (!navigator.mediaDevices || !navigator.mediaDevices.getUserMedia) return "this browser gives no access to a microphone";
  if (typeof AudioWorkletNode === "undefined") return "this browser has no AudioWorklet";
  return null;
}

/**
 * The page's audio: one AudioContext, made (or resumed) on a user gesture
 * so that the browser lets it play.
 */
export class RealtimeAudio {
  constructor() {
    this.ctx = null;
    this.mic = null;
    this.player = null;
    this.worklet = null;
  }

  /** Make or resume the context; call it from a click. */
  unlock() {
    if (!this.ctx) {
      this.ctx = new AudioContext();
      this.player = new Player(this.ctx);
      this.worklet = null;
    }
    if (this.ctx.state === "suspended") this.ctx.resume().catch(() => {});
    return this.ctx;
  }

  /**
   * Start the microphone: `onChunk(base64)` receives PCM16 mono at
   * `inputRate` every `chunkMs`. Rejects when the browser refuses.
   */
  async startMicrophone({ inputRate, chunkMs = 40, onChunk }) {
    const why = microphoneUnavailable();
    if (why) throw new Error(why);
    const ctx = this.unlock();
    const stream = await navigator.mediaDevices.getUserMedia({
      // Cancel the assistant's voice coming back through the speakers,
      // or it would interrupt itself; keep the level as it is.
      audio: { channelCount: 1, echoCancellation: true, noiseSuppression: false, autoGainControl: false },
    });
    try {
      // Once per context: the processor's name is registered for good.
      this.worklet = this.worklet || ctx.audioWorklet.addModule(WORKLET_URL);
      await this.worklet;
      const source = ctx.createMediaStreamSource(stream);
      const node = new AudioWorkletNode(ctx, "pcm-capture", {
        numberOfInputs: 1,
        numberOfOutputs: 1,
        outputChannelCount: [1],
        processorOptions: { targetRate: inputRate, chunkMs },
      });
      // The node writes nothing; a silent path to the destination keeps
      // the graph pulling it on every browser.
      const mute = new GainNode(ctx, { gain: 0 });
      const mic = { stream, source, node, mute, flushed: null };
      node.port.onmessage = (e) => {
        if (e.data === "flushed") { if (mic.flushed) mic.flushed(); return; }
        onChunk(pcm16ToBase64(e.data), (e.data.length * 1000) / inputRate);
      };
      source.connect(node).connect(mute).connect(ctx.destination);
      this.mic = mic;
    } catch (e) {
      this.worklet = null;
      stream.getTracks().forEach((t) => t.stop());
      throw e;
    }
  }

  /**
   * Stop the microphone. Resolves once what was captured so far has been
   * handed to `onChunk` (or after a second, should the worklet be gone).
   */
  stopMicrophone() {
    const mic = this.mic;
    if (!mic) return Promise.resolve();
    this.mic = null;
    mic.stream.getTracks().forEach((t) => t.stop());
    mic.source.disconnect();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        mic.node.port.onmessage = null;
        try { mic.node.disconnect(); mic.mute.disconnect(); } catch { /* the context is closed */ }
        resolve();
      };
      const timer = setTimeout(done, 1000);
      mic.flushed = done;
      mic.node.port.postMessage("flush");
    });
  }

  get talking() { return !!this.mic; }

  close() {
    this.stopMicrophone();
    if (this.ctx) this.ctx.close().catch(() => {});
    this.ctx = null;
    this.player = null;
  }
}

/**
 * Plays `audio.delta` chunks back to back and keeps count, per provider
 * item, of the milliseconds the listener heard.
 */
export class Player {
  constructor(ctx) {
    this.ctx = ctx;
    this.nextTime = 0;
    this.queued = [];
    this.heard = new Map();
    this.received = new Map();
    // The item still being spoken (its audio so far may all have been
    // played while more is to come), and the items known to be complete:
    // audio frames and events come apart, so a late chunk must not
    // reopen one.
    this.open = null;
    this.complete = new Set();
    // Items the user spoke over: their late chunks are dropped.
    this.cut = new Set();
    this.chunks = 0;
    this.playedMs = 0;
    this.interruptions = 0;
  }

  /**
   * Queue one chunk of `itemId` (base64 PCM16 mono at `rate` Hz); returns
   * its ms, 0 when dropped (an item the user spoke over).
   */
  enqueue(itemId, b64, rate) {
    if (this.cut.has(itemId)) return 0;
    const samples = base64ToFloat32(b64);
    if (!samples.length) return 0;
    const buffer = this.ctx.createBuffer(1, samples.length, rate);
    buffer.copyToChannel(samples, 0);
    const source = this.ctx.createBufferSource();
    source.buffer = buffer;
    source.connect(this.ctx.destination);
    // After a gap, start a little ahead so the first chunk is not clipped.
    const now = this.ctx.currentTime;
    if (this.nextTime < now + 0.02) this.nextTime = now + 0.02;
    const entry = { itemId, source, start: this.nextTime, duration: buffer.duration, stopped: false };
    source.onended = () => {
      const i = this.queued.indexOf(entry);
      if (i >= 0) this.queued.splice(i, 1);
      if (!entry.stopped) this.count(itemId, entry.duration * 1000);
    };
    source.start(entry.start);
    this.nextTime += buffer.duration;
    this.queued.push(entry);
    this.chunks += 1;
    if (!this.complete.has(itemId)) this.open = itemId;
    this.received.set(itemId, (this.received.get(itemId) || 0) + buffer.duration * 1000);
    return buffer.duration * 1000;
  }

  count(itemId, ms) {
    this.heard.set(itemId, (this.heard.get(itemId) || 0) + ms);
    this.playedMs += ms;
  }

  /** The part of a queued chunk already played, in ms. */
  partial(entry) {
    return Math.max(0, Math.min(entry.duration, this.ctx.currentTime - entry.start)) * 1000;
  }

  /** `itemId` (or, without one, the item being spoken) is complete. */
  settle(itemId) {
    const id = itemId || this.open;
    if (!id) return;
    this.complete.add(id);
    if (this.open === id) this.open = null;
  }

  /** Whether audio is playing or waiting to play. */
  get busy() { return this.queued.length > 0; }

  /** Milliseconds of `itemId` heard so far. */
  heardMs(itemId) {
    let ms = this.heard.get(itemId) || 0;
    for (const e of this.queued) if (e.itemId === itemId) ms += this.partial(e);
    return ms;
  }

  /**
   * Stop everything queued (the user started speaking). Returns the item
   * that was being spoken and how much of it was heard — also when all
   * its audio so far was played but its response goes on — or null when
   * nothing was being spoken.
   */
  flush() {
    const now = this.ctx.currentTime;
    const playing = this.queued.find((e) => e.start <= now && now < e.start + e.duration) || this.queued[0];
    const itemId = playing ? playing.itemId : this.open;
    if (!itemId) return null;
    const playedMs = Math.floor(this.heardMs(itemId));
    this.settle(itemId);
    this.cut.add(itemId);
    for (const e of this.queued.splice(0)) {
      this.cut.add(e.itemId);
      e.stopped = true;
      this.count(e.itemId, this.partial(e));
      try { e.source.stop(); } catch { /* not started yet */ }
    }
    this.nextTime = 0;
    this.interruptions += 1;
    return { itemId, playedMs };
  }
}

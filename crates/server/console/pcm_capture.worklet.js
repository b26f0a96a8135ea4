// An AudioWorklet processor: the microphone's samples (the context's
// rate, any channel count) mixed to mono, resampled to `targetRate` by
// area averaging (each output sample is the mean of the input it covers:
// a plain low-pass against aliasing, enough for speech),
// turned into PCM16 and posted to the page every `chunkMs`. A "flush"
// message posts what is left, then "flushed". Served by the console as its
// own file, so the strict content security policy allows it.

class PcmCapture extends AudioWorkletProcessor {
  constructor(options) {
    super();
    const { targetRate, chunkMs } = options.processorOptions;
    // Input samples per output sample (1 or more when downsampling).
    this.step = sampleRate / targetRate;
    this.size = Math.max(1, Math.round((targetRate * chunkMs) / 1000));
    this.chunk = new Int16Array(this.size);
    this.filled = 0;
    this.sum = 0;
    this.weight = 0;
    this.port.onmessage = (e) => {
      if (e.data !== "flush") return;
      this.flush();
      this.port.postMessage("flushed");
    };
  }

  emit(value) {
    const v = Math.max(-1, Math.min(1, value));
    this.chunk[this.filled++] = v < 0 ? Math.round(v * 0x8000) : Math.round(v * 0x7fff);
    if (this.filled === this.size) this.flush();
  }

  flush() {
    if (!this.filled) return;
    const out = this.chunk.slice(0, this.filled);
    this.port.postMessage(out, [out.buffer]);
    this.filled = 0;
  }

  process(inputs) {
    const channels = inputs[0];
    if (!channels || !channels.length) return true;
    const frames = channels[0].length;
    for (let i = 0; i < frames; i++) {
      let x = 0;
      for (const c of channels) x += c[i];
      x /= channels.length;
      // This input sample counts with weight 1, spread over the output
      // samples it falls into.
      let left = 1;
      while (left > 0) {
        const take = Math.min(this.step - this.weight, left);
        this.sum += x * take;
        this.weight += take;
        left -= take;
        if (this.weight >= this.step - 1e-9) {
          this.emit(this.sum / this.weight);
          this.sum = 0;
          this.weight = 0;
        }
      }
    }
    return true;
  }
}

registerProcessor("pcm-capture", PcmCapture);

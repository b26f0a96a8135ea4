//! The voice pipeline's speech side (R-RT-8, `design/voice-pipeline.md`):
//! speech-to-text and text-to-speech behind two traits with one module
//! per provider dialect, and the IO-free parts of a voice turn — the
//! chunker that releases text to TTS, the played prefix of an interrupted
//! answer, voice activity and turn-taking, spoken askUser questions and
//! answers, WAV framing. The runtime's voice engine drives them.

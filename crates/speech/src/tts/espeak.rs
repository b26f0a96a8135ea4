//! Local espeak-ng (design §1.5, §4(e)): one `espeak-ng --stdout -v
//! <voice> -s <wpm> -b 1 --stdin` process per chunk, the text on stdin,
//! the WAV on stdout read as it comes with its header skipped (its sizes
//! are placeholders), 16-bit mono at 22 050 Hz. Each process is killed
//! after 10 s. The binary is `RTC_ESPEAK_BIN`, else `espeak-ng` on `PATH`.
//! Processes are counted by the server's [`EspeakLimiter`]: at most
//! `RTC_ESPEAK_MAX` (4) at once, at most half of them for one workspace.

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use parking_lot::Mutex;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::{Notify, mpsc};

use super::TtsEvent;
use super::pcm::PcmReader;
use super::pipeline::{Piece, Pipelined, Source};
use crate::config::{EspeakAccess, MAX_CHUNK_AUDIO_BYTES, TtsConfig};
use crate::error::Scrub;
use crate::{Result, SpeechError};

/// espeak-ng's output rate.
pub const ESPEAK_RATE: u32 = 22_050;
/// How long one process may run.
pub const KILL_AFTER: Duration = Duration::from_secs(10);
/// The default of `RTC_ESPEAK_MAX`.
pub const DEFAULT_MAX: usize = 4;
/// The words per minute when the interface says none.
pub const DEFAULT_WPM: u32 = 175;

/// How many espeak processes run, server-wide and per workspace. Cheap to
/// clone (one shared count); the runtime owns one.
#[derive(Clone)]
pub struct EspeakLimiter {
    inner: Arc<Limits>,
}

struct Limits {
    max: usize,
    per_workspace: usize,
    running: Mutex<Running>,
    freed: Notify,
}

#[derive(Default)]
struct Running {
    total: usize,
    by_workspace: HashMap<String, usize>,
}

impl std::fmt::Debug for EspeakLimiter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EspeakLimiter")
            .field("max", &self.inner.max)
            .field("per_workspace", &self.inner.per_workspace)
            .field("running", &self.running())
            .finish()
    }
}

impl EspeakLimiter {
    /// At most `max` processes (at least 1), and half of them (at least 1)
    /// for one workspace.
    pub fn new(max: usize) -> Self {
        let max = max.max(1);
        Self {
            inner: Arc::new(Limits {
                max,
                per_workspace: (max / 2).max(1),
                running: Mutex::new(Running::default()),
                freed: Notify::new(),
            }),
        }
    }

    /// `RTC_ESPEAK_MAX` (a positive integer), else [`DEFAULT_MAX`].
    pub fn from_env() -> Self {
        let max = std::env::var("RTC_ESPEAK_MAX")
            .ok()
            .and_then(|v| v.trim().parse().ok())
            .filter(|&n: &usize| n > 0)
            .unwrap_or(DEFAULT_MAX);
        Self::new(max)
    }

    pub fn max(&self) -> usize {
        self.inner.max
    }

    pub fn per_workspace(&self) -> usize {
        self.inner.per_workspace
    }

    /// Processes running now.
    pub fn running(&self) -> usize {
        self.inner.running.lock().total
    }

    /// Processes running now for `workspace`.
    pub fn running_in(&self, workspace: &str) -> usize {
        let running = self.inner.running.lock();
        running.by_workspace.get(workspace).copied().unwrap_or(0)
    }

    /// A slot for `workspace` if one is free now.
    pub fn try_acquire(&self, workspace: &str) -> Option<EspeakPermit> {
        let mut running = self.inner.running.lock();
        let mine = running.by_workspace.get(workspace).copied().unwrap_or(0);
        if running.total >= self.inner.max || mine >= self.inner.per_workspace {
            return None;
        }
        running.total += 1;
        *running
            .by_workspace
            .entry(workspace.to_owned())
            .or_default() += 1;
        Some(EspeakPermit {
            limits: self.inner.clone(),
            workspace: workspace.to_owned(),
        })
    }

    /// Wait for a slot for `workspace`.
    pub async fn acquire(&self, workspace: &str) -> EspeakPermit {
        loop {
            let freed = self.inner.freed.notified();
            tokio::pin!(freed);
            freed.as_mut().enable();
            if let Some(permit) = self.try_acquire(workspace) {
                return permit;
            }
            freed.await;
        }
    }
}

/// One running process's slot, given back when dropped.
#[derive(Debug)]
pub struct EspeakPermit {
    limits: Arc<Limits>,
    workspace: String,
}

impl std::fmt::Debug for Limits {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Limits")
    }
}

impl Drop for EspeakPermit {
    fn drop(&mut self) {
        {
            let mut running = self.limits.running.lock();
            running.total = running.total.saturating_sub(1);
            if let Some(n) = running.by_workspace.get_mut(&self.workspace) {
                *n = n.saturating_sub(1);
                if *n == 0 {
                    running.by_workspace.remove(&self.workspace);
                }
            }
        }
        self.limits.freed.notify_waiters();
    }
}

/// The espeak-ng binary: `RTC_ESPEAK_BIN` when set, else `espeak-ng` on
/// `PATH`; `None` when there is no such file.
pub fn espeak_binary() -> Option<PathBuf> {
    if let Some(bin) = std::env::var_os("RTC_ESPEAK_BIN").filter(|b| !b.is_empty()) {
        let bin = PathBuf::from(bin);
        return bin.is_file().then_some(bin);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join("espeak-ng"))
        .find(|candidate| candidate.is_file())
}

/// Whether `voice` is a valid `-v` value (`^[A-Za-z0-9_+-]{1,64}$`).
pub fn valid_voice(voice: &str) -> bool {
    (1..=64).contains(&voice.len())
        && voice
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '+' | '-'))
}

struct Espeak {
    binary: PathBuf,
    voice: String,
    wpm: u32,
    access: EspeakAccess,
    /// How long a chunk may wait for a free slot.
    wait: Duration,
}

pub(crate) fn open(cfg: &TtsConfig, events: mpsc::Sender<TtsEvent>) -> Result<Pipelined> {
    let access = cfg.espeak.clone().ok_or_else(|| {
        SpeechError::Config("an espeak TTS needs the server's espeak limiter".into())
    })?;
    if !valid_voice(&cfg.voice) {
        return Err(SpeechError::Config(format!(
            "the espeak voice {:?} is not valid",
            cfg.voice
        )));
    }
    let wpm = cfg.speed.map_or(DEFAULT_WPM, |s| s.round() as u32);
    if !(80..=450).contains(&wpm) {
        return Err(SpeechError::Config(format!(
            "espeak speaks 80–450 words per minute, not {wpm}"
        )));
    }
    let binary = access
        .binary
        .clone()
        .or_else(espeak_binary)
        .filter(|b| b.is_file())
        .ok_or_else(|| {
            SpeechError::Unavailable("espeak-ng is not installed (RTC_ESPEAK_BIN, PATH)".into())
        })?;
    let source = Espeak {
        binary,
        voice: cfg.voice.clone(),
        wpm,
        access,
        wait: cfg.timeout,
    };
    Ok(Pipelined::start(
        Arc::new(source),
        1,
        events,
        Scrub::default(),
    ))
}

impl Source for Espeak {
    fn produce(&self, text: String, out: mpsc::UnboundedSender<Piece>) -> BoxFuture<'static, ()> {
        let mut command = tokio::process::Command::new(&self.binary);
        command
            .args(["--stdout", "-v", &self.voice, "-s", &self.wpm.to_string()])
            .args(["-b", "1", "--stdin"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let (access, wait) = (self.access.clone(), self.wait);
        Box::pin(async move {
            let Ok(permit) =
                tokio::time::timeout(wait, access.limiter.acquire(&access.workspace)).await
            else {
                let busy =
                    SpeechError::Unavailable(format!("no espeak process was free within {wait:?}"));
                let _ = out.send(Piece::Failed(busy));
                return;
            };
            let last = match run(command, text, &out).await {
                Ok(()) => Piece::Done,
                Err(e) => Piece::Failed(e),
            };
            drop(permit);
            let _ = out.send(last);
        })
    }
}

/// Run one process to its end (or kill it at [`KILL_AFTER`]).
async fn run(
    mut command: tokio::process::Command,
    text: String,
    out: &mpsc::UnboundedSender<Piece>,
) -> Result<()> {
    let deadline = tokio::time::Instant::now() + KILL_AFTER;
    let mut child = command
        .spawn()
        .map_err(|e| SpeechError::Unavailable(format!("cannot start espeak-ng: {e}")))?;
    let (Some(mut stdin), Some(mut stdout), Some(mut stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return Err(SpeechError::Unavailable("espeak-ng has no pipes".into()));
    };
    let errors = tokio::spawn(async move {
        let mut kept = Vec::new();
        let mut buf = [0u8; 1024];
        while let Ok(n @ 1..) = stderr.read(&mut buf).await {
            if kept.len() < 2048 {
                kept.extend_from_slice(&buf[..n]);
            }
        }
        String::from_utf8_lossy(&kept).trim().to_owned()
    });
    let work = async {
        stdin
            .write_all(format!("{text}\n").as_bytes())
            .await
            .map_err(|e| SpeechError::Unavailable(format!("espeak-ng took no text: {e}")))?;
        drop(stdin);
        let mut reader = PcmReader::wav(ESPEAK_RATE);
        let mut buf = vec![0u8; 16 * 1024];
        let mut total = 0;
        loop {
            let n = stdout
                .read(&mut buf)
                .await
                .map_err(|e| SpeechError::Unavailable(format!("reading espeak-ng failed: {e}")))?;
            if n == 0 {
                break;
            }
            total += n;
            if total > MAX_CHUNK_AUDIO_BYTES {
                return Err(SpeechError::TooLarge(format!(
                    "espeak-ng wrote more than {MAX_CHUNK_AUDIO_BYTES} bytes"
                )));
            }
            let pcm = reader.feed(&buf[..n])?;
            if !pcm.is_empty() {
                let _ = out.send(Piece::Audio {
                    pcm,
                    rate: reader.rate(),
                });
            }
        }
        child
            .wait()
            .await
            .map_err(|e| SpeechError::Unavailable(format!("espeak-ng was lost: {e}")))
    };
    let status = match tokio::time::timeout_at(deadline, work).await {
        Ok(status) => status,
        Err(_) => {
            let _ = child.kill().await;
            return Err(SpeechError::Timeout(KILL_AFTER));
        }
    };
    let status = match status {
        Ok(status) => status,
        Err(e) => {
            let _ = child.kill().await;
            return Err(e);
        }
    };
    if status.success() {
        return Ok(());
    }
    let said = tokio::time::timeout(Duration::from_secs(1), errors)
        .await
        .ok()
        .and_then(std::result::Result::ok)
        .unwrap_or_default();
    Err(SpeechError::Unavailable(format!(
        "espeak-ng failed ({status}): {}",
        crate::error::bounded(&said)
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn half_the_slots_per_workspace_and_waiters_wake() {
        let limiter = EspeakLimiter::new(4);
        assert_eq!(limiter.per_workspace(), 2);
        let a1 = limiter.try_acquire("a");
        let a2 = limiter.try_acquire("a");
        assert!(a1.is_some() && a2.is_some());
        assert!(
            limiter.try_acquire("a").is_none(),
            "half of 4 for one workspace"
        );
        let b = [limiter.try_acquire("b"), limiter.try_acquire("b")];
        assert!(b.iter().all(Option::is_some));
        assert!(limiter.try_acquire("c").is_none(), "4 server-wide");
        assert_eq!((limiter.running(), limiter.running_in("a")), (4, 2));
        let waiting = tokio::spawn({
            let limiter = limiter.clone();
            async move { limiter.acquire("c").await }
        });
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished());
        drop(a1);
        let permit = tokio::time::timeout(Duration::from_secs(1), waiting).await;
        assert!(matches!(permit, Ok(Ok(_))));
        assert_eq!(limiter.running_in("c"), 1);
        assert_eq!(EspeakLimiter::new(1).per_workspace(), 1);
    }

    #[test]
    fn voices_match_the_pattern() {
        assert!(valid_voice("en-us") && valid_voice("cmn") && valid_voice("en+f3"));
        assert!(!valid_voice("") && !valid_voice("en us") && !valid_voice("../x"));
        assert!(!valid_voice(&"a".repeat(65)));
    }
}

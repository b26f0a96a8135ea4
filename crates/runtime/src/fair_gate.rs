//! A fair gate for work that queues per workspace (conversation test runs,
//! R-SEC-7): at most `global` run at once in this process, at most
//! `per_workspace` of one workspace (below `global`, so one workspace
//! never takes every slot), queued work is served round-robin across
//! workspaces, and each workspace may have at most `max_queued` admitted
//! (queued plus running) — more is refused at once, not queued.
//!
//! Admission ([`FairGate::admit`]) gives one [`Ticket`] per unit of work;
//! [`Ticket::wait`] waits for a slot and gives a [`Slot`]. Dropping a
//! ticket or a slot gives its place back.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use parking_lot::{Mutex, MutexGuard};

use tokio::sync::oneshot;

/// The bounds of a gate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TestQueueLimits {
    /// Runs at once in this process.
    pub global: usize,
    /// Runs of one workspace at once.
    pub per_workspace: usize,
    /// Runs of one workspace admitted (queued or running).
    pub max_queued: u64,
}

impl TestQueueLimits {
    /// Half the global slots (at least one), so a second workspace always
    /// finds a free slot.
    pub fn per_workspace_default(global: u64) -> u64 {
        (global / 2).max(1)
    }
}

impl Default for TestQueueLimits {
    fn default() -> Self {
        Self {
            global: 4,
            per_workspace: 2,
            max_queued: 20,
        }
    }
}

/// Why work was not admitted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Refused {
    /// What the workspace has admitted already.
    pub admitted: u64,
    pub max: u64,
}

#[derive(Default)]
struct Workspace {
    running: usize,
    /// Queued or running.
    admitted: u64,
    waiting: VecDeque<oneshot::Sender<()>>,
}

#[derive(Default)]
struct State {
    running: usize,
    workspaces: HashMap<String, Workspace>,
    /// Workspaces with waiters, in the order they are served.
    turns: VecDeque<String>,
}

/// See the module documentation.
pub(crate) struct FairGate {
    limits: TestQueueLimits,
    state: Mutex<State>,
}

impl FairGate {
    pub fn new(limits: TestQueueLimits) -> Arc<Self> {
        let global = limits.global.max(1);
        let limits = TestQueueLimits {
            global,
            // Below the global bound (when there are two slots or more),
            // so one workspace never holds every slot.
            per_workspace: limits.per_workspace.clamp(1, (global - 1).max(1)),
            max_queued: limits.max_queued.max(1),
        };
        Arc::new(Self {
            limits,
            state: Mutex::default(),
        })
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock()
    }

    /// Admit `n` units of `workspace`'s work, all or none.
    pub fn admit(self: &Arc<Self>, workspace: &str, n: usize) -> Result<Vec<Ticket>, Refused> {
        self.admit_within(workspace, n, n)
    }

    /// Admit between one and `n` units of `workspace`'s work, as many as
    /// its bound leaves room for: a suite longer than the bound runs
    /// through the tickets it got, one test after another on each
    /// ([`Slot::into_ticket`]). Refused only when there is no room at all.
    pub fn admit_up_to(
        self: &Arc<Self>,
        workspace: &str,
        n: usize,
    ) -> Result<Vec<Ticket>, Refused> {
        self.admit_within(workspace, n.min(1), n)
    }

    /// Admit as many as there is room for, at least `least`, at most `most`.
    fn admit_within(
        self: &Arc<Self>,
        workspace: &str,
        least: usize,
        most: usize,
    ) -> Result<Vec<Ticket>, Refused> {
        let n = {
            let mut state = self.state();
            let ws = state.workspaces.entry(workspace.to_owned()).or_default();
            let room = self.limits.max_queued.saturating_sub(ws.admitted);
            let n = (most as u64).min(room);
            if n < least as u64 {
                let refused = Refused {
                    admitted: ws.admitted,
                    max: self.limits.max_queued,
                };
                if ws.admitted == 0 {
                    state.workspaces.remove(workspace);
                }
                return Err(refused);
            }
            ws.admitted += n;
            n
        };
        Ok((0..n)
            .map(|_| Ticket {
                gate: self.clone(),
                workspace: workspace.to_owned(),
                used: false,
            })
            .collect())
    }

    /// Give slots to waiters while there are free ones: the next
    /// workspace in turn that may run one more.
    fn dispatch(&self, state: &mut State) {
        // Workspaces passed over in a row (at their own bound); once all
        // with waiters were, nobody can be served now.
        let mut passed = 0;
        while state.running < self.limits.global && passed < state.turns.len() {
            let Some(name) = state.turns.pop_front() else {
                break;
            };
            let Some(ws) = state.workspaces.get_mut(&name) else {
                continue;
            };
            if ws.running >= self.limits.per_workspace {
                state.turns.push_back(name);
                passed += 1;
                continue;
            }
            // Waiters that went away are skipped.
            while let Some(waiter) = ws.waiting.pop_front() {
                if waiter.send(()).is_ok() {
                    ws.running += 1;
                    state.running += 1;
                    passed = 0;
                    break;
                }
            }
            // Served: to the back of the line, if it has more waiting.
            if !ws.waiting.is_empty() {
                state.turns.push_back(name);
            }
        }
    }

    fn release_slot(&self, workspace: &str) {
        let mut state = self.state();
        state.running = state.running.saturating_sub(1);
        if let Some(ws) = state.workspaces.get_mut(workspace) {
            ws.running = ws.running.saturating_sub(1);
        }
        self.dispatch(&mut state);
    }

    fn release_ticket(&self, workspace: &str) {
        let mut state = self.state();
        if let Some(ws) = state.workspaces.get_mut(workspace) {
            ws.admitted = ws.admitted.saturating_sub(1);
            if ws.admitted == 0 && ws.running == 0 && ws.waiting.is_empty() {
                state.workspaces.remove(workspace);
            }
        }
    }

    /// Runs of `workspace` running now (for tests and metrics).
    #[cfg(test)]
    pub fn running(&self, workspace: &str) -> usize {
        self.state()
            .workspaces
            .get(workspace)
            .map_or(0, |w| w.running)
    }
}

/// One admitted unit of work; its place is given back when dropped.
pub(crate) struct Ticket {
    gate: Arc<FairGate>,
    workspace: String,
    used: bool,
}

impl Ticket {
    /// Wait for a slot (at once when one is free and nobody of another
    /// workspace waits before).
    pub async fn wait(mut self) -> Slot {
        let receiver = {
            let mut state = self.gate.state();
            let gate = &self.gate;
            let queue_empty = state.turns.is_empty();
            let global_free = state.running < gate.limits.global;
            let ws = state.workspaces.entry(self.workspace.clone()).or_default();
            if queue_empty && global_free && ws.running < gate.limits.per_workspace {
                ws.running += 1;
                state.running += 1;
                None
            } else {
                let (tx, rx) = oneshot::channel();
                ws.waiting.push_back(tx);
                if !state.turns.contains(&self.workspace) {
                    state.turns.push_back(self.workspace.clone());
                }
                gate.dispatch(&mut state);
                Some(rx)
            }
        };
        if let Some(rx) = receiver {
            let mut waiting = Waiting {
                gate: self.gate.clone(),
                workspace: self.workspace.clone(),
                rx: Some(rx),
            };
            waiting.granted().await;
        }
        // From here the slot holds the admission.
        self.used = true;
        Slot {
            gate: self.gate.clone(),
            workspace: self.workspace.clone(),
            admission_kept: false,
        }
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        if !self.used {
            self.gate.release_ticket(&self.workspace);
        }
    }
}

/// A receiver of a granted slot; dropped after the grant but before it
/// was taken, it gives the slot back.
struct Waiting {
    gate: Arc<FairGate>,
    workspace: String,
    rx: Option<oneshot::Receiver<()>>,
}

impl Waiting {
    async fn granted(&mut self) {
        if let Some(rx) = self.rx.as_mut() {
            // The gate keeps the sender until it grants the slot.
            let _ = rx.await;
        }
        self.rx = None;
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        if let Some(mut rx) = self.rx.take()
            && rx.try_recv().is_ok()
        {
            self.gate.release_slot(&self.workspace);
        }
    }
}

/// A running unit of work; dropping it frees its slot and admission.
pub(crate) struct Slot {
    gate: Arc<FairGate>,
    workspace: String,
    /// Passed on to a new ticket (`into_ticket`).
    admission_kept: bool,
}

impl Slot {
    /// Free the slot but keep the admission: the ticket of the next unit
    /// of the same work (the next test of a suite).
    pub fn into_ticket(mut self) -> Ticket {
        self.admission_kept = true;
        Ticket {
            gate: self.gate.clone(),
            workspace: self.workspace.clone(),
            used: false,
        }
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.gate.release_slot(&self.workspace);
        if !self.admission_kept {
            self.gate.release_ticket(&self.workspace);
        }
    }
}

#[cfg(test)]
#[path = "fair_gate_tests.rs"]
mod tests;

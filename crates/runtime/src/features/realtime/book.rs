//! When the bridge sends `response.create` (design `realtime.md` §5a,
//! pitfalls 1–3): exactly once per response that made tool calls, after
//! that response is done *and* every one of its calls has its output; not
//! when the user spoke since (server VAD creates the next response
//! itself); never while another response is active (it is owed until that
//! one is done). Pure bookkeeping, no IO.

use std::collections::{BTreeSet, HashMap};

use rtc_realtime::ResponseOpts;

#[derive(Debug, Default)]
struct Resp {
    done: bool,
    /// Calls of this response still without an output.
    pending: BTreeSet<String>,
    /// Some output of it should be answered by the model.
    follow_up: bool,
    /// The user spoke after it began.
    speech_since: bool,
    /// Its follow-up was sent (or decided against).
    settled: bool,
    /// The user spoke over it: its audio is dropped.
    barged: bool,
}

/// What the bridge should do now.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Next {
    Nothing,
    Create(ResponseOpts),
}

/// The responses of one provider connection.
#[derive(Debug, Default)]
pub(crate) struct ResponseBook {
    responses: HashMap<String, Resp>,
    calls: HashMap<String, String>,
    active: Option<String>,
    /// A `response.create` was sent and its response has not begun: it
    /// counts as active (a second create would be refused).
    requested: bool,
    owed: Option<ResponseOpts>,
}

impl ResponseBook {
    /// The provider began a response.
    pub fn started(&mut self, id: &str) {
        self.active = Some(id.to_owned());
        self.requested = false;
        self.responses.entry(id.to_owned()).or_default();
    }

    /// Sending the `response.create` [`Next::Create`] asked for failed.
    pub fn create_failed(&mut self) {
        self.requested = false;
    }

    /// Whether a response is being generated or was asked for.
    fn busy(&self) -> bool {
        self.active.is_some() || self.requested
    }

    /// Owe `opts`, keeping an owed response with instructions (a goodbye)
    /// over a plain one.
    fn owe(&mut self, opts: ResponseOpts) {
        if self.owed.as_ref().is_none_or(|o| o.instructions.is_none()) {
            self.owed = Some(opts);
        }
    }

    fn create(&mut self, opts: ResponseOpts) -> Next {
        self.requested = true;
        Next::Create(opts)
    }

    /// The user interrupted the active response another way (a typed
    /// message): it is barged like by speech, without the VAD's follow-up.
    pub fn barge_active(&mut self) -> Option<String> {
        let active = self.active.clone()?;
        if let Some(r) = self.responses.get_mut(&active) {
            r.barged = true;
        }
        Some(active)
    }

    /// The response being generated, if any.
    pub fn active(&self) -> Option<&str> {
        self.active.as_deref()
    }

    /// Whether the user spoke over response `id`.
    pub fn is_barged(&self, id: &str) -> bool {
        self.responses.get(id).is_some_and(|r| r.barged)
    }

    /// Response `response_id` made call `call_id`.
    pub fn call(&mut self, response_id: &str, call_id: &str) {
        self.calls
            .insert(call_id.to_owned(), response_id.to_owned());
        self.responses
            .entry(response_id.to_owned())
            .or_default()
            .pending
            .insert(call_id.to_owned());
    }

    /// Whether `call_id` was made on this connection and waits for its output.
    pub fn is_pending(&self, call_id: &str) -> bool {
        self.calls
            .get(call_id)
            .and_then(|r| self.responses.get(r))
            .is_some_and(|r| r.pending.contains(call_id))
    }

    /// The output of `call_id` was submitted; `follow_up`: the model
    /// should answer it (not for a refused call or one that ends the turn).
    pub fn output(&mut self, call_id: &str, follow_up: bool) -> Next {
        let Some(response_id) = self.calls.get(call_id).cloned() else {
            return Next::Nothing;
        };
        if let Some(r) = self.responses.get_mut(&response_id) {
            r.pending.remove(call_id);
            r.follow_up |= follow_up;
        }
        self.settle(&response_id)
    }

    /// Response `id` is done.
    pub fn done(&mut self, id: &str) -> Next {
        if self.active.as_deref() == Some(id) {
            self.active = None;
        }
        self.responses.entry(id.to_owned()).or_default().done = true;
        let next = match self.settle(id) {
            Next::Nothing if !self.busy() => match self.owed.take() {
                Some(opts) => self.create(opts),
                None => Next::Nothing,
            },
            next => next,
        };
        self.prune();
        next
    }

    /// Forget responses that are done and settled (every call answered),
    /// with their calls: a long session keeps only what is open.
    fn prune(&mut self) {
        let finished: Vec<String> = self
            .responses
            .iter()
            .filter(|(_, r)| r.done && r.settled)
            .map(|(id, _)| id.clone())
            .collect();
        for id in finished {
            self.responses.remove(&id);
            self.calls.retain(|_, r| *r != id);
        }
    }

    /// The user started speaking: the active response (returned) is
    /// barged, and no response waiting for its tools gets a follow-up.
    pub fn speech_started(&mut self) -> Option<String> {
        for r in self.responses.values_mut() {
            r.speech_since = true;
        }
        self.owed = None;
        let active = self.active.clone()?;
        if let Some(r) = self.responses.get_mut(&active) {
            r.barged = true;
        }
        Some(active)
    }

    /// The bridge wants a response of its own (a typed message, a
    /// goodbye): now when none is active, else once the active one is done.
    pub fn want(&mut self, opts: ResponseOpts) -> Next {
        if self.busy() {
            self.owe(opts);
            Next::Nothing
        } else {
            self.create(opts)
        }
    }

    fn settle(&mut self, id: &str) -> Next {
        let Some(r) = self.responses.get_mut(id) else {
            return Next::Nothing;
        };
        if r.settled || !r.done || !r.pending.is_empty() {
            return Next::Nothing;
        }
        r.settled = true;
        if !r.follow_up || r.speech_since {
            return Next::Nothing;
        }
        if self.busy() {
            self.owe(ResponseOpts::default());
            return Next::Nothing;
        }
        self.create(ResponseOpts::default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn create() -> Next {
        Next::Create(ResponseOpts::default())
    }

    #[test]
    fn two_parallel_calls_get_one_response_after_done_and_both_outputs() {
        let mut b = ResponseBook::default();
        b.started("r1");
        b.call("r1", "c1");
        b.call("r1", "c2");
        assert_eq!(
            b.output("c1", true),
            Next::Nothing,
            "the response is not done"
        );
        assert_eq!(b.done("r1"), Next::Nothing, "c2 has no output yet");
        assert_eq!(b.output("c2", true), create());
        assert_eq!(b.output("c2", true), Next::Nothing, "never twice");
        assert_eq!(b.done("r1"), Next::Nothing);
    }

    #[test]
    fn outputs_before_done_wait_for_done() {
        let mut b = ResponseBook::default();
        b.started("r1");
        b.call("r1", "c1");
        assert_eq!(b.output("c1", true), Next::Nothing);
        assert_eq!(b.done("r1"), create());
    }

    #[test]
    fn speech_since_means_no_follow_up_and_refusals_ask_for_none() {
        let mut b = ResponseBook::default();
        b.started("r1");
        b.call("r1", "c1");
        assert_eq!(b.done("r1"), Next::Nothing);
        assert_eq!(b.speech_started(), None, "nothing was active");
        assert_eq!(b.output("c1", true), Next::Nothing, "server VAD answers");
        let mut b = ResponseBook::default();
        b.started("r1");
        b.call("r1", "c1");
        b.done("r1");
        assert_eq!(b.output("c1", false), Next::Nothing, "a refused call");
    }

    #[test]
    fn a_requested_response_counts_as_active_and_a_goodbye_is_not_overwritten() {
        let mut b = ResponseBook::default();
        assert_eq!(b.want(ResponseOpts::default()), create(), "the greeting");
        assert_eq!(
            b.want(ResponseOpts::default()),
            Next::Nothing,
            "not before it began"
        );
        b.started("r1");
        let goodbye = ResponseOpts {
            instructions: Some("bye".into()),
        };
        assert_eq!(b.want(goodbye.clone()), Next::Nothing);
        b.call("r1", "c1");
        assert_eq!(b.output("c1", true), Next::Nothing);
        assert_eq!(b.done("r1"), create(), "the follow-up first");
        b.started("r2");
        assert_eq!(
            b.done("r2"),
            Next::Create(goodbye),
            "then the owed goodbye, not lost"
        );
        b.create_failed();
        assert_eq!(
            b.want(ResponseOpts::default()),
            create(),
            "a failed create frees the slot"
        );
        assert!(
            b.responses.is_empty() && b.calls.is_empty(),
            "finished responses are forgotten"
        );
    }

    #[test]
    fn an_active_response_defers_what_is_owed_and_speech_barges_it() {
        let mut b = ResponseBook::default();
        b.started("r1");
        b.call("r1", "c1");
        b.done("r1");
        b.started("r2");
        assert_eq!(b.output("c1", true), Next::Nothing, "r2 is active");
        assert_eq!(b.done("r2"), create(), "owed once r2 is done");
        b.started("r3");
        assert_eq!(b.speech_started().as_deref(), Some("r3"));
        assert!(b.is_barged("r3") && !b.is_barged("r2"));
        let goodbye = ResponseOpts {
            instructions: Some("bye".into()),
        };
        assert_eq!(b.want(goodbye.clone()), Next::Nothing);
        assert_eq!(b.done("r3"), Next::Create(goodbye));
    }
}

//! Notifications between instances on PostgreSQL (R-ST-2); SQLite has one
//! instance and none.
//!
//! - Which sessions other instances wrote: every commit of session events
//!   notifies `rtc_session_events` with `"<instance> <session>"`, so each
//!   instance's live subscribers re-read what another one committed.
//! - Control messages to one instance (or all, `*`) on `rtc_control`:
//!   `"<to> <op> <argument>"` (see [`ControlOp`]).

use futures::{Stream, StreamExt};
use sqlx::postgres::PgListener;

use crate::{Store, StoreError};

pub(crate) const CHANNEL: &str = "rtc_session_events";
const CONTROL_CHANNEL: &str = "rtc_control";

/// A notification: the writing instance and the session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionWrite {
    pub instance: String,
    pub session: String,
}

/// What one instance asks of another.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ControlOp {
    /// Cancel the session's running turn (a user message or an end
    /// arrived elsewhere); the argument is the session.
    Cancel,
    /// Deliver the session's waiting inbox items at the next boundary.
    Kick,
    /// The reply to a client call routed through the store waits in
    /// `client_calls`; the argument is the call id.
    ClientReply,
    /// A host connection closed; the argument is its id (to `*`).
    ClientGone,
    /// Run the turn a message posted elsewhere asks for: the session's
    /// turns run on this instance, where its voice host is; the argument
    /// is the session.
    StartTurn,
}

impl ControlOp {
    fn as_str(self) -> &'static str {
        match self {
            Self::Cancel => "cancel",
            Self::Kick => "kick",
            Self::ClientReply => "client_reply",
            Self::ClientGone => "client_gone",
            Self::StartTurn => "start_turn",
        }
    }

    fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "cancel" => Self::Cancel,
            "kick" => Self::Kick,
            "client_reply" => Self::ClientReply,
            "client_gone" => Self::ClientGone,
            "start_turn" => Self::StartTurn,
            _ => return None,
        })
    }
}

/// A control message as received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Control {
    /// The instance it is for, or `*`.
    pub to: String,
    pub op: ControlOp,
    pub argument: String,
}

impl Store {
    /// Session writes notified by any instance, or `None` on SQLite. The
    /// stream ends when the listening connection fails for good; call
    /// again to reconnect.
    pub async fn session_writes(
        &self,
    ) -> Result<Option<impl Stream<Item = SessionWrite> + Send + use<>>, StoreError> {
        Ok(self.listen(CHANNEL).await?.map(|s| {
            s.filter_map(|payload| async move {
                let (instance, session) = payload.split_once(' ')?;
                Some(SessionWrite {
                    instance: instance.to_owned(),
                    session: session.to_owned(),
                })
            })
        }))
    }

    /// Control messages for any instance, or `None` on SQLite (the
    /// receiver keeps those for itself or `*`). Reconnect as for
    /// [`Self::session_writes`].
    pub async fn controls(
        &self,
    ) -> Result<Option<impl Stream<Item = Control> + Send + use<>>, StoreError> {
        Ok(self.listen(CONTROL_CHANNEL).await?.map(|s| {
            s.filter_map(|payload| async move {
                let mut parts = payload.splitn(3, ' ');
                Some(Control {
                    to: parts.next()?.to_owned(),
                    op: ControlOp::parse(parts.next()?)?,
                    argument: parts.next()?.to_owned(),
                })
            })
        }))
    }

    /// Send `op` about `argument` to instance `to` (`*`: every instance);
    /// nothing on SQLite.
    pub async fn send_control(
        &self,
        to: &str,
        op: ControlOp,
        argument: &str,
    ) -> Result<(), StoreError> {
        if self.listen_url.is_none() {
            return Ok(());
        }
        crate::engine::query("SELECT pg_notify($1, $2)")
            .bind(CONTROL_CHANNEL)
            .bind(format!("{to} {} {argument}", op.as_str()))
            .execute(&self.writer)
            .await?;
        Ok(())
    }

    async fn listen(
        &self,
        channel: &str,
    ) -> Result<Option<impl Stream<Item = String> + Send + use<>>, StoreError> {
        let Some(url) = &self.listen_url else {
            return Ok(None);
        };
        let mut listener = PgListener::connect(&url.0).await?;
        listener.listen(channel).await?;
        let stream = listener.into_stream().filter_map(|n| async move {
            match n {
                Ok(n) => Some(n.payload().to_owned()),
                Err(e) => {
                    tracing::warn!(error = %e, "notification listener");
                    None
                }
            }
        });
        Ok(Some(stream))
    }
}

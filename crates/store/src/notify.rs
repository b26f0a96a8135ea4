//! Which sessions other instances wrote (R-ST-2): on PostgreSQL every
//! commit of session events notifies `rtc_session_events` with
//! `"<instance> <session>"`, and each instance listens, so its live
//! subscribers re-read what another instance committed. SQLite has one
//! instance and no notifications.

use futures::{Stream, StreamExt};
use sqlx::postgres::PgListener;

use crate::{Store, StoreError};

pub(crate) const CHANNEL: &str = "rtc_session_events";

/// A notification: the writing instance and the session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionWrite {
    pub instance: String,
    pub session: String,
}

impl Store {
    /// Session writes notified by any instance, or `None` on SQLite. The
    /// stream ends when the listening connection fails for good; call
    /// again to reconnect.
    pub async fn session_writes(
        &self,
    ) -> Result<Option<impl Stream<Item = SessionWrite> + Send + use<>>, StoreError> {
        let Some(url) = &self.listen_url else {
            return Ok(None);
        };
        let mut listener = PgListener::connect(&url.0).await?;
        listener.listen(CHANNEL).await?;
        let stream = listener.into_stream().filter_map(|n| async move {
            match n {
                Ok(n) => {
                    let (instance, session) = n.payload().split_once(' ')?;
                    Some(SessionWrite {
                        instance: instance.to_owned(),
                        session: session.to_owned(),
                    })
                }
                Err(e) => {
                    tracing::warn!(error = %e, "session notification listener");
                    None
                }
            }
        });
        Ok(Some(stream))
    }
}

//! Instances and the work they own (R-ST-2). On PostgreSQL several
//! instances share one database: each heartbeats its row in `instances`,
//! and an instance not seen within a lease is dead. A session's
//! `turn_owner` is the instance that runs (or last ran) its turns; it
//! owns the session's work while it lives. A turn starts only through
//! [`Store::claim_turn`], so two instances never run one session's turns
//! at once, and a dead owner's work is adopted by exactly one instance
//! ([`Store::adopt_session`]).

use crate::{Store, StoreError};

/// `sessions.turn_running`: no turn; a turn that began (its
/// `turn.started` is recorded in the same transaction); a turn claimed by
/// [`Store::claim_turn`] that has not begun yet (a crash then leaves no
/// turn to close).
const NOT_RUNNING: i32 = 0;
const BEGUN: i32 = 1;
const CLAIMED: i32 = 2;

/// The answer to [`Store::claim_turn`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TurnClaim {
    /// The turn is ours to run; `cut_off`: the row still showed a turn
    /// that had begun (a dead owner's, or one this instance lost in a
    /// crash), whose end the caller records as interrupted.
    Claimed { cut_off: bool },
    /// A live instance runs the session's turn.
    Busy { owner: String },
    /// The session has ended: no turn starts.
    Ended,
}

/// A session with work whose owner is gone (see
/// [`Store::orphaned_sessions`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrphanedSession {
    pub id: String,
    /// The owner it had (`None`: never owned).
    pub owner: Option<String>,
}

impl Store {
    /// Whether several server processes may use this database at once: a
    /// capability of the engine (PostgreSQL, with its notifications and
    /// row locks, yes; an SQLite file is one process's).
    pub fn allows_several_instances(&self) -> bool {
        self.dialect.is_shared()
    }

    /// Record that instance `id` (process `pid` on `host`) is alive now.
    pub async fn heartbeat_instance(
        &self,
        id: &str,
        host: Option<&str>,
        pid: i64,
        now: i64,
    ) -> Result<(), StoreError> {
        crate::engine::query(
            "INSERT INTO instances (id, host, pid, started_at, seen_at) VALUES ($1, $2, $3, $4, $4) \
             ON CONFLICT (id) DO UPDATE SET seen_at = $4, host = $2, pid = $3",
        )
        .bind(id)
        .bind(host)
        .bind(pid)
        .bind(now)
        .execute(&self.writer)
        .await?;
        Ok(())
    }

    /// The other instances that ran on `host`, with their process ids.
    pub async fn instances_on(
        &self,
        host: &str,
        me: &str,
    ) -> Result<Vec<(String, i64)>, StoreError> {
        let rows = crate::engine::query(
            "SELECT id, pid FROM instances WHERE host = $1 AND id <> $2 AND pid IS NOT NULL",
        )
        .bind(host)
        .bind(me)
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|r| Ok((r.try_get("id")?, r.try_get("pid")?)))
            .collect()
    }

    /// Instance `id` stops: what it owns may be adopted at once.
    pub async fn remove_instance(&self, id: &str) -> Result<(), StoreError> {
        crate::engine::query("DELETE FROM instances WHERE id = $1")
            .bind(id)
            .execute(&self.writer)
            .await?;
        Ok(())
    }

    /// Instances seen at or after `live_since`, by id.
    pub async fn live_instances(&self, live_since: i64) -> Result<Vec<String>, StoreError> {
        let rows = crate::engine::query("SELECT id FROM instances WHERE seen_at >= $1 ORDER BY id")
            .bind(live_since)
            .fetch_all(&self.pool)
            .await?;
        rows.iter().map(|r| r.try_get("id")).collect()
    }

    /// Mark `session`'s turn running under `me`, unless a live instance
    /// (seen at or after `live_since`) other than `me` runs it. The check
    /// and the write are one conditional update, so of two instances
    /// claiming at once exactly one wins.
    pub async fn claim_turn(
        &self,
        session: &str,
        me: &str,
        live_since: i64,
    ) -> Result<TurnClaim, StoreError> {
        loop {
            let row = crate::engine::query(
                "SELECT s.status, s.turn_running, s.turn_owner, \
                 (SELECT COUNT(*) FROM instances n WHERE n.id = s.turn_owner AND n.seen_at >= $2) AS alive \
                 FROM sessions s WHERE s.id = $1",
            )
            .bind(session)
            .bind(live_since)
            .fetch_optional(&self.writer)
            .await?;
            let Some(row) = row else {
                return Err(StoreError::Corrupt(format!("session `{session}` vanished")));
            };
            if row.try_get::<String, _>("status")? == "ended" {
                return Ok(TurnClaim::Ended);
            }
            let mark = row.try_get::<i32, _>("turn_running")?;
            let running = mark != NOT_RUNNING;
            let owner: Option<String> = row.try_get("turn_owner")?;
            let alive = row.try_get::<i64, _>("alive")? > 0;
            if let Some(owner) = owner.as_ref().filter(|o| running && alive && *o != me) {
                return Ok(TurnClaim::Busy {
                    owner: owner.clone(),
                });
            }
            let won = crate::engine::query(
                "UPDATE sessions SET turn_running = $1, turn_owner = $2 \
                 WHERE id = $3 AND turn_running = $4 AND COALESCE(turn_owner, '') = $5 \
                 AND status <> 'ended'",
            )
            .bind(CLAIMED)
            .bind(me)
            .bind(session)
            .bind(mark)
            .bind(owner.as_deref().unwrap_or(""))
            .execute(&self.writer)
            .await?;
            if won.rows_affected() == 1 {
                return Ok(TurnClaim::Claimed {
                    cut_off: mark == BEGUN,
                });
            }
            // Someone changed the row in between: look again.
        }
    }

    /// A claim that started no turn: the session is free again.
    pub async fn release_turn(&self, session: &str, me: &str) -> Result<(), StoreError> {
        crate::engine::query(
            "UPDATE sessions SET turn_running = 0 WHERE id = $1 AND turn_owner = $2",
        )
        .bind(session)
        .bind(me)
        .execute(&self.writer)
        .await?;
        Ok(())
    }

    /// Who runs `session`'s turn now: `None` when no turn runs or its
    /// owner is dead (not seen at or after `live_since`).
    pub async fn live_turn_owner(
        &self,
        session: &str,
        live_since: i64,
    ) -> Result<Option<String>, StoreError> {
        let row = crate::engine::query(
            "SELECT s.turn_owner FROM sessions s WHERE s.id = $1 AND s.turn_running <> 0 \
             AND EXISTS (SELECT 1 FROM instances n WHERE n.id = s.turn_owner AND n.seen_at >= $2)",
        )
        .bind(session)
        .bind(live_since)
        .fetch_optional(&self.writer)
        .await?;
        row.map(|r| r.try_get("turn_owner")).transpose()
    }

    /// Sessions, not ended, with work a dead owner left: a turn marked
    /// running, a working sub-agent, inbox items not delivered, a
    /// workflow action marked running. An owner is dead when it was not
    /// seen at or after `live_since`; `also_mine` (at startup: this
    /// instance's earlier run) counts as dead too. At most `limit`, with
    /// ids after `after` (pages).
    pub async fn orphaned_sessions(
        &self,
        also_mine: Option<&str>,
        live_since: i64,
        after: &str,
        limit: i64,
    ) -> Result<Vec<OrphanedSession>, StoreError> {
        let rows = crate::engine::query(
            "SELECT s.id, s.turn_owner FROM sessions s WHERE s.status <> 'ended' \
             AND (s.turn_running <> 0 \
                  OR s.id IN (SELECT a.session_id FROM sub_agents a WHERE a.running = 1) \
                  OR s.id IN (SELECT i.session_id FROM session_inbox i WHERE NOT EXISTS \
                      (SELECT 1 FROM messages m WHERE m.session_id = i.session_id AND m.id = i.message_id)) \
                  OR s.workflow LIKE '%\"runningAction\"%') \
             AND (s.turn_owner IS NULL OR s.turn_owner = $1 OR NOT EXISTS \
                  (SELECT 1 FROM instances n WHERE n.id = s.turn_owner AND n.seen_at >= $2)) \
             AND s.id > $3 ORDER BY s.id LIMIT $4",
        )
        .bind(also_mine.unwrap_or(""))
        .bind(live_since)
        .bind(after)
        .bind(limit)
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|r| {
                Ok(OrphanedSession {
                    id: r.try_get("id")?,
                    owner: r.try_get("turn_owner")?,
                })
            })
            .collect()
    }

    /// Make `me` the owner of `session` if its owner is still `previous`;
    /// `false` when another instance adopted it first.
    pub async fn adopt_session(
        &self,
        session: &str,
        previous: Option<&str>,
        me: &str,
    ) -> Result<bool, StoreError> {
        let done = crate::engine::query(
            "UPDATE sessions SET turn_owner = $1 WHERE id = $2 AND COALESCE(turn_owner, '') = $3",
        )
        .bind(me)
        .bind(session)
        .bind(previous.unwrap_or(""))
        .execute(&self.writer)
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// Make `me` the owner of `session`'s work (done outside a turn).
    pub async fn own_session(&self, session: &str, me: &str) -> Result<(), StoreError> {
        crate::engine::query("UPDATE sessions SET turn_owner = $1 WHERE id = $2")
            .bind(me)
            .bind(session)
            .execute(&self.writer)
            .await?;
        Ok(())
    }

    /// The instance owning `session`'s turns (see the module doc).
    pub async fn turn_owner(&self, session: &str) -> Result<Option<String>, StoreError> {
        let row = crate::engine::query("SELECT turn_owner FROM sessions WHERE id = $1")
            .bind(session)
            .fetch_optional(&self.pool)
            .await?;
        Ok(row.map(|r| r.try_get("turn_owner")).transpose()?.flatten())
    }
}

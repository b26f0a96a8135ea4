//! Sessions, their message history and their event log.

use rtc_core::time::rfc3339_from_millis;
use rtc_protocol::{
    Message, PendingQuestion, SessionEvent, SessionStatus, TodoItem, WorkflowPosition,
};
use serde_json::{Map, Value};

use crate::records::{insert_events, insert_message};
use crate::{Store, StoreError, hash_token, now_millis};

/// What a new session starts with.
pub struct NewSession<'a> {
    pub id: &'a str,
    pub workspace_id: &'a str,
    pub assistant_id: &'a str,
    pub parent_id: Option<&'a str>,
    pub root_id: &'a str,
    pub user_id: Option<&'a str>,
    pub title: Option<&'a str>,
    pub variables: &'a Map<String, Value>,
    /// The configuration the session runs with (snapshot at start), as
    /// JSON text: stored as given.
    pub config: &'a str,
    pub client_token: &'a str,
    /// Set for a workflow session (`assistant_id` holds the same id).
    pub workflow_id: Option<&'a str>,
    /// The instance creating it, which owns its work until a turn runs
    /// elsewhere (see `instances.rs`).
    pub owner: Option<&'a str>,
}

/// A stored session.
#[derive(Debug, Clone)]
pub struct SessionRecord {
    pub id: String,
    pub workspace_id: String,
    pub assistant_id: String,
    pub parent_id: Option<String>,
    pub root_id: String,
    pub user_id: Option<String>,
    pub title: Option<String>,
    pub status: SessionStatus,
    pub variables: Map<String, Value>,
    /// The configuration snapshot as stored JSON text: whoever runs the
    /// session parses it (once per distinct snapshot), nobody else needs to.
    pub config: String,
    pub turn_running: bool,
    pub end_reason: Option<String>,
    pub ended_by: Option<String>,
    pub todos: Vec<TodoItem>,
    pub pending_question: Option<PendingQuestion>,
    pub created_at: i64,
    pub updated_at: i64,
    pub workflow_id: Option<String>,
    pub workflow: Option<WorkflowPosition>,
}

pub(crate) const COLUMNS: &str = "id, workspace_id, assistant_id, parent_id, root_id, user_id, title, status, variables, config, turn_running, end_reason, ended_by, todos, pending_question, created_at, updated_at, workflow_id, workflow";

fn json_text<T: serde::de::DeserializeOwned>(
    row: &crate::engine::Row,
    col: &str,
) -> Result<T, StoreError> {
    let text: String = row.try_get(col)?;
    serde_json::from_str(&text).map_err(|e| StoreError::Corrupt(format!("{col}: {e}")))
}

pub(crate) fn record(row: &crate::engine::Row) -> Result<SessionRecord, StoreError> {
    let status: String = row.try_get("status")?;
    let running: i32 = row.try_get("turn_running")?;
    Ok(SessionRecord {
        id: row.try_get("id")?,
        workspace_id: row.try_get("workspace_id")?,
        assistant_id: row.try_get("assistant_id")?,
        parent_id: row.try_get("parent_id")?,
        root_id: row.try_get("root_id")?,
        user_id: row.try_get("user_id")?,
        title: row.try_get("title")?,
        status: SessionStatus::parse(&status)
            .ok_or_else(|| StoreError::Corrupt(format!("session status `{status}`")))?,
        variables: json_text(row, "variables")?,
        config: row.try_get("config")?,
        turn_running: running != 0,
        end_reason: row.try_get("end_reason")?,
        ended_by: row.try_get("ended_by")?,
        todos: json_text(row, "todos")?,
        pending_question: row
            .try_get::<Option<String>, _>("pending_question")?
            .map(|text| serde_json::from_str(&text))
            .transpose()
            .map_err(|e| StoreError::Corrupt(format!("pending_question: {e}")))?,
        created_at: row.try_get("created_at")?,
        updated_at: row.try_get("updated_at")?,
        workflow_id: row.try_get("workflow_id")?,
        workflow: row
            .try_get::<Option<String>, _>("workflow")?
            .map(|text| serde_json::from_str(&text))
            .transpose()
            .map_err(|e| StoreError::Corrupt(format!("workflow: {e}")))?,
    })
}

/// Insert a new session row (active, no turn running); gives the time it
/// records as created.
pub(crate) async fn insert_session<'e>(
    executor: impl crate::engine::Exec<'e>,
    s: &NewSession<'_>,
) -> Result<i64, StoreError> {
    let at = now_millis();
    let sql = format!(
        "INSERT INTO sessions ({COLUMNS}, client_token_hash, turn_owner) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, 0, NULL, NULL, '[]', NULL, $11, $11, $13, NULL, $12, $14)"
    );
    crate::engine::query(sql)
        .bind(s.id)
        .bind(s.workspace_id)
        .bind(s.assistant_id)
        .bind(s.parent_id)
        .bind(s.root_id)
        .bind(s.user_id)
        .bind(s.title)
        .bind(SessionStatus::Active.as_str())
        .bind(Value::Object(s.variables.clone()).to_string())
        .bind(s.config)
        .bind(at)
        .bind(hash_token(s.client_token))
        .bind(s.workflow_id)
        .bind(s.owner)
        .execute(executor)
        .await?;
    Ok(at)
}

impl Store {
    /// Insert a new session and give its record, as stored, without
    /// reading it back.
    pub async fn create_session(&self, s: NewSession<'_>) -> Result<SessionRecord, StoreError> {
        let at = insert_session(&self.writer, &s).await?;
        Ok(created_record(&s, at))
    }

    /// [`Self::create_session`] unless the workspace already has `cap`
    /// active sessions (`None` then). Counting and inserting are one step
    /// (SQLite's write lock; a PostgreSQL advisory lock per workspace), so
    /// sessions created at once cannot pass the cap together.
    pub async fn create_session_within(
        &self,
        s: NewSession<'_>,
        cap: u64,
    ) -> Result<Option<SessionRecord>, StoreError> {
        let mut tx = self.begin_write().await?;
        if let Some(lock) = self.dialect.key_lock() {
            crate::engine::query(lock)
                .bind(format!("rtc-sessions/{}", s.workspace_id))
                .execute(&mut *tx)
                .await?;
        }
        if count_active(&mut *tx, s.workspace_id, cap).await? >= cap {
            return Ok(None);
        }
        let at = insert_session(&mut *tx, &s).await?;
        tx.commit().await?;
        Ok(Some(created_record(&s, at)))
    }
}

/// The record of a session just inserted at `at`.
fn created_record(s: &NewSession<'_>, at: i64) -> SessionRecord {
    SessionRecord {
        id: s.id.to_owned(),
        workspace_id: s.workspace_id.to_owned(),
        assistant_id: s.assistant_id.to_owned(),
        parent_id: s.parent_id.map(str::to_owned),
        root_id: s.root_id.to_owned(),
        user_id: s.user_id.map(str::to_owned),
        title: s.title.map(str::to_owned),
        status: SessionStatus::Active,
        variables: s.variables.clone(),
        config: s.config.to_owned(),
        turn_running: false,
        end_reason: None,
        ended_by: None,
        todos: Vec::new(),
        pending_question: None,
        created_at: at,
        updated_at: at,
        workflow_id: s.workflow_id.map(str::to_owned),
        workflow: None,
    }
}

/// Active sessions of `workspace`, counted up to `cap`.
async fn count_active<'e>(
    executor: impl crate::engine::Exec<'e>,
    workspace: &str,
    cap: u64,
) -> Result<u64, StoreError> {
    let row = crate::engine::query(
        "SELECT COUNT(*) AS n FROM (SELECT 1 FROM sessions WHERE workspace_id = $1 AND status <> 'ended' LIMIT $2) AS active",
    )
    .bind(workspace)
    .bind(i64::try_from(cap).unwrap_or(i64::MAX))
    .fetch_one(executor)
    .await?;
    let n: i64 = row.try_get("n")?;
    Ok(u64::try_from(n).unwrap_or(0))
}

impl Store {
    /// A session of this workspace.
    pub async fn session(
        &self,
        workspace: &str,
        id: &str,
    ) -> Result<Option<SessionRecord>, StoreError> {
        Ok(self
            .session_by_id(id)
            .await?
            .filter(|s| s.workspace_id == workspace))
    }

    /// A session by id alone (runtime use).
    pub async fn session_by_id(&self, id: &str) -> Result<Option<SessionRecord>, StoreError> {
        let sql = format!("SELECT {COLUMNS} FROM sessions WHERE id = $1");
        let row = crate::engine::query(sql)
            .bind(id)
            .fetch_optional(&self.pool)
            .await?;
        row.as_ref().map(record).transpose()
    }

    /// Whether `token` is the client token of session `id`.
    pub async fn check_client_token(
        &self,
        id: &str,
        token: &str,
    ) -> Result<Option<String>, StoreError> {
        let row = crate::engine::query(
            "SELECT workspace_id FROM sessions WHERE id = $1 AND client_token_hash = $2",
        )
        .bind(id)
        .bind(hash_token(token))
        .fetch_optional(&self.pool)
        .await?;
        row.map(|r| r.try_get("workspace_id")).transpose()
    }

    /// The newest sessions of a workspace.
    pub async fn list_sessions(
        &self,
        workspace: &str,
        limit: i64,
    ) -> Result<Vec<SessionRecord>, StoreError> {
        let sql = format!(
            "SELECT {COLUMNS} FROM sessions WHERE workspace_id = $1 ORDER BY created_at DESC, id LIMIT $2"
        );
        let rows = crate::engine::query(sql)
            .bind(workspace)
            .bind(limit)
            .fetch_all(&self.pool)
            .await?;
        rows.iter().map(record).collect()
    }

    pub async fn set_session_status(
        &self,
        id: &str,
        status: SessionStatus,
        end_reason: Option<&str>,
        ended_by: Option<&str>,
    ) -> Result<(), StoreError> {
        crate::engine::query("UPDATE sessions SET status = $1, end_reason = COALESCE($2, end_reason), ended_by = COALESCE($3, ended_by), updated_at = $4 WHERE id = $5")
            .bind(status.as_str())
            .bind(end_reason)
            .bind(ended_by)
            .bind(now_millis())
            .bind(id)
            .execute(&self.writer)
            .await?;
        Ok(())
    }

    /// Mark a turn running or not. For tests (what a crash leaves behind):
    /// the runtime sets `turn_running` with its turn's records.
    pub async fn set_turn_running(&self, id: &str, running: bool) -> Result<(), StoreError> {
        crate::engine::query("UPDATE sessions SET turn_running = $1 WHERE id = $2")
            .bind(i32::from(running))
            .bind(id)
            .execute(&self.writer)
            .await?;
        Ok(())
    }

    /// Sessions whose turn was running when the process stopped.
    pub async fn sessions_with_running_turn(&self) -> Result<Vec<String>, StoreError> {
        let rows = crate::engine::query("SELECT id FROM sessions WHERE turn_running = 1")
            .fetch_all(&self.pool)
            .await?;
        rows.iter().map(|r| r.try_get("id")).collect()
    }

    /// Workflow sessions, not ended, whose position marks an action as
    /// running: the server stopped during it (it is not run again).
    pub async fn sessions_with_running_action(&self) -> Result<Vec<String>, StoreError> {
        let rows = crate::engine::query(
            "SELECT id FROM sessions WHERE status <> 'ended' AND workflow LIKE '%\"runningAction\"%'",
        )
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(|r| r.try_get("id")).collect()
    }

    /// Append a message to a session's history; returns its position.
    /// For tests and data seeding only: the runtime writes messages with
    /// their events through the journal (`append_batch`).
    pub async fn append_message(
        &self,
        session: &str,
        message: &Message,
    ) -> Result<i64, StoreError> {
        let mut conn = self.writer.acquire().await?;
        insert_message(&mut conn, session, message).await
    }

    /// How many messages a session has.
    /// The characters of a session's stored messages (their JSON), for
    /// the bound on a session's history.
    pub async fn message_bytes(&self, session: &str) -> Result<u64, StoreError> {
        let row = crate::engine::query(
            "SELECT CAST(COALESCE(SUM(LENGTH(body)), 0) AS BIGINT) AS n FROM messages WHERE session_id = $1",
        )
        .bind(session)
        .fetch_one(&self.pool)
        .await?;
        Ok(u64::try_from(row.try_get::<i64, _>("n")?).unwrap_or(0))
    }

    pub async fn message_count(&self, session: &str) -> Result<i64, StoreError> {
        let row = crate::engine::query("SELECT COUNT(*) AS n FROM messages WHERE session_id = $1")
            .bind(session)
            .fetch_one(&self.pool)
            .await?;
        row.try_get("n")
    }

    /// Replace a stored message (found by its id) with `message`, keeping
    /// its place; `false` if the session has no message with that id.
    pub async fn replace_message(
        &self,
        session: &str,
        message: &Message,
    ) -> Result<bool, StoreError> {
        let body =
            serde_json::to_string(message).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        let mut conn = self.writer.acquire().await?;
        let done =
            crate::engine::query("UPDATE messages SET body = $1 WHERE session_id = $2 AND id = $3")
                .bind(body)
                .bind(session)
                .bind(&message.id)
                .execute(&mut conn)
                .await?;
        Ok(done.rows_affected() > 0)
    }

    /// A session's history, oldest first.
    pub async fn messages(&self, session: &str) -> Result<Vec<Message>, StoreError> {
        let rows =
            crate::engine::query("SELECT body FROM messages WHERE session_id = $1 ORDER BY seq")
                .bind(session)
                .fetch_all(&self.pool)
                .await?;
        rows.iter().map(|r| json_text(r, "body")).collect()
    }

    /// The newest `limit` messages of a session, newest first.
    pub async fn recent_messages(
        &self,
        session: &str,
        limit: i64,
    ) -> Result<Vec<Message>, StoreError> {
        let rows = crate::engine::query(
            "SELECT body FROM messages WHERE session_id = $1 ORDER BY seq DESC LIMIT $2",
        )
        .bind(session)
        .bind(limit)
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(|r| json_text(r, "body")).collect()
    }

    /// Store an event under its sequence number. For tests and data
    /// seeding only: the runtime numbers and writes events in the
    /// journal's commit (`append_batch`).
    pub async fn append_event(
        &self,
        event: &SessionEvent,
        at_millis: i64,
    ) -> Result<(), StoreError> {
        let mut conn = self.writer.acquire().await?;
        insert_events(&mut conn, &[(event, at_millis)]).await
    }

    /// Events after `after` (exclusive), oldest first, at most `limit`.
    pub async fn events_after(
        &self,
        session: &str,
        after: i64,
        limit: i64,
    ) -> Result<Vec<SessionEvent>, StoreError> {
        let rows = crate::engine::query("SELECT seq, kind, payload, created_at FROM events WHERE session_id = $1 AND seq > $2 ORDER BY seq LIMIT $3")
            .bind(session)
            .bind(after)
            .bind(limit)
            .fetch_all(&self.pool)
            .await?;
        rows.iter()
            .map(|r| {
                let kind: String = r.try_get("kind")?;
                let mut payload: Map<String, Value> = json_text(r, "payload")?;
                let test_mode = payload.remove("testMode") == Some(Value::Bool(true));
                payload.insert("type".to_owned(), Value::String(kind.clone()));
                let body = serde_json::from_value(Value::Object(payload))
                    .map_err(|e| StoreError::Corrupt(format!("event `{kind}`: {e}")))?;
                Ok(SessionEvent {
                    session_id: session.to_owned(),
                    seq: r.try_get("seq")?,
                    timestamp: rfc3339_from_millis(r.try_get("created_at")?),
                    test_mode,
                    body,
                })
            })
            .collect()
    }

    /// The highest event number of a session (0 when none).
    pub async fn last_event_seq(&self, session: &str) -> Result<i64, StoreError> {
        let row = crate::engine::query(
            "SELECT COALESCE(MAX(seq), 0) AS seq FROM events WHERE session_id = $1",
        )
        .bind(session)
        .fetch_one(&self.pool)
        .await?;
        row.try_get("seq")
    }
}

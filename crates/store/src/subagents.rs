//! Sub-agent sessions (R-SA) and session inboxes (R-BX-3). A sub-agent is
//! a session with a parent; its row here adds how the parent waits for it
//! and whether it is working. The inbox holds what must reach a session at
//! its next turn boundary (a child's report, a parent's message); an item
//! is consumed exactly when the message it becomes is in the history.

use crate::sessions::{COLUMNS as SESSION_COLUMNS, NewSession, SessionRecord, insert_session};
use crate::{Store, StoreError, now_millis};

/// A sub-agent's own facts; times are epoch milliseconds.
#[derive(Debug, Clone, PartialEq)]
pub struct SubAgentRecord {
    pub session_id: String,
    pub parent_id: String,
    pub root_id: String,
    /// `async` or `sync`.
    pub mode: String,
    /// The parent's call waiting for the first report (sync mode).
    pub call_id: Option<String>,
    /// 1 for a child of the root.
    pub depth: i64,
    /// Working (true) or reported and idle (false).
    pub running: bool,
    pub created_at: i64,
    pub updated_at: i64,
}

/// What an inbox item becomes in the history.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InboxKind {
    /// A sub-agent's report for a waiting (sync) call: a tool result.
    CallResult,
    /// A sub-agent's report as a notification: a user-role message.
    Report,
    /// The parent's message to a sub-agent: a user-role message.
    ParentMessage,
    /// A delegated task's report (R-TK): a user-role message.
    TaskReport,
}

impl InboxKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::CallResult => "call_result",
            Self::Report => "report",
            Self::ParentMessage => "parent_message",
            Self::TaskReport => "task_report",
        }
    }

    fn parse(s: &str) -> Option<Self> {
        [
            Self::CallResult,
            Self::Report,
            Self::ParentMessage,
            Self::TaskReport,
        ]
        .into_iter()
        .find(|k| k.as_str() == s)
    }
}

/// Something waiting to be delivered to `session_id`.
#[derive(Debug, Clone, PartialEq)]
pub struct InboxItem {
    pub id: String,
    pub session_id: String,
    pub kind: InboxKind,
    pub from_session_id: Option<String>,
    pub call_id: Option<String>,
    pub content: String,
    /// The id its message gets; the item is consumed once it exists.
    pub message_id: String,
    pub created_at: i64,
}

impl InboxItem {
    /// A new item for `session` from `from`, with fresh ids, made now.
    pub fn new(
        session: &str,
        kind: InboxKind,
        from: &str,
        call_id: Option<String>,
        content: String,
    ) -> Self {
        Self {
            id: crate::new_id("inbox"),
            session_id: session.to_owned(),
            kind,
            from_session_id: Some(from.to_owned()),
            call_id,
            content,
            message_id: crate::new_id("msg"),
            created_at: now_millis(),
        }
    }
}

const AGENT_COLUMNS: &str =
    "session_id, parent_id, root_id, mode, call_id, depth, running, created_at, updated_at";
const INBOX_COLUMNS: &str =
    "id, session_id, kind, from_session_id, call_id, content, message_id, created_at";

fn agent(row: &crate::engine::Row) -> Result<SubAgentRecord, StoreError> {
    let running: i32 = row.try_get("running")?;
    Ok(SubAgentRecord {
        session_id: row.try_get("session_id")?,
        parent_id: row.try_get("parent_id")?,
        root_id: row.try_get("root_id")?,
        mode: row.try_get("mode")?,
        call_id: row.try_get("call_id")?,
        depth: row.try_get("depth")?,
        running: running != 0,
        created_at: row.try_get("created_at")?,
        updated_at: row.try_get("updated_at")?,
    })
}

fn inbox_item(row: &crate::engine::Row) -> Result<InboxItem, StoreError> {
    let kind: String = row.try_get("kind")?;
    Ok(InboxItem {
        id: row.try_get("id")?,
        session_id: row.try_get("session_id")?,
        kind: InboxKind::parse(&kind)
            .ok_or_else(|| StoreError::Corrupt(format!("inbox kind `{kind}`")))?,
        from_session_id: row.try_get("from_session_id")?,
        call_id: row.try_get("call_id")?,
        content: row.try_get("content")?,
        message_id: row.try_get("message_id")?,
        created_at: row.try_get("created_at")?,
    })
}

pub(crate) async fn insert_inbox<'e>(
    executor: impl crate::engine::Exec<'e>,
    item: &InboxItem,
) -> Result<(), StoreError> {
    let sql = format!(
        "INSERT INTO session_inbox ({INBOX_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)"
    );
    crate::engine::query(sql)
        .bind(&item.id)
        .bind(&item.session_id)
        .bind(item.kind.as_str())
        .bind(&item.from_session_id)
        .bind(&item.call_id)
        .bind(&item.content)
        .bind(&item.message_id)
        .bind(item.created_at)
        .execute(executor)
        .await?;
    Ok(())
}

impl Store {
    /// Create a sub-agent: its session and its row, and the first message
    /// it must read, in one transaction.
    pub async fn create_sub_agent(
        &self,
        session: NewSession<'_>,
        agent: &SubAgentRecord,
        first: &InboxItem,
    ) -> Result<(), StoreError> {
        let mut tx = self.begin_write().await?;
        insert_session(&mut *tx, &session).await?;
        let sql = format!(
            "INSERT INTO sub_agents ({AGENT_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)"
        );
        crate::engine::query(sql)
            .bind(&agent.session_id)
            .bind(&agent.parent_id)
            .bind(&agent.root_id)
            .bind(&agent.mode)
            .bind(&agent.call_id)
            .bind(agent.depth)
            .bind(i32::from(agent.running))
            .bind(agent.created_at)
            .bind(agent.updated_at)
            .execute(&mut *tx)
            .await?;
        insert_inbox(&mut *tx, first).await?;
        tx.commit().await?;
        Ok(())
    }

    /// The sub-agent row of a session (`None` for a root session).
    pub async fn sub_agent(&self, session: &str) -> Result<Option<SubAgentRecord>, StoreError> {
        let sql = format!("SELECT {AGENT_COLUMNS} FROM sub_agents WHERE session_id = $1");
        let row = crate::engine::query(sql)
            .bind(session)
            .fetch_optional(&self.pool)
            .await?;
        row.as_ref().map(agent).transpose()
    }

    /// Every session of a tree, oldest first, with its sub-agent row (the
    /// root has none).
    pub async fn session_tree(
        &self,
        root: &str,
    ) -> Result<Vec<(SessionRecord, Option<SubAgentRecord>)>, StoreError> {
        let sql = format!(
            "SELECT {SESSION_COLUMNS} FROM sessions WHERE root_id = $1 ORDER BY created_at, id"
        );
        let sessions = crate::engine::query(sql)
            .bind(root)
            .fetch_all(&self.pool)
            .await?;
        let sql = format!("SELECT {AGENT_COLUMNS} FROM sub_agents WHERE root_id = $1");
        let agents = crate::engine::query(sql)
            .bind(root)
            .fetch_all(&self.pool)
            .await?
            .iter()
            .map(agent)
            .collect::<Result<Vec<_>, _>>()?;
        sessions
            .iter()
            .map(|row| {
                let s = crate::sessions::record(row)?;
                let a = agents.iter().find(|a| a.session_id == s.id).cloned();
                Ok((s, a))
            })
            .collect()
    }

    /// A sub-agent starts working again (a message reached it).
    pub async fn set_sub_agent_running(&self, session: &str) -> Result<(), StoreError> {
        crate::engine::query(
            "UPDATE sub_agents SET running = 1, updated_at = $1 WHERE session_id = $2",
        )
        .bind(now_millis())
        .bind(session)
        .execute(&self.writer)
        .await?;
        Ok(())
    }

    /// A sub-agent finished a run: it is idle, no call waits for it any
    /// more (later reports are notifications), and `report` waits in the
    /// parent's inbox; one transaction.
    pub async fn finish_sub_agent_run(
        &self,
        session: &str,
        report: &InboxItem,
    ) -> Result<(), StoreError> {
        let mut tx = self.begin_write().await?;
        crate::engine::query("UPDATE sub_agents SET running = 0, call_id = NULL, updated_at = $1 WHERE session_id = $2")
            .bind(now_millis())
            .bind(session)
            .execute(&mut *tx)
            .await?;
        insert_inbox(&mut *tx, report).await?;
        tx.commit().await?;
        Ok(())
    }

    /// The parent stopped waiting for a sync sub-agent (the user spoke):
    /// its report will come as a notification.
    pub async fn detach_sub_agent_call(&self, session: &str) -> Result<(), StoreError> {
        crate::engine::query(
            "UPDATE sub_agents SET call_id = NULL, updated_at = $1 WHERE session_id = $2",
        )
        .bind(now_millis())
        .bind(session)
        .execute(&self.writer)
        .await?;
        Ok(())
    }

    /// Stopped sub-agents are no longer working.
    pub async fn stop_sub_agent(&self, session: &str) -> Result<(), StoreError> {
        crate::engine::query("UPDATE sub_agents SET running = 0, call_id = NULL, updated_at = $1 WHERE session_id = $2")
            .bind(now_millis())
            .bind(session)
            .execute(&self.writer)
            .await?;
        Ok(())
    }

    /// The sub-agents of `parent` whose report a call of the parent waits for.
    pub async fn awaited_sub_agents(
        &self,
        parent: &str,
    ) -> Result<Vec<SubAgentRecord>, StoreError> {
        let sql = format!(
            "SELECT {AGENT_COLUMNS} FROM sub_agents WHERE parent_id = $1 AND call_id IS NOT NULL ORDER BY created_at"
        );
        let rows = crate::engine::query(sql)
            .bind(parent)
            .fetch_all(&self.pool)
            .await?;
        rows.iter().map(agent).collect()
    }

    /// How many sub-agents of `parent` are still working.
    pub async fn working_children(&self, parent: &str) -> Result<i64, StoreError> {
        let row = crate::engine::query(
            "SELECT COUNT(*) AS n FROM sub_agents a JOIN sessions s ON s.id = a.session_id \
             WHERE a.parent_id = $1 AND a.running = 1 AND s.status <> 'ended'",
        )
        .bind(parent)
        .fetch_one(&self.pool)
        .await?;
        row.try_get("n")
    }

    /// Active sub-agents still working on their task (restart recovery).
    pub async fn working_sub_agents(&self) -> Result<Vec<String>, StoreError> {
        let rows = crate::engine::query(
            "SELECT a.session_id FROM sub_agents a JOIN sessions s ON s.id = a.session_id \
             WHERE a.running = 1 AND s.status = 'active' ORDER BY a.depth DESC, a.created_at",
        )
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(|r| r.try_get("session_id")).collect()
    }

    /// Put an item in a session's inbox.
    pub async fn post_inbox(&self, item: &InboxItem) -> Result<(), StoreError> {
        insert_inbox(&self.writer, item).await
    }

    /// A session's unconsumed inbox items, call results first, then by age.
    pub async fn pending_inbox(&self, session: &str) -> Result<Vec<InboxItem>, StoreError> {
        let sql = format!(
            "SELECT {INBOX_COLUMNS} FROM session_inbox i WHERE session_id = $1 \
             AND NOT EXISTS (SELECT 1 FROM messages m WHERE m.session_id = i.session_id AND m.id = i.message_id) \
             ORDER BY CASE WHEN kind = 'call_result' THEN 0 ELSE 1 END, created_at, id"
        );
        let rows = crate::engine::query(sql)
            .bind(session)
            .fetch_all(&self.pool)
            .await?;
        rows.iter().map(inbox_item).collect()
    }

    /// Active sessions with unconsumed inbox items (redelivery at start).
    pub async fn sessions_with_pending_inbox(&self) -> Result<Vec<String>, StoreError> {
        let rows = crate::engine::query(
            "SELECT DISTINCT i.session_id FROM session_inbox i JOIN sessions s ON s.id = i.session_id \
             WHERE s.status = 'active' \
             AND NOT EXISTS (SELECT 1 FROM messages m WHERE m.session_id = i.session_id AND m.id = i.message_id)",
        )
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(|r| r.try_get("session_id")).collect()
    }
}

//! Appending a session's records: messages, events and changes of its
//! row, several sessions in one transaction (the journal's group commit),
//! with each session's events numbered in order.

use std::collections::HashMap;

use rtc_protocol::{Message, PendingQuestion, SessionEvent, TodoItem, WorkflowPosition};
use serde_json::{Map, Value};

use crate::{Store, StoreError, now_millis};

/// A message (if any), the events recorded with it and changes of the
/// session row, for [`Store::append_batch`].
pub struct SessionRecords<'a> {
    pub session: &'a str,
    pub message: Option<&'a Message>,
    /// Their `seq` is given at commit: the next numbers of the session.
    pub events: &'a mut [SessionEvent],
    pub update: &'a SessionUpdate,
    pub at_millis: i64,
}

/// Changes of a session row written with its records (`None`: unchanged).
#[derive(Debug, Clone, Default)]
pub struct SessionUpdate {
    /// All current variable values.
    pub variables: Option<Map<String, Value>>,
    /// Whether a turn is running (for recovery after a crash).
    pub turn_running: Option<bool>,
    /// The whole todo list.
    pub todos: Option<Vec<TodoItem>>,
    /// The question the session waits on; `Some(None)` clears it.
    pub pending_question: Option<Option<PendingQuestion>>,
    /// A workflow session's new position.
    pub workflow: Option<WorkflowPosition>,
}

impl SessionUpdate {
    fn is_empty(&self) -> bool {
        self.variables.is_none()
            && self.turn_running.is_none()
            && self.todos.is_none()
            && self.pending_question.is_none()
            && self.workflow.is_none()
    }
}

impl Store {
    /// Store several sessions' records in one transaction (group commit):
    /// the messages in multi-row inserts, the session changes in order,
    /// then all events in multi-row inserts, numbered in batch order. The
    /// records of a session that is gone (deleted meanwhile) are dropped,
    /// not failing the other sessions' records; the ids of those sessions
    /// are returned, so the caller can tell their writers.
    ///
    /// On PostgreSQL, `notify_as` (the writing instance) is announced for
    /// every session with messages or events, delivered to other instances
    /// on commit.
    pub async fn append_batch(
        &self,
        batch: &mut [SessionRecords<'_>],
        notify_as: Option<&str>,
    ) -> Result<Vec<String>, StoreError> {
        let mut tx = self.begin_write().await?;
        let mut next = self.next_numbers(&mut tx, batch, notify_as).await?;
        let gone: Vec<String> =
            sessions_with(batch, |r| has_records(r) && !next.contains_key(r.session))
                .into_iter()
                .map(str::to_owned)
                .collect();
        let mut messages = Vec::new();
        for r in batch.iter_mut() {
            let Some(n) = next.get_mut(r.session) else {
                continue;
            };
            if let Some(m) = r.message {
                messages.push((r.session, n.message, m, r.at_millis));
                n.message += 1;
            }
            for e in r.events.iter_mut() {
                e.seq = n.event;
                n.event += 1;
            }
        }
        for chunk in messages.chunks(MESSAGES_PER_INSERT) {
            insert_messages(&mut tx, chunk).await?;
        }
        for r in batch.iter() {
            if !r.update.is_empty() {
                update_session(&mut tx, r.session, r.update, r.at_millis).await?;
            }
        }
        let events: Vec<(&SessionEvent, i64)> = batch
            .iter()
            .filter(|r| next.contains_key(r.session))
            .flat_map(|r| r.events.iter().map(|e| (e, r.at_millis)))
            .collect();
        for chunk in events.chunks(EVENTS_PER_INSERT) {
            insert_events(&mut tx, chunk).await?;
        }
        tx.commit().await?;
        Ok(gone)
    }

    /// The next message and event numbers of the batch's sessions that
    /// have any, read in one statement per [`SESSIONS_PER_STATEMENT`]
    /// sessions. On PostgreSQL the same statement locks the session rows,
    /// in id order, so writers of several instances take turns per session
    /// (SQLite's write transaction is exclusive already), and announces
    /// that `notify_as` wrote them (`NOTIFY`, delivered on commit).
    async fn next_numbers(
        &self,
        tx: &mut crate::engine::Conn,
        batch: &[SessionRecords<'_>],
        notify_as: Option<&str>,
    ) -> Result<HashMap<String, NextNumbers>, StoreError> {
        let sessions = sessions_with(batch, has_records);
        let mut next = HashMap::new();
        for chunk in sessions.chunks(SESSIONS_PER_STATEMENT) {
            let ids = padded(chunk);
            let list = placeholders(1, ids.len()).collect::<Vec<_>>().join(", ");
            let shared = self.dialect.is_shared();
            // Rows locked in one order, so two instances' batches never
            // wait on each other in a cycle.
            let lock = if shared {
                format!(" ORDER BY s.id{}", self.dialect.lock_rows())
            } else {
                String::new()
            };
            // Other instances are told (`pg_notify` gives `void`, which no
            // driver type decodes).
            let notifier = notify_as.filter(|_| shared);
            let announce = match notifier {
                Some(_) => format!(
                    ", pg_notify(${}, ${}::text || ' ' || s.id)::text IS NULL AS announced",
                    ids.len() + 1,
                    ids.len() + 2
                ),
                None => String::new(),
            };
            let sql = format!(
                "SELECT s.id, \
                 (SELECT COALESCE(MAX(seq), 0) FROM messages m WHERE m.session_id = s.id) AS message, \
                 (SELECT COALESCE(MAX(seq), 0) FROM events e WHERE e.session_id = s.id) AS event{announce} \
                 FROM sessions s WHERE s.id IN ({list}){lock}"
            );
            let mut query = bind_all(crate::engine::query(sql), &ids);
            if let Some(me) = notifier {
                query = query.bind(crate::notify::CHANNEL).bind(me);
            }
            let rows = query.fetch_all(&mut *tx).await?;
            for row in rows {
                let session: String = row.try_get("id")?;
                let numbers = NextNumbers {
                    message: row.try_get::<i64, _>("message")? + 1,
                    event: row.try_get::<i64, _>("event")? + 1,
                };
                next.insert(session, numbers);
            }
        }
        Ok(next)
    }
}

/// A session's next message and event `seq`.
struct NextNumbers {
    message: i64,
    event: i64,
}

/// Sessions per `IN` list. Lists are padded to a power of two (repeating
/// the last id, which changes no result), so a connection prepares at
/// most a handful of statement shapes.
const SESSIONS_PER_STATEMENT: usize = 64;

/// Whether a session's records hold something numbered (a message or events).
fn has_records(r: &SessionRecords<'_>) -> bool {
    r.message.is_some() || !r.events.is_empty()
}

/// The distinct sessions of the batch with records that `keep`, in id
/// order.
fn sessions_with<'a>(
    batch: &[SessionRecords<'a>],
    keep: impl Fn(&SessionRecords<'a>) -> bool,
) -> Vec<&'a str> {
    let mut sessions: Vec<&str> = batch
        .iter()
        .filter(|r| keep(r))
        .map(|r| r.session)
        .collect();
    sessions.sort_unstable();
    sessions.dedup();
    sessions
}

/// `ids` padded to a power of two by repeating the last one.
fn padded<'a>(ids: &[&'a str]) -> Vec<&'a str> {
    let mut padded = ids.to_vec();
    if let Some(last) = ids.last() {
        padded.resize(ids.len().next_power_of_two(), last);
    }
    padded
}

/// The placeholders `$first`, `$first + 1`, … of `n` parameters.
fn placeholders(first: usize, n: usize) -> impl Iterator<Item = String> {
    (first..first + n).map(|i| format!("${i}"))
}

/// The `VALUES` rows of a multi-row insert: `rows` tuples of `width`
/// placeholders each, numbered from `$1` on.
pub(crate) fn value_rows(rows: usize, width: usize) -> String {
    (0..rows)
        .map(|i| {
            let row: Vec<String> = placeholders(1 + width * i, width).collect();
            format!("({})", row.join(", "))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn bind_all<'q>(mut query: crate::engine::Query<'q>, ids: &[&'q str]) -> crate::engine::Query<'q> {
    for id in ids {
        query = query.bind(*id);
    }
    query
}

/// Rows per multi-row message insert (6 parameters each).
const MESSAGES_PER_INSERT: usize = 100;

/// Messages of the batch with their numbers, in one statement.
async fn insert_messages(
    conn: &mut crate::engine::Conn,
    messages: &[(&str, i64, &Message, i64)],
) -> Result<(), StoreError> {
    let sql = format!(
        "INSERT INTO messages (session_id, seq, id, role, body, created_at) VALUES {}",
        value_rows(messages.len(), 6)
    );
    let mut query = crate::engine::query(sql);
    for (session, seq, message, at_millis) in messages {
        query = query
            .bind(*session)
            .bind(*seq)
            .bind(message.id.as_str())
            .bind(message.role.as_str())
            .bind(json(message)?)
            .bind(*at_millis);
    }
    query.execute(&mut *conn).await?;
    Ok(())
}

pub(crate) async fn insert_message(
    conn: &mut crate::engine::Conn,
    session: &str,
    message: &Message,
) -> Result<i64, StoreError> {
    let body = serde_json::to_string(message).map_err(|e| StoreError::Corrupt(e.to_string()))?;
    let row = crate::engine::query(
        "INSERT INTO messages (session_id, seq, id, role, body, created_at) \
         VALUES ($1, (SELECT COALESCE(MAX(seq), 0) + 1 FROM messages WHERE session_id = $1), $2, $3, $4, $5) RETURNING seq",
    )
    .bind(session)
    .bind(&message.id)
    .bind(message.role.as_str())
    .bind(body)
    .bind(now_millis())
    .fetch_one(&mut *conn)
    .await?;
    row.try_get("seq")
}

async fn update_session(
    conn: &mut crate::engine::Conn,
    session: &str,
    update: &SessionUpdate,
    at_millis: i64,
) -> Result<(), StoreError> {
    let mut sets: Vec<(&str, Option<String>)> = Vec::new();
    if let Some(v) = &update.variables {
        sets.push(("variables", Some(json(v)?)));
    }
    if let Some(t) = &update.todos {
        sets.push(("todos", Some(json(t)?)));
    }
    if let Some(q) = &update.pending_question {
        sets.push(("pending_question", q.as_ref().map(json).transpose()?));
    }
    if let Some(w) = &update.workflow {
        sets.push(("workflow", Some(json(w)?)));
    }
    let mut sql = String::from("UPDATE sessions SET updated_at = $1");
    for (n, (column, _)) in sets.iter().enumerate() {
        sql.push_str(&format!(", {column} = ${}", n + 2));
    }
    let running_at = sets.len() + 2;
    if update.turn_running.is_some() {
        sql.push_str(&format!(", turn_running = ${running_at}"));
    }
    let id_at = running_at + usize::from(update.turn_running.is_some());
    sql.push_str(&format!(" WHERE id = ${id_at}"));
    let mut query = crate::engine::query(sql).bind(at_millis);
    for (_, value) in sets {
        query = query.bind(value);
    }
    if let Some(running) = update.turn_running {
        query = query.bind(i32::from(running));
    }
    query.bind(session).execute(&mut *conn).await?;
    Ok(())
}

/// A JSON column's text.
fn json<T: serde::Serialize>(value: &T) -> Result<String, StoreError> {
    serde_json::to_string(value).map_err(|e| StoreError::Corrupt(e.to_string()))
}

/// Rows per multi-row event insert (5 parameters each; far below the
/// engines' parameter limits).
const EVENTS_PER_INSERT: usize = 200;

/// The event's fields without its `type` (stored in its own column).
fn event_payload(event: &SessionEvent) -> Result<String, StoreError> {
    let mut value = serde_json::to_value(&event.body)
        .map_err(|e| StoreError::Corrupt(format!("event `{}`: {e}", event.kind())))?;
    if let Some(fields) = value.as_object_mut() {
        fields.remove("type");
        if event.test_mode {
            fields.insert("testMode".to_owned(), serde_json::Value::Bool(true));
        }
    }
    Ok(value.to_string())
}

pub(crate) async fn insert_events(
    conn: &mut crate::engine::Conn,
    events: &[(&SessionEvent, i64)],
) -> Result<(), StoreError> {
    let sql = format!(
        "INSERT INTO events (session_id, seq, kind, payload, created_at) VALUES {}",
        value_rows(events.len(), 5)
    );
    let mut query = crate::engine::query(sql);
    for (event, at_millis) in events {
        query = query
            .bind(event.session_id.as_str())
            .bind(event.seq)
            .bind(event.kind())
            .bind(event_payload(event)?)
            .bind(*at_millis);
    }
    query.execute(&mut *conn).await?;
    Ok(())
}

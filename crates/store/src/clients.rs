//! Client tools across instances (R-ST-2, R-CT): on PostgreSQL each host
//! connection that declared client functions has a row naming the
//! instance holding its socket, heartbeated with it, so a turn running on
//! another instance finds it; a call routed there has a row naming the
//! instance waiting, and the host's reply is written into it where the
//! reply arrives.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::{Store, StoreError};

/// A host connection's client functions, each with the schema hash it
/// declared.
pub type DeclaredFunctions = BTreeMap<String, Option<String>>;

/// A host connection held by some instance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientConnectionRow {
    pub id: String,
    pub session_id: String,
    pub instance: String,
    pub functions: DeclaredFunctions,
    pub seen_at: i64,
    /// The session's turns run where this connection is (a voice host).
    pub hosts_turns: bool,
}

impl Store {
    /// Insert or replace connection `id`'s declaration.
    pub async fn put_client_connection(&self, row: &ClientConnectionRow) -> Result<(), StoreError> {
        let functions = serde_json::to_string(&row.functions)
            .map_err(|e| StoreError::Corrupt(e.to_string()))?;
        crate::engine::query(
            "INSERT INTO client_connections (id, session_id, instance, functions, seen_at, hosts_turns) \
             VALUES ($1, $2, $3, $4, $5, $6) \
             ON CONFLICT (id) DO UPDATE SET functions = $4, seen_at = $5, hosts_turns = $6",
        )
        .bind(&row.id)
        .bind(&row.session_id)
        .bind(&row.instance)
        .bind(functions)
        .bind(row.seen_at)
        .bind(i64::from(row.hosts_turns))
        .execute(&self.writer)
        .await?;
        Ok(())
    }

    /// Connection `id` closed.
    pub async fn remove_client_connection(&self, id: &str) -> Result<(), StoreError> {
        crate::engine::query("DELETE FROM client_connections WHERE id = $1")
            .bind(id)
            .execute(&self.writer)
            .await?;
        Ok(())
    }

    /// The connections `instance` holds are still open, now.
    pub async fn heartbeat_client_connections(
        &self,
        instance: &str,
        now: i64,
    ) -> Result<(), StoreError> {
        crate::engine::query("UPDATE client_connections SET seen_at = $1 WHERE instance = $2")
            .bind(now)
            .bind(instance)
            .execute(&self.writer)
            .await?;
        Ok(())
    }

    /// Forget the connections of `instance` (its earlier run, at startup)
    /// and those of any instance not seen since `stale_before`, and calls
    /// older than that (their waiting instance stopped).
    pub async fn remove_stale_client_connections(
        &self,
        instance: &str,
        stale_before: i64,
    ) -> Result<(), StoreError> {
        crate::engine::query("DELETE FROM client_connections WHERE instance = $1 OR seen_at < $2")
            .bind(instance)
            .bind(stale_before)
            .execute(&self.writer)
            .await?;
        crate::engine::query("DELETE FROM client_calls WHERE created_at < $1")
            .bind(stale_before)
            .execute(&self.writer)
            .await?;
        Ok(())
    }

    /// The open connections of `session` seen at or after `fresh_since`,
    /// oldest first.
    pub async fn client_connections(
        &self,
        session: &str,
        fresh_since: i64,
    ) -> Result<Vec<ClientConnectionRow>, StoreError> {
        let rows = crate::engine::query(
            "SELECT id, session_id, instance, functions, seen_at, hosts_turns FROM client_connections \
             WHERE session_id = $1 AND seen_at >= $2 ORDER BY id",
        )
        .bind(session)
        .bind(fresh_since)
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|r| {
                let functions: String = r.try_get("functions")?;
                Ok(ClientConnectionRow {
                    id: r.try_get("id")?,
                    session_id: r.try_get("session_id")?,
                    instance: r.try_get("instance")?,
                    functions: serde_json::from_str(&functions)
                        .map_err(|e| StoreError::Corrupt(format!("client functions: {e}")))?,
                    seen_at: r.try_get("seen_at")?,
                    hosts_turns: r.try_get::<i64, _>("hosts_turns")? != 0,
                })
            })
            .collect()
    }

    /// Whether connection `id` is open and seen at or after `fresh_since`.
    pub async fn client_connection_open(
        &self,
        id: &str,
        fresh_since: i64,
    ) -> Result<bool, StoreError> {
        let row = crate::engine::query(
            "SELECT 1 AS one FROM client_connections WHERE id = $1 AND seen_at >= $2",
        )
        .bind(id)
        .bind(fresh_since)
        .fetch_optional(&self.pool)
        .await?;
        Ok(row.is_some())
    }

    /// `instance` waits for call `call_id` of `session`, sent to
    /// connection `connection`.
    pub async fn insert_client_call(
        &self,
        call_id: &str,
        session: &str,
        instance: &str,
        connection: &str,
        now: i64,
    ) -> Result<(), StoreError> {
        crate::engine::query(
            "INSERT INTO client_calls (call_id, session_id, instance, connection_id, reply, created_at) \
             VALUES ($1, $2, $3, $4, NULL, $5) \
             ON CONFLICT (session_id, call_id) DO UPDATE SET instance = $3, connection_id = $4, reply = NULL, created_at = $5",
        )
        .bind(call_id)
        .bind(session)
        .bind(instance)
        .bind(connection)
        .bind(now)
        .execute(&self.writer)
        .await?;
        Ok(())
    }

    /// The host's reply to call `call_id` of `session`, arrived on another
    /// instance: stored once; returns the instance waiting for it, or
    /// `None` when no call of that session waits under that id.
    pub async fn answer_client_call(
        &self,
        call_id: &str,
        session: &str,
        reply: &Value,
    ) -> Result<Option<String>, StoreError> {
        let row = crate::engine::query(
            "UPDATE client_calls SET reply = $1 WHERE call_id = $2 AND session_id = $3 AND reply IS NULL \
             RETURNING instance",
        )
        .bind(reply.to_string())
        .bind(call_id)
        .bind(session)
        .fetch_optional(&self.writer)
        .await?;
        row.map(|r| r.try_get("instance")).transpose()
    }

    /// The reply to call `call_id` of `session`, if one arrived: the row
    /// is then removed.
    pub async fn take_client_reply(
        &self,
        session: &str,
        call_id: &str,
    ) -> Result<Option<Value>, StoreError> {
        let row = crate::engine::query(
            "DELETE FROM client_calls WHERE session_id = $1 AND call_id = $2 AND reply IS NOT NULL \
             RETURNING reply",
        )
        .bind(session)
        .bind(call_id)
        .fetch_optional(&self.writer)
        .await?;
        let Some(reply) = row.map(|r| r.try_get::<String, _>("reply")).transpose()? else {
            return Ok(None);
        };
        serde_json::from_str(&reply)
            .map(Some)
            .map_err(|e| StoreError::Corrupt(format!("client reply: {e}")))
    }

    /// The call is over (answered, timed out or failed): its row goes.
    pub async fn remove_client_call(&self, session: &str, call_id: &str) -> Result<(), StoreError> {
        crate::engine::query("DELETE FROM client_calls WHERE session_id = $1 AND call_id = $2")
            .bind(session)
            .bind(call_id)
            .execute(&self.writer)
            .await?;
        Ok(())
    }
}

//! Long-term memories of an end user within a workspace (R-MM-1..2),
//! ranked by full-text relevance: FTS5 with bm25 on SQLite, a `tsvector`
//! with `ts_rank` on PostgreSQL. Every query is scoped by workspace and
//! user; another user's memory is indistinguishable from a missing one.

use crate::{Dialect, Store, StoreError, new_id, now_millis};

/// A stored memory.
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryRecord {
    pub id: String,
    pub user_id: String,
    pub content: String,
    pub tags: Vec<String>,
    pub created_at: i64,
    pub updated_at: i64,
}

const COLUMNS: &str = "id, user_id, content, tags, created_at, updated_at";
/// Most words of a search query that are used.
const MAX_QUERY_TERMS: usize = 16;

fn record(row: &crate::engine::Row) -> Result<MemoryRecord, StoreError> {
    let tags: String = row.try_get("tags")?;
    Ok(MemoryRecord {
        id: row.try_get("id")?,
        user_id: row.try_get("user_id")?,
        content: row.try_get("content")?,
        tags: serde_json::from_str(&tags).map_err(|e| StoreError::Corrupt(format!("tags: {e}")))?,
        created_at: row.try_get("created_at")?,
        updated_at: row.try_get("updated_at")?,
    })
}

fn tags_text(tags: &[String]) -> Result<String, StoreError> {
    serde_json::to_string(tags).map_err(|e| StoreError::Corrupt(e.to_string()))
}

/// The words of a query (letters and digits, any script), lower-cased.
fn terms(query: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for word in query.split(|c: char| !c.is_alphanumeric()) {
        let word: String = word.chars().take(64).collect::<String>().to_lowercase();
        if !word.is_empty() && !out.contains(&word) {
            out.push(word);
        }
        if out.len() == MAX_QUERY_TERMS {
            break;
        }
    }
    out
}

impl Store {
    pub async fn insert_memory(
        &self,
        workspace: &str,
        user: &str,
        content: &str,
        tags: &[String],
    ) -> Result<MemoryRecord, StoreError> {
        let id = new_id("mem");
        let now = now_millis();
        crate::engine::query("INSERT INTO memories (id, workspace_id, user_id, content, tags, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $6)")
            .bind(&id)
            .bind(workspace)
            .bind(user)
            .bind(content)
            .bind(tags_text(tags)?)
            .bind(now)
            .execute(&self.writer)
            .await?;
        Ok(MemoryRecord {
            id,
            user_id: user.to_owned(),
            content: content.to_owned(),
            tags: tags.to_vec(),
            created_at: now,
            updated_at: now,
        })
    }

    /// Change a memory's content and/or tags; `None` when the user has no
    /// such memory.
    pub async fn update_memory(
        &self,
        workspace: &str,
        user: &str,
        id: &str,
        content: Option<&str>,
        tags: Option<&[String]>,
    ) -> Result<Option<MemoryRecord>, StoreError> {
        let tags = tags.map(tags_text).transpose()?;
        let done = crate::engine::query("UPDATE memories SET content = COALESCE($1, content), tags = COALESCE($2, tags), updated_at = $3 WHERE id = $4 AND workspace_id = $5 AND user_id = $6")
            .bind(content)
            .bind(tags)
            .bind(now_millis())
            .bind(id)
            .bind(workspace)
            .bind(user)
            .execute(&self.writer)
            .await?;
        if done.rows_affected() == 0 {
            return Ok(None);
        }
        self.memory(workspace, Some(user), id).await
    }

    /// A memory of the workspace (of `user`, when given).
    pub async fn memory(
        &self,
        workspace: &str,
        user: Option<&str>,
        id: &str,
    ) -> Result<Option<MemoryRecord>, StoreError> {
        let sql = format!(
            "SELECT {COLUMNS} FROM memories WHERE id = $1 AND workspace_id = $2 AND ($3 IS NULL OR user_id = $3)"
        );
        let row = crate::engine::query(sql)
            .bind(id)
            .bind(workspace)
            .bind(user)
            .fetch_optional(&self.pool)
            .await?;
        row.as_ref().map(record).transpose()
    }

    /// Delete one memory (of `user`, when given); whether it existed.
    pub async fn delete_memory(
        &self,
        workspace: &str,
        user: Option<&str>,
        id: &str,
    ) -> Result<bool, StoreError> {
        let done = crate::engine::query("DELETE FROM memories WHERE id = $1 AND workspace_id = $2 AND ($3 IS NULL OR user_id = $3)")
            .bind(id)
            .bind(workspace)
            .bind(user)
            .execute(&self.writer)
            .await?;
        Ok(done.rows_affected() > 0)
    }

    /// Delete every memory of a user; how many there were.
    pub async fn delete_user_memories(
        &self,
        workspace: &str,
        user: &str,
    ) -> Result<u64, StoreError> {
        let done =
            crate::engine::query("DELETE FROM memories WHERE workspace_id = $1 AND user_id = $2")
                .bind(workspace)
                .bind(user)
                .execute(&self.writer)
                .await?;
        Ok(done.rows_affected())
    }

    /// A user's memories, newest first, and how many there are in all.
    pub async fn list_memories(
        &self,
        workspace: &str,
        user: &str,
        limit: i64,
        offset: i64,
    ) -> Result<(Vec<MemoryRecord>, i64), StoreError> {
        let sql = format!(
            "SELECT {COLUMNS} FROM memories WHERE workspace_id = $1 AND user_id = $2 ORDER BY updated_at DESC, id LIMIT $3 OFFSET $4"
        );
        let rows = crate::engine::query(sql)
            .bind(workspace)
            .bind(user)
            .bind(limit)
            .bind(offset)
            .fetch_all(&self.pool)
            .await?;
        let total: i64 = crate::engine::query(
            "SELECT COUNT(*) AS n FROM memories WHERE workspace_id = $1 AND user_id = $2",
        )
        .bind(workspace)
        .bind(user)
        .fetch_one(&self.pool)
        .await?
        .try_get("n")?;
        Ok((rows.iter().map(record).collect::<Result<_, _>>()?, total))
    }

    /// A user's memories matching any word of `query`, most relevant
    /// first, with their scores (higher is better).
    pub async fn search_memories(
        &self,
        workspace: &str,
        user: &str,
        query: &str,
        limit: i64,
    ) -> Result<Vec<(MemoryRecord, f64)>, StoreError> {
        let terms = terms(query);
        if terms.is_empty() {
            return Ok(Vec::new());
        }
        let (sql, expression) = match self.dialect {
            Dialect::Sqlite => (
                "SELECT m.id, m.user_id, m.content, m.tags, m.created_at, m.updated_at, -bm25(memories_fts) AS score \
                 FROM memories_fts JOIN memories m ON m.rowid = memories_fts.rowid \
                 WHERE memories_fts MATCH $1 AND m.workspace_id = $2 AND m.user_id = $3 \
                 ORDER BY bm25(memories_fts) LIMIT $4",
                terms
                    .iter()
                    .map(|t| format!("\"{t}\""))
                    .collect::<Vec<_>>()
                    .join(" OR "),
            ),
            Dialect::Postgres => (
                "SELECT id, user_id, content, tags, created_at, updated_at, \
                 CAST(ts_rank(search, to_tsquery('simple', $1)) AS DOUBLE PRECISION) AS score \
                 FROM memories WHERE search @@ to_tsquery('simple', $1) AND workspace_id = $2 AND user_id = $3 \
                 ORDER BY score DESC, updated_at DESC LIMIT $4",
                terms.join(" | "),
            ),
        };
        let rows = crate::engine::query(sql)
            .bind(expression)
            .bind(workspace)
            .bind(user)
            .bind(limit)
            .fetch_all(&self.pool)
            .await?;
        rows.iter()
            .map(|r| Ok((record(r)?, r.try_get::<f64, _>("score")?)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::terms;

    #[test]
    fn query_terms_are_words_only() {
        assert_eq!(
            terms("Ann's \"dog\" OR name*"),
            ["ann", "s", "dog", "or", "name"]
        );
        assert_eq!(terms("咖啡 偏好"), ["咖啡", "偏好"]);
        assert!(terms("  -- ** ").is_empty());
    }
}

//! Configuration resources as JSON documents with typed access, and the
//! references between them that protect a resource in use from deletion.

use std::collections::BTreeMap;

use rtc_core::time::rfc3339_from_millis;
use rtc_protocol::{
    Assistant, McpServer, RealtimeInterface, SpeechInterface, TaskBackend, Tool, Workflow,
};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::{Store, StoreError, new_id, now_millis};

/// The kinds of stored resources (and of reference targets).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum ResourceKind {
    Tool,
    McpServer,
    Assistant,
    RealtimeInterface,
    Secret,
    Workflow,
    TaskBackend,
    SpeechInterface,
}

impl ResourceKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Tool => "tool",
            Self::McpServer => "mcp_server",
            Self::Assistant => "assistant",
            Self::RealtimeInterface => "realtime_interface",
            Self::Secret => "secret",
            Self::Workflow => "workflow",
            Self::TaskBackend => "task_backend",
            Self::SpeechInterface => "speech_interface",
        }
    }

    fn parse(s: &str) -> Option<Self> {
        [
            Self::Tool,
            Self::McpServer,
            Self::Assistant,
            Self::RealtimeInterface,
            Self::Secret,
            Self::Workflow,
            Self::TaskBackend,
            Self::SpeechInterface,
        ]
        .into_iter()
        .find(|k| k.as_str() == s)
    }

    /// The prefix of generated ids.
    pub fn id_prefix(self) -> &'static str {
        match self {
            Self::Tool => "tool",
            Self::McpServer => "mcp",
            Self::Assistant => "asst",
            Self::RealtimeInterface => "rti",
            Self::Secret => "secret",
            Self::Workflow => "wf",
            Self::TaskBackend => "tb",
            Self::SpeechInterface => "si",
        }
    }
}

/// One resource another one depends on.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Reference {
    pub kind: ResourceKind,
    pub id: String,
}

impl Reference {
    pub fn new(kind: ResourceKind, id: impl Into<String>) -> Self {
        Self {
            kind,
            id: id.into(),
        }
    }
}

/// A resource type stored as a document.
pub trait Document: Clone + Serialize + DeserializeOwned + Send + Sync + Unpin + 'static {
    const KIND: ResourceKind;
    fn name(&self) -> &str;
    /// What this resource depends on.
    fn references(&self) -> Vec<Reference>;
    /// Values kept encrypted at rest, like secrets: sealed with the master
    /// key when stored, opened when read (a stdio MCP server's `env`).
    fn sealed_values(&mut self) -> Vec<&mut String> {
        Vec::new()
    }
    /// Set the read-only fields (`None` clears them before storage).
    fn set_meta(
        &mut self,
        id: Option<String>,
        created_at: Option<String>,
        updated_at: Option<String>,
    );
}

macro_rules! meta {
    () => {
        fn set_meta(
            &mut self,
            id: Option<String>,
            created_at: Option<String>,
            updated_at: Option<String>,
        ) {
            self.id = id;
            self.created_at = created_at;
            self.updated_at = updated_at;
        }
    };
}

impl Document for Tool {
    const KIND: ResourceKind = ResourceKind::Tool;
    fn name(&self) -> &str {
        &self.name
    }
    fn references(&self) -> Vec<Reference> {
        let mut refs: Vec<Reference> = rtc_core::tool_rules::referenced_secrets(self)
            .into_iter()
            .map(|s| Reference::new(ResourceKind::Secret, s))
            .collect();
        if let Some(mcp) = &self.mcp {
            refs.push(Reference::new(ResourceKind::McpServer, &mcp.server_id));
        }
        refs
    }
    meta!();
}

impl Document for McpServer {
    const KIND: ResourceKind = ResourceKind::McpServer;
    fn name(&self) -> &str {
        &self.name
    }
    fn references(&self) -> Vec<Reference> {
        rtc_core::mcp_rules::referenced_secrets(self)
            .into_iter()
            .map(|s| Reference::new(ResourceKind::Secret, s))
            .collect()
    }
    fn sealed_values(&mut self) -> Vec<&mut String> {
        match &mut self.transport {
            rtc_protocol::McpTransport::Stdio { env, .. } => env.values_mut().collect(),
            rtc_protocol::McpTransport::StreamableHttp { .. } => Vec::new(),
        }
    }
    meta!();
}

impl Document for Assistant {
    const KIND: ResourceKind = ResourceKind::Assistant;
    fn name(&self) -> &str {
        &self.name
    }
    fn references(&self) -> Vec<Reference> {
        let mut refs: Vec<Reference> = rtc_core::assistant_rules::referenced_tools(self)
            .into_iter()
            .map(|id| Reference::new(ResourceKind::Tool, id))
            .collect();
        if let Some(id) = &self.realtime_interface_id {
            refs.push(Reference::new(ResourceKind::RealtimeInterface, id));
        }
        if let Some(id) = &self.task_backend_id {
            refs.push(Reference::new(ResourceKind::TaskBackend, id));
        }
        refs.extend(
            rtc_core::speech_rules::referenced_interfaces(self)
                .into_iter()
                .map(|id| Reference::new(ResourceKind::SpeechInterface, id)),
        );
        refs
    }
    meta!();
}

impl Document for TaskBackend {
    const KIND: ResourceKind = ResourceKind::TaskBackend;
    fn name(&self) -> &str {
        &self.name
    }
    fn references(&self) -> Vec<Reference> {
        use rtc_core::task_backend_rules::{referenced_secrets, referenced_tools};
        let mut refs: Vec<Reference> = referenced_tools(self)
            .into_iter()
            .map(|id| Reference::new(ResourceKind::Tool, id))
            .collect();
        refs.extend(
            referenced_secrets(self)
                .into_iter()
                .map(|s| Reference::new(ResourceKind::Secret, s)),
        );
        refs
    }
    meta!();
}

impl Document for Workflow {
    const KIND: ResourceKind = ResourceKind::Workflow;
    fn name(&self) -> &str {
        &self.name
    }
    fn references(&self) -> Vec<Reference> {
        use rtc_core::workflow_stage::{referenced_assistants, referenced_tools};
        let mut refs: Vec<Reference> = referenced_tools(self)
            .into_iter()
            .map(|id| Reference::new(ResourceKind::Tool, id))
            .collect();
        refs.extend(
            referenced_assistants(self)
                .into_iter()
                .map(|id| Reference::new(ResourceKind::Assistant, id)),
        );
        if let Some(id) = &self.realtime_interface_id {
            refs.push(Reference::new(ResourceKind::RealtimeInterface, id));
        }
        refs
    }
    meta!();
}

impl Document for RealtimeInterface {
    const KIND: ResourceKind = ResourceKind::RealtimeInterface;
    fn name(&self) -> &str {
        &self.name
    }
    fn references(&self) -> Vec<Reference> {
        rtc_core::realtime::referenced_secret(self)
            .into_iter()
            .map(|s| Reference::new(ResourceKind::Secret, s))
            .collect()
    }
    meta!();
}

impl Document for SpeechInterface {
    const KIND: ResourceKind = ResourceKind::SpeechInterface;
    fn name(&self) -> &str {
        &self.name
    }
    fn references(&self) -> Vec<Reference> {
        rtc_core::speech_rules::referenced_secret(self)
            .into_iter()
            .map(|s| Reference::new(ResourceKind::Secret, s))
            .collect()
    }
    meta!();
}

/// Marks a value sealed by [`Store::seal_values`]; a value without it was
/// stored before sealing existed and is read as written (and sealed on the
/// next write).
const SEALED_PREFIX: &str = "sealed:v1:";

/// What a sealed value is bound to: it opens only in its own resource.
fn sealed_aad(workspace: &str, kind: ResourceKind, id: &str) -> String {
    format!("{workspace}/{}/{id}", kind.as_str())
}

/// The stored body of `doc` as `(workspace, id)`: sealed values encrypted.
pub(crate) fn encode_sealed<D: Document>(
    store: &Store,
    workspace: &str,
    id: &str,
    doc: &D,
) -> Result<String, StoreError> {
    store.seal_values(workspace, id, doc)
}

fn encode<D: Document>(doc: &D) -> Result<String, StoreError> {
    let mut value = serde_json::to_value(doc).map_err(|e| StoreError::Corrupt(e.to_string()))?;
    if let Some(map) = value.as_object_mut() {
        for key in ["id", "createdAt", "updatedAt"] {
            map.remove(key);
        }
    }
    Ok(value.to_string())
}

impl Store {
    /// The document as stored: its sealed values encrypted.
    fn seal_values<D: Document>(
        &self,
        workspace: &str,
        id: &str,
        doc: &D,
    ) -> Result<String, StoreError> {
        let mut stored = doc.clone();
        let aad = sealed_aad(workspace, D::KIND, id);
        for value in stored.sealed_values() {
            *value = format!("{SEALED_PREFIX}{}", self.secrets.seal(&aad, value)?);
        }
        encode(&stored)
    }

    pub(crate) fn decode<D: Document>(
        &self,
        workspace: &str,
        row: &crate::engine::Row,
    ) -> Result<D, StoreError> {
        let id: String = row.try_get("id")?;
        let mut doc = decode::<D>(row)?;
        let aad = sealed_aad(workspace, D::KIND, &id);
        for value in doc.sealed_values() {
            if let Some(sealed) = value.strip_prefix(SEALED_PREFIX) {
                *value = self.secrets.open(&aad, sealed)?;
            }
        }
        Ok(doc)
    }
}

fn decode<D: Document>(row: &crate::engine::Row) -> Result<D, StoreError> {
    let id: String = row.try_get("id")?;
    let body: String = row.try_get("body")?;
    let created: i64 = row.try_get("created_at")?;
    let updated: i64 = row.try_get("updated_at")?;
    let mut doc: D = serde_json::from_str(&body)
        .map_err(|e| StoreError::Corrupt(format!("{} {id}: {e}", D::KIND.as_str())))?;
    doc.set_meta(
        Some(id),
        Some(rfc3339_from_millis(created)),
        Some(rfc3339_from_millis(updated)),
    );
    Ok(doc)
}

impl Store {
    /// Insert a new document; `id` is generated unless given.
    pub async fn insert<D: Document>(
        &self,
        workspace: &str,
        id: Option<String>,
        doc: D,
    ) -> Result<D, StoreError> {
        let id = id.unwrap_or_else(|| new_id(D::KIND.id_prefix()));
        let body = self.seal_values(workspace, &id, &doc)?;
        let now = now_millis();
        let mut tx = self.begin_write().await?;
        let exists = crate::engine::query(
            "SELECT 1 FROM resources WHERE workspace_id = $1 AND kind = $2 AND id = $3",
        )
        .bind(workspace)
        .bind(D::KIND.as_str())
        .bind(&id)
        .fetch_optional(&mut *tx)
        .await?;
        if exists.is_some() {
            return Err(StoreError::AlreadyExists(id));
        }
        crate::engine::query("INSERT INTO resources (workspace_id, kind, id, name, body, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $6)")
            .bind(workspace)
            .bind(D::KIND.as_str())
            .bind(&id)
            .bind(doc.name())
            .bind(&body)
            .bind(now)
            .execute(&mut *tx)
            .await?;
        write_references(&mut tx, workspace, D::KIND, &id, &doc.references()).await?;
        tx.commit().await?;
        let mut doc = doc;
        let at = Some(rfc3339_from_millis(now));
        doc.set_meta(Some(id), at.clone(), at);
        Ok(doc)
    }

    /// Replace a document; `None` if it does not exist.
    pub async fn update<D: Document>(
        &self,
        workspace: &str,
        id: &str,
        doc: D,
    ) -> Result<Option<D>, StoreError> {
        let body = self.seal_values(workspace, id, &doc)?;
        let now = now_millis();
        let mut tx = self.begin_write().await?;
        let row = crate::engine::query(
            "SELECT created_at FROM resources WHERE workspace_id = $1 AND kind = $2 AND id = $3",
        )
        .bind(workspace)
        .bind(D::KIND.as_str())
        .bind(id)
        .fetch_optional(&mut *tx)
        .await?;
        let Some(row) = row else { return Ok(None) };
        let created: i64 = row.try_get("created_at")?;
        crate::engine::query("UPDATE resources SET name = $1, body = $2, updated_at = $3 WHERE workspace_id = $4 AND kind = $5 AND id = $6")
            .bind(doc.name())
            .bind(&body)
            .bind(now)
            .bind(workspace)
            .bind(D::KIND.as_str())
            .bind(id)
            .execute(&mut *tx)
            .await?;
        write_references(&mut tx, workspace, D::KIND, id, &doc.references()).await?;
        tx.commit().await?;
        let mut doc = doc;
        doc.set_meta(
            Some(id.to_owned()),
            Some(rfc3339_from_millis(created)),
            Some(rfc3339_from_millis(now)),
        );
        Ok(Some(doc))
    }

    pub async fn get<D: Document>(
        &self,
        workspace: &str,
        id: &str,
    ) -> Result<Option<D>, StoreError> {
        let row = crate::engine::query("SELECT id, body, created_at, updated_at FROM resources WHERE workspace_id = $1 AND kind = $2 AND id = $3")
            .bind(workspace)
            .bind(D::KIND.as_str())
            .bind(id)
            .fetch_optional(&self.pool)
            .await?;
        row.as_ref().map(|r| self.decode(workspace, r)).transpose()
    }

    /// Several documents by id; missing ids are simply absent.
    pub async fn get_many<D: Document>(
        &self,
        workspace: &str,
        ids: impl IntoIterator<Item = String>,
    ) -> Result<BTreeMap<String, D>, StoreError> {
        let mut out = BTreeMap::new();
        for id in ids {
            if let Some(doc) = self.get::<D>(workspace, &id).await? {
                out.insert(id, doc);
            }
        }
        Ok(out)
    }

    /// Every document of a kind, oldest first.
    pub async fn list<D: Document>(&self, workspace: &str) -> Result<Vec<D>, StoreError> {
        let rows = crate::engine::query("SELECT id, body, created_at, updated_at FROM resources WHERE workspace_id = $1 AND kind = $2 ORDER BY created_at, id")
            .bind(workspace)
            .bind(D::KIND.as_str())
            .fetch_all(&self.pool)
            .await?;
        rows.iter().map(|r| self.decode(workspace, r)).collect()
    }

    /// Delete a document unless something references it. `Ok(false)` if absent.
    pub async fn delete<D: Document>(&self, workspace: &str, id: &str) -> Result<bool, StoreError> {
        let mut tx = self.begin_write().await?;
        let referrers = referrers_in(&mut tx, workspace, D::KIND, id).await?;
        if !referrers.is_empty() {
            return Err(StoreError::InUse { referrers });
        }
        let done = crate::engine::query(
            "DELETE FROM resources WHERE workspace_id = $1 AND kind = $2 AND id = $3",
        )
        .bind(workspace)
        .bind(D::KIND.as_str())
        .bind(id)
        .execute(&mut *tx)
        .await?;
        write_references(&mut tx, workspace, D::KIND, id, &[]).await?;
        if matches!(D::KIND, ResourceKind::Assistant | ResourceKind::Workflow) {
            crate::conversation_tests::delete_tests_of(&mut tx, workspace, D::KIND, id).await?;
        }
        tx.commit().await?;
        Ok(done.rows_affected() > 0)
    }

    /// The resources that reference `(kind, id)`.
    pub async fn referrers(
        &self,
        workspace: &str,
        kind: ResourceKind,
        id: &str,
    ) -> Result<Vec<Reference>, StoreError> {
        let mut conn = self.pool.acquire().await?;
        referrers_in(&mut conn, workspace, kind, id).await
    }
}

pub(crate) async fn referrers_in(
    conn: &mut crate::engine::Conn,
    workspace: &str,
    kind: ResourceKind,
    id: &str,
) -> Result<Vec<Reference>, StoreError> {
    let rows = crate::engine::query("SELECT from_kind, from_id FROM resource_refs WHERE workspace_id = $1 AND to_kind = $2 AND to_id = $3 ORDER BY from_kind, from_id")
        .bind(workspace)
        .bind(kind.as_str())
        .bind(id)
        .fetch_all(&mut *conn)
        .await?;
    rows.iter()
        .map(|r| {
            let k: String = r.try_get("from_kind")?;
            let kind = ResourceKind::parse(&k)
                .ok_or_else(|| StoreError::Corrupt(format!("reference kind `{k}`")))?;
            Ok(Reference::new(kind, r.try_get::<String, _>("from_id")?))
        })
        .collect()
}

pub(crate) async fn write_references(
    conn: &mut crate::engine::Conn,
    workspace: &str,
    kind: ResourceKind,
    id: &str,
    refs: &[Reference],
) -> Result<(), StoreError> {
    crate::engine::query(
        "DELETE FROM resource_refs WHERE workspace_id = $1 AND from_kind = $2 AND from_id = $3",
    )
    .bind(workspace)
    .bind(kind.as_str())
    .bind(id)
    .execute(&mut *conn)
    .await?;
    let mut refs = refs.to_vec();
    refs.sort();
    refs.dedup();
    for r in refs {
        crate::engine::query("INSERT INTO resource_refs (workspace_id, from_kind, from_id, to_kind, to_id) VALUES ($1, $2, $3, $4, $5)")
            .bind(workspace)
            .bind(kind.as_str())
            .bind(id)
            .bind(r.kind.as_str())
            .bind(&r.id)
            .execute(&mut *conn)
            .await?;
    }
    Ok(())
}

//! What the runtime composes from the workspace and its features before
//! the kernel runs a session: an assistant checked against its tools,
//! realtime interface, task backend, speech interfaces and providers (`validate_assistant`,
//! at save and again at start, R-RT-5); the configuration snapshot of a
//! new session, an assistant's or a workflow's (`session_config`); MCP
//! discovery; and telling features that a resource they keep something
//! for changed (an MCP server, a task backend).

use std::collections::BTreeMap;

use rtc_core::assistant_rules::{AssistantContext, referenced_tools, validate_assistant};
use rtc_core::realtime::shipped_interfaces;
use rtc_protocol::{
    Assistant, CreateSessionParams, McpServer, McpToolInfo, RealtimeInterface, RunMode,
    SpeechInterface, TaskBackend, Tool,
};
use rtc_store::{Store, StoreError};

use crate::features::tasks::backends::TaskBackends;
use crate::registry::SessionTools;
use crate::session::SessionConfig;
use crate::{Runtime, RuntimeError};

/// A realtime interface: shipped, or one of the workspace's own.
pub async fn find_interface(
    store: &Store,
    workspace: &str,
    id: &str,
) -> Result<Option<RealtimeInterface>, StoreError> {
    if let Some(i) = shipped_interfaces()
        .into_iter()
        .find(|i| i.id.as_deref() == Some(id))
    {
        return Ok(Some(i));
    }
    store.get(workspace, id).await
}

/// Why an MCP server's tools could not be listed.
#[derive(Debug, thiserror::Error)]
pub enum McpToolsError {
    /// The server could not be reached or refused (a message safe to
    /// show: no secret value).
    #[error("{0}")]
    Unavailable(String),
    /// The platform failed (the store).
    #[error(transparent)]
    Platform(#[from] RuntimeError),
}

/// What validating an assistant needs from its workspace.
pub struct AssistantDeps {
    /// The tools it references that exist, by id.
    pub tools: BTreeMap<String, Tool>,
    /// The realtime interface named by `realtimeInterfaceId`, if it exists.
    pub interface: Option<RealtimeInterface>,
    /// The task backend named by `taskBackendId`, if it exists.
    pub task_backend: Option<TaskBackend>,
    /// The speech interfaces `speech` names that exist, by id.
    pub speech_interfaces: BTreeMap<String, SpeechInterface>,
}

/// What validating `assistant` needs: its tools (with `replacement`
/// standing in for its stored version), its realtime interface and its
/// task backend.
pub async fn assistant_context(
    store: &Store,
    workspace: &str,
    assistant: &Assistant,
    replacement: Option<&Tool>,
) -> Result<AssistantDeps, StoreError> {
    let mut tools: BTreeMap<String, Tool> = store
        .get_many(workspace, referenced_tools(assistant))
        .await?;
    if let Some(t) = replacement
        && let Some(id) = t.id.as_ref().filter(|id| tools.contains_key(*id))
    {
        tools.insert(id.clone(), t.clone());
    }
    let interface = match &assistant.realtime_interface_id {
        Some(id) => find_interface(store, workspace, id).await?,
        None => None,
    };
    let task_backend = match &assistant.task_backend_id {
        Some(id) => store.get(workspace, id).await?,
        None => None,
    };
    let speech_interfaces = store
        .get_many(
            workspace,
            rtc_core::speech_rules::referenced_interfaces(assistant),
        )
        .await?;
    Ok(AssistantDeps {
        tools,
        interface,
        task_backend,
        speech_interfaces,
    })
}

impl Runtime {
    pub(crate) fn check_assistant(
        &self,
        assistant: &Assistant,
        deps: &AssistantDeps,
    ) -> Result<(), RuntimeError> {
        let providers = self.provider_names();
        let ctx = AssistantContext {
            tools: &deps.tools,
            realtime_interface: deps.interface.as_ref(),
            providers: &providers,
            task_backend: deps.task_backend.as_ref(),
            speech_interfaces: &deps.speech_interfaces,
            update_bounds: self.inner.settings.limits.update,
        };
        validate_assistant(assistant, &ctx)?;
        self.check_function_count(assistant, &deps.tools)
    }

    /// An assistant whose model would be offered more functions than its
    /// provider accepts (OpenAI: 128) is refused: its bindings, platform
    /// built-ins and the built-ins of every family it enables, counted as
    /// a session would offer them (R-RN-6).
    fn check_function_count(
        &self,
        assistant: &Assistant,
        tools: &BTreeMap<String, Tool>,
    ) -> Result<(), RuntimeError> {
        let offered = SessionTools::for_session(&self.inner, assistant, tools, None)
            .specs()
            .len();
        let max = self.inner.provider_for(assistant).max_tools;
        if offered <= max {
            return Ok(());
        }
        let message = format!(
            "the assistant would offer its model {offered} functions (its tool bindings, its platform built-ins and the built-ins of the families it enables); its provider accepts at most {max} (`max_tools`): remove bindings or turn a built-in family off"
        );
        Err(rtc_core::ValidationError::new("too_many_functions", "toolBindings", message).into())
    }

    /// Validate an assistant against its workspace (its tools, realtime
    /// interface, task backend and the configured providers), with
    /// `replacement` standing in for the stored version of one of its
    /// tools.
    pub async fn validate_assistant(
        &self,
        workspace: &str,
        assistant: &Assistant,
        replacement: Option<&Tool>,
    ) -> Result<(), RuntimeError> {
        let deps = assistant_context(&self.inner.store, workspace, assistant, replacement).await?;
        self.check_assistant(assistant, &deps)
    }

    /// Validate an assistant with `backend` standing in for the stored
    /// version of its task backend (a change of the backend must not break
    /// the assistants naming it).
    pub async fn validate_assistant_with_backend(
        &self,
        workspace: &str,
        assistant: &Assistant,
        backend: &TaskBackend,
    ) -> Result<(), RuntimeError> {
        let mut deps = assistant_context(&self.inner.store, workspace, assistant, None).await?;
        deps.task_backend = Some(backend.clone());
        self.check_assistant(assistant, &deps)
    }

    /// The tools an MCP server offers, listed on its pooled connection (a
    /// stdio server is not started again) at most once per few seconds;
    /// `McpToolsError::Unavailable` is safe to show (it never holds a secret value).
    /// The list is the server's answer to a request that carried the
    /// header secrets, so it is scrubbed like a tool result: a server that
    /// repeats its headers in a description or schema shows them to
    /// nobody (not to the caller, not to the model once a tool pins it).
    pub async fn mcp_server_tools(
        &self,
        workspace: &str,
        server: &McpServer,
    ) -> Result<Vec<McpToolInfo>, McpToolsError> {
        self.inner.executors.server_tools(workspace, server).await
    }

    /// An MCP server was changed or deleted: its pooled connections go now
    /// (a stdio server's process ends), the next call or discovery opens
    /// one with the new configuration.
    pub fn mcp_server_changed(&self, workspace: &str, server_id: &str) {
        self.inner
            .executors
            .mcp_pool
            .evict(&crate::executor::mcp_pool_key_prefix(workspace, server_id));
    }

    /// A task backend was deleted: what its driver kept for it goes (an
    /// OpenCode server started for it stops).
    pub async fn task_backend_deleted(&self, workspace: &str, backend_id: &str) {
        self.inner
            .service::<TaskBackends>()
            .backend_deleted(workspace, backend_id)
            .await;
    }

    /// The assistant a new session runs, checked again against its
    /// workspace (R-RT-5), with its tools.
    async fn session_assistant(
        &self,
        workspace: &str,
        params: &CreateSessionParams,
    ) -> Result<(String, Assistant, BTreeMap<String, Tool>), RuntimeError> {
        let inner = &self.inner;
        let Some(assistant_id) = params.assistant_id.as_deref() else {
            return Err(rtc_core::ValidationError::new(
                "missing_field",
                "assistantId",
                "`assistantId` is required",
            )
            .into());
        };
        let assistant: Assistant =
            inner
                .store
                .get(workspace, assistant_id)
                .await?
                .ok_or_else(|| {
                    RuntimeError::Invalid(rtc_core::ValidationError::new(
                        "unknown_assistant",
                        "assistantId",
                        format!("assistant `{assistant_id}` does not exist"),
                    ))
                })?;
        let deps = assistant_context(&inner.store, workspace, &assistant, None).await?;
        self.check_assistant(&assistant, &deps)
            .map_err(|e| match e {
                // Starting refuses what the interface no longer supports
                // (R-RT-5, design §5c), before any provider connection.
                RuntimeError::Invalid(mut v) if v.code == "realtime_incompatible" => {
                    v.code = "realtime_capability";
                    RuntimeError::Invalid(v)
                }
                // A speech interface deleted or changed since the save.
                RuntimeError::Invalid(mut v) => {
                    v.code = crate::speech_interfaces::at_session_start(v.code);
                    RuntimeError::Invalid(v)
                }
                other => other,
            })?;
        if assistant.run_mode == RunMode::Realtime {
            self.check_realtime_connection(workspace, deps.interface.as_ref())
                .await?;
        }
        self.check_session_speech(workspace, &assistant, &deps)
            .await?;
        Ok((assistant_id.to_owned(), assistant, deps.tools))
    }

    /// What a new session runs: an assistant, or a workflow; with the id
    /// the session records as its `assistantId`.
    pub(crate) async fn session_config(
        &self,
        workspace: &str,
        params: &CreateSessionParams,
    ) -> Result<(String, SessionConfig), RuntimeError> {
        if let Some(user) = &params.user_id {
            rtc_core::names::check_max_chars(user, "userId", 256)?;
        }
        let Some(workflow_id) = params.workflow_id.as_deref() else {
            let (id, assistant, tools) = self.session_assistant(workspace, params).await?;
            let config = SessionConfig {
                assistant,
                tools,
                features: serde_json::Map::new(),
                test: None,
            };
            return Ok((id, config));
        };
        if params.assistant_id.is_some() {
            return Err(rtc_core::ValidationError::new(
                "invalid_field",
                "workflowId",
                "give `assistantId` or `workflowId`, not both",
            )
            .into());
        }
        let config = self.workflow_session_config(workspace, workflow_id).await?;
        Ok((workflow_id.to_owned(), config))
    }
}

impl Runtime {
    /// A realtime assistant's interface can be reached: it has a
    /// connection whose API key secret exists.
    async fn check_realtime_connection(
        &self,
        workspace: &str,
        iface: Option<&RealtimeInterface>,
    ) -> Result<(), RuntimeError> {
        let connection = crate::features::realtime::connection_of(iface).map_err(|r| {
            rtc_core::ValidationError::new(r.code, "realtimeInterfaceId", r.message)
        })?;
        let secret = crate::features::realtime::api_key_secret(&connection.api_key);
        let exists = match &secret {
            Some(name) => self
                .inner
                .store
                .secret_info(workspace, name)
                .await?
                .is_some(),
            None => false,
        };
        if !exists {
            return Err(rtc_core::ValidationError::new(
                "unknown_secret",
                "realtimeInterfaceId",
                format!(
                    "the realtime interface's API key `{}` is not a secret of this workspace: create it first",
                    connection.api_key
                ),
            )
            .into());
        }
        Ok(())
    }
}

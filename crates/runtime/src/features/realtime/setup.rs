//! What a realtime session connects with: the provider configuration of
//! its interface (the API key revealed for this connection only), the
//! session the model is given (instructions with the variables and the
//! conversation so far, the declared tools, turn detection), and the
//! tools it may call (design `realtime.md` §5c).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use rtc_core::model_tools::render_variables;
use rtc_protocol::{MessageRole, RealtimeConnection, RealtimeInterface, TurnDetection};
use rtc_realtime::{ProviderCfg, SessionSpec, ToolChoice, ToolDecl, Vad};
use rtc_tools::scrub::Scrubber;

use super::RealtimeService;
use crate::registry::SessionTools;
use crate::session::SessionCtx;
use crate::{Inner, RuntimeError};

/// How long connecting and configuring the provider may take.
pub(crate) const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// The most of the earlier conversation put into the instructions of a
/// reconnected session, in bytes.
const MAX_SEED_BYTES: usize = 8_000;

/// Why no provider connection is planned.
#[derive(Debug)]
pub(crate) enum PlanError {
    /// The session's configuration does not allow one (told to the host).
    Refused(Refusal),
    /// The platform failed (the store).
    Platform(RuntimeError),
}

impl From<RuntimeError> for PlanError {
    fn from(e: RuntimeError) -> Self {
        Self::Platform(e)
    }
}

impl From<rtc_store::StoreError> for PlanError {
    fn from(e: rtc_store::StoreError) -> Self {
        Self::Platform(e.into())
    }
}

/// Why a session cannot reach its provider: told to the host as an
/// `error` event with `code`.
#[derive(Debug, Clone)]
pub(crate) struct Refusal {
    pub code: &'static str,
    pub message: String,
}

impl Refusal {
    fn new(code: &'static str, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }
}

/// Everything one provider connection needs.
pub(crate) struct Plan {
    pub cfg: ProviderCfg,
    pub spec: SessionSpec,
    pub connection: RealtimeConnection,
    /// What the model may call, with their handlers.
    pub tools: Arc<SessionTools<Inner>>,
    /// The declared names (a call outside them is refused).
    pub declared: BTreeSet<String>,
    /// Declared client tools: tool name → client function.
    pub client_functions: BTreeMap<String, String>,
    /// Removes the API key from anything the provider says.
    pub scrubber: Scrubber,
}

/// The connection of an interface, or why it has none.
pub(crate) fn connection_of(
    iface: Option<&RealtimeInterface>,
) -> Result<&RealtimeConnection, Refusal> {
    let Some(iface) = iface else {
        return Err(Refusal::new(
            "realtime_not_configured",
            "the assistant's realtime interface no longer exists",
        ));
    };
    iface.connection.as_ref().ok_or_else(|| {
        Refusal::new(
            "realtime_not_configured",
            format!(
                "realtime interface `{}` has no `connection`: say how to reach its provider",
                iface.name
            ),
        )
    })
}

pub(crate) use rtc_core::realtime::api_key_secret;

impl RealtimeService<'_> {
    /// The plan of the next provider connection of `ctx`, read afresh
    /// (interface, variables, history).
    pub(crate) async fn realtime_plan(self, ctx: &SessionCtx) -> Result<Plan, PlanError> {
        let assistant = &ctx.config.assistant;
        let iface = match &assistant.realtime_interface_id {
            Some(id) => crate::find_interface(&self.store, &ctx.workspace, id).await?,
            None => None,
        };
        let connection = match connection_of(iface.as_ref()) {
            Ok(c) => c.clone(),
            Err(refusal) => return Err(PlanError::Refused(refusal)),
        };
        let Some(secret) = api_key_secret(&connection.api_key) else {
            return Err(PlanError::Refused(Refusal::new(
                "realtime_not_configured",
                "the interface's `connection.apiKey` must be one `{{secret__name}}` reference",
            )));
        };
        let Some(key) = self.store.reveal_secret(&ctx.workspace, &secret).await? else {
            return Err(PlanError::Refused(Refusal::new(
                "unknown_secret",
                format!(
                    "secret `{secret}` (the realtime API key) does not exist in this workspace"
                ),
            )));
        };
        let caps = iface
            .as_ref()
            .map(|i| i.field_schema.features.realtime_prompt_tools.clone())
            .unwrap_or_default();
        let (tools, client_functions) =
            super::calls::realtime_tools(assistant, &ctx.config.tools, &caps);
        let decls: Vec<ToolDecl> = tools
            .specs()
            .iter()
            .map(|s| ToolDecl {
                name: s.name.clone(),
                description: s.description.clone(),
                parameters: s.parameters.clone(),
            })
            .collect();
        let declared = decls.iter().map(|d| d.name.clone()).collect();
        let (input_rate, output_rate) = connection.rates();
        let scrubber = Scrubber::new([key.expose()]);
        let cfg = ProviderCfg {
            dialect: connection.dialect,
            url: connection.url.clone(),
            model: connection.model.clone(),
            api_key: key.expose().to_owned(),
            input_rate,
            output_rate,
            policy: self.config.mcp.policy,
            timeout: CONNECT_TIMEOUT,
            max_message_bytes: self.config.upstream.max_body_bytes,
        };
        let spec = SessionSpec {
            instructions: self.realtime_instructions(ctx).await?,
            voice: connection.voice.clone(),
            tools: decls,
            tool_choice: ToolChoice::Auto,
            vad: vad_of(&connection.turn_detection),
            transcribe_input: true,
            transcription_model: connection.transcription_model.clone(),
        };
        Ok(Plan {
            cfg,
            spec,
            connection,
            tools: Arc::new(tools),
            declared,
            client_functions,
            scrubber,
        })
    }

    /// The system prompt with the current variables and, for a session
    /// that already talked (a reconnection), the conversation so far: a
    /// new provider session knows nothing of the earlier one.
    async fn realtime_instructions(self, ctx: &SessionCtx) -> Result<String, RuntimeError> {
        let vars = ctx.state.lock().await.variables.clone();
        let mut text = render_variables(&ctx.config.assistant.system_prompt, &vars);
        let earlier = self
            .with_history(ctx, |history| {
                let mut lines: Vec<String> = history
                    .iter()
                    .rev()
                    .filter(|m| !m.content.is_empty())
                    .map(|m| {
                        let who = match m.role {
                            MessageRole::User => "User",
                            MessageRole::Assistant => "Assistant",
                            MessageRole::HumanAgent => "Human agent",
                            MessageRole::Tool => "Tool result",
                        };
                        format!("{who}: {}", m.content)
                    })
                    .scan(0usize, |used, line| {
                        *used += line.len() + 1;
                        (*used <= MAX_SEED_BYTES).then_some(line)
                    })
                    .collect();
                lines.reverse();
                lines.join("\n")
            })
            .await?;
        if !earlier.is_empty() {
            text.push_str("\n\nThe conversation so far (continue it; do not repeat it):\n");
            text.push_str(&earlier);
        }
        Ok(text)
    }
}

/// The interface's turn detection in the adapter's terms.
pub(crate) fn vad_of(t: &TurnDetection) -> Vad {
    match t {
        TurnDetection::ServerVad {
            threshold,
            prefix_padding_ms,
            silence_duration_ms,
        } => Vad::Server {
            threshold: *threshold,
            prefix_padding_ms: *prefix_padding_ms,
            silence_duration_ms: *silence_duration_ms,
        },
        TurnDetection::SemanticVad { eagerness } => Vad::Semantic {
            eagerness: eagerness.clone(),
        },
        TurnDetection::None => Vad::None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_api_key_is_exactly_one_secret_reference() {
        assert_eq!(
            api_key_secret("{{secret__openai_key}}").as_deref(),
            Some("secret__openai_key")
        );
        assert_eq!(api_key_secret("sk-live"), None);
        assert_eq!(api_key_secret("Bearer {{secret__k}}"), None);
        assert_eq!(api_key_secret("{{secret__a}}{{secret__b}}"), None);
    }
}

//! Starting sessions (on the configuration `composition.rs` builds) and
//! the operations hosts perform on them.

use futures::Stream;
use rtc_core::model_tools::render_variables;
use rtc_protocol::{
    CreateSessionParams, CreateSessionResponse, HandoffReleased, Message, MessageCompleted,
    MessageRole, SessionEvent, SessionStarted, SessionStatus,
};
use rtc_store::{NewSession, SessionRecord, new_id, new_token};
use serde_json::{Map, Value};

use crate::events::Durability;
use crate::history::message;
use crate::session::{ClientConnection, SessionCtx};
use crate::variables::{SystemInfo, initial_variables};
use crate::{Runtime, RuntimeError};

impl Runtime {
    /// Open a session on an assistant: validate again (R-RT-5), set the
    /// variables, run the startup actions, say the first message.
    pub async fn create_session(
        &self,
        workspace: &str,
        params: CreateSessionParams,
    ) -> Result<CreateSessionResponse, RuntimeError> {
        let inner = &self.inner;
        inner.check_token_quota(workspace).await?;
        let (assistant_id, mut config) = self.session_config(workspace, &params).await?;
        config.test = test_mode(&params);
        let assistant_id = assistant_id.as_str();
        let id = new_id("sess");
        let sys = SystemInfo {
            session_id: &id,
            root_id: &id,
            parent_id: None,
            assistant_id,
            user_id: params.user_id.as_deref(),
            run_mode: config.assistant.run_mode,
        };
        let vars = initial_variables(&config.assistant, &params.dynamic_variables, &sys)?;
        inner.settings.limits.check_initial(&vars)?;
        let workflow_id = params.workflow_id.as_ref().map(|_| assistant_id);
        let config_json =
            serde_json::to_string(&config).map_err(|e| RuntimeError::Internal(e.to_string()))?;
        let client_token = new_token("rtc_ct");
        let max = inner.settings.limits.max_active_sessions;
        let record = inner
            .store
            .create_session_within(
                NewSession {
                    id: &id,
                    workspace_id: workspace,
                    assistant_id,
                    parent_id: None,
                    root_id: &id,
                    user_id: params.user_id.as_deref(),
                    title: None,
                    variables: &vars,
                    config: &config_json,
                    client_token: &client_token,
                    workflow_id,
                    owner: Some(&inner.settings.cluster.instance),
                },
                max,
            )
            .await?
            .ok_or_else(|| RuntimeError::TooMany {
                code: "too_many_sessions",
                message: format!(
                    "the workspace has {max} active sessions, the most it may have; end one first"
                ),
            })?;
        let ctx = inner.hold_created(record).await?;
        let started = SessionStarted {
            assistant_id: assistant_id.to_owned(),
            variables: vars.clone(),
            parent_session_id: None,
            title: None,
        };
        ctx.events.emit(started.into()).await?;
        inner.run_startup_actions(&ctx).await?;
        let said_elsewhere = inner.says_fixed_lines(&ctx);
        if let Some(first) = ctx
            .config
            .assistant
            .first_message
            .as_deref()
            .filter(|_| !said_elsewhere)
        {
            let vars = ctx.state.lock().await.variables.clone();
            inner.say(&ctx, &render_variables(first, &vars)).await?;
        }
        for feature in &inner.features {
            feature.session_opening(inner, &ctx).await?;
        }
        // What creation did is durable before it is acknowledged.
        inner.journal.flush().await;
        let status = ctx.state.lock().await.status;
        for feature in &inner.features {
            feature.session_opened(inner, &ctx).await?;
        }
        Ok(CreateSessionResponse {
            id: id.clone(),
            client_token,
            status,
            root_session_id: id,
        })
    }

    /// The stored session of a workspace, with every record queued so far
    /// (read your writes).
    pub async fn session(&self, workspace: &str, id: &str) -> Result<SessionRecord, RuntimeError> {
        self.inner.journal.flush().await;
        self.inner
            .store
            .session(workspace, id)
            .await?
            .ok_or_else(|| RuntimeError::not_found("session", id))
    }

    /// The workspace a client token opens, if it is this session's.
    pub async fn client_token_workspace(
        &self,
        session: &str,
        token: &str,
    ) -> Result<Option<String>, RuntimeError> {
        Ok(self.inner.store.check_client_token(session, token).await?)
    }

    /// Current variable values.
    pub async fn state(
        &self,
        workspace: &str,
        id: &str,
    ) -> Result<Map<String, Value>, RuntimeError> {
        let ctx = self.inner.session_in(workspace, id).await?;
        Ok(ctx.state.lock().await.variables.clone())
    }

    /// The session's history.
    pub async fn messages(&self, workspace: &str, id: &str) -> Result<Vec<Message>, RuntimeError> {
        self.session(workspace, id).await?;
        Ok(self.inner.store.messages(id).await?)
    }

    /// Whether `text` may be a user message (size, not blank), before it
    /// is queued.
    pub fn check_message_text(&self, text: &str) -> Result<(), RuntimeError> {
        self.inner.settings.limits.check_text(text)
    }

    /// A user turn (R-RN-2): stored before it is acknowledged; interrupts a
    /// running turn; starts a new one unless a human agent has the session.
    pub async fn send_user_message(
        &self,
        workspace: &str,
        id: &str,
        text: &str,
    ) -> Result<Message, RuntimeError> {
        self.user_message_from(workspace, id, text, None).await
    }

    /// [`Self::send_user_message`] with the message's `source` (`audio`
    /// for a voice session's transcript).
    ///
    /// It runs to its end on a task of its own even when the caller stops
    /// waiting (a client that went away): stopped between storing the
    /// message and starting the turn, it would leave the message stored and
    /// unanswered.
    pub(crate) async fn user_message_from(
        &self,
        workspace: &str,
        id: &str,
        text: &str,
        source: Option<&str>,
    ) -> Result<Message, RuntimeError> {
        let rt = self.clone();
        let (workspace, id, text) = (workspace.to_owned(), id.to_owned(), text.to_owned());
        let source = source.map(str::to_owned);
        self.inner
            .to_the_end("storing the message", async move {
                rt.user_message_now(&workspace, &id, &text, source.as_deref())
                    .await
            })
            .await?
    }

    /// [`Self::user_message_from`], in the caller's task.
    async fn user_message_now(
        &self,
        workspace: &str,
        id: &str,
        text: &str,
        source: Option<&str>,
    ) -> Result<Message, RuntimeError> {
        let inner = &self.inner;
        let ctx = inner.session_in(workspace, id).await?;
        inner.settings.limits.check_text(text)?;
        inner.check_token_quota(workspace).await?;
        inner.cluster().reload_shared(&ctx).await?;
        inner.check_history_room(&ctx, Some(text)).await?;
        let (status, keep_ending) = {
            let mut s = ctx.state.lock().await;
            let keep = match &s.ending {
                Some((_, allow)) => !allow,
                None => false,
            };
            if !keep && s.status == SessionStatus::Active {
                // allowEndInterruption: the user speaking during the
                // goodbye calls the end off; the new message is answered.
                s.ending = None;
            }
            (s.status, keep)
        };
        if status == SessionStatus::Ended {
            return Err(RuntimeError::session_ended());
        }
        for feature in &inner.features {
            if let Some(taken) = feature.take_user_message(inner, &ctx, text).await {
                return taken;
            }
        }
        for feature in &inner.features {
            feature.user_message_arriving(inner, &ctx).await?;
        }
        let mut m = message(MessageRole::User, text);
        m.source = source.map(str::to_owned);
        let event = MessageCompleted::of(&m).into();
        let _pending = UserTurnPending::new(&ctx);
        {
            // A loop tick or goal continuation records its input under the
            // turn slot's lock after seeing no user turn pending; taking the
            // lock here puts this message after such an input, never
            // before it, so the turn that follows answers this message.
            let _slot = ctx.turn.lock().await;
            // Ended meanwhile (a request that went on after its caller
            // left may come late): nothing is stored on an ended session.
            if ctx.state.lock().await.status == SessionStatus::Ended {
                return Err(RuntimeError::session_ended());
            }
            inner
                .append(&ctx, m.clone(), vec![event], Durability::Committed)
                .await?;
        }
        if status == SessionStatus::Handoff {
            return Ok(m);
        }
        if keep_ending {
            // allowEndInterruption: false — the goodbye finishes and the session ends.
            ctx.wait_turn().await;
            return Ok(m);
        }
        ctx.cancel_turn().await;
        // A voice session whose host is on another instance has that
        // instance answer it (the message is stored: a failed hand-over
        // answers it here, unspoken).
        if crate::features::voice::voiced(&ctx)
            && crate::features::voice::hand_turn_over(inner, &ctx).await
        {
            return Ok(m);
        }
        // A turn another instance runs is cancelled there first.
        inner.cluster().start_turn_for_request(&ctx, true).await?;
        Ok(m)
    }

    /// End the session from the host.
    pub async fn end(
        &self,
        workspace: &str,
        id: &str,
        reason: Option<String>,
    ) -> Result<(), RuntimeError> {
        self.inner
            .settings
            .limits
            .check_end_reason(reason.as_deref())?;
        let ctx = self.inner.session_in(workspace, id).await?;
        self.inner.cluster().reload_shared(&ctx).await?;
        if ctx.state.lock().await.status == SessionStatus::Ended {
            return Ok(());
        }
        self.inner
            .end_session(&ctx, reason.as_deref(), "host")
            .await?;
        self.inner.after_end(&ctx).await
    }

    /// A human agent speaks during a handoff (R-BI-5).
    pub async fn handoff_message(
        &self,
        workspace: &str,
        id: &str,
        text: &str,
    ) -> Result<Message, RuntimeError> {
        let ctx = self.inner.session_in(workspace, id).await?;
        self.inner.settings.limits.check_text(text)?;
        self.inner.cluster().reload_shared(&ctx).await?;
        self.inner.check_history_room(&ctx, Some(text)).await?;
        if ctx.state.lock().await.status != SessionStatus::Handoff {
            return Err(RuntimeError::Conflict {
                code: "not_in_handoff",
                message: "the session is not handed off to a human".into(),
            });
        }
        let mut m = message(MessageRole::User, text);
        m.role = MessageRole::HumanAgent;
        let event = MessageCompleted::of(&m).into();
        self.inner
            .append(&ctx, m.clone(), vec![event], Durability::Committed)
            .await?;
        // A voice session speaks the human agent's words to the user.
        crate::features::voice::speak_line(&self.inner, &ctx, &m.id, text);
        Ok(m)
    }

    /// Hand the conversation back to the model.
    pub async fn handoff_release(&self, workspace: &str, id: &str) -> Result<(), RuntimeError> {
        let ctx = self.inner.session_in(workspace, id).await?;
        self.inner.cluster().reload_shared(&ctx).await?;
        {
            let mut s = ctx.state.lock().await;
            if s.status != SessionStatus::Handoff {
                return Err(RuntimeError::Conflict {
                    code: "not_in_handoff",
                    message: "the session is not handed off to a human".into(),
                });
            }
            s.status = SessionStatus::Active;
        }
        self.inner
            .store
            .set_session_status(id, SessionStatus::Active, None, None)
            .await?;
        ctx.events.emit(HandoffReleased {}.into()).await?;
        for feature in &self.inner.features {
            feature.handoff_released(&self.inner, &ctx).await?;
        }
        Ok(())
    }

    /// Events after `after`, then live (R-API-6, R-RN-5).
    pub async fn subscribe(
        &self,
        workspace: &str,
        id: &str,
        after: i64,
    ) -> Result<impl Stream<Item = SessionEvent> + Send + use<>, RuntimeError> {
        let ctx = self.inner.session_in(workspace, id).await?;
        // A context dropped just before (its session ended) may have left
        // events in the journal that no live channel of this context will
        // carry: commit them first so the replay reads them.
        self.inner.journal.flush().await;
        let max = self.inner.settings.limits.max_subscribers;
        ctx.events
            .subscribe(after, max)
            .ok_or_else(|| RuntimeError::TooMany {
                code: "too_many_subscribers",
                message: format!(
                    "the session has {max} live subscribers (event streams and sockets), the most it may have (RTC_MAX_SUBSCRIBERS_PER_SESSION); close one first"
                ),
            })
    }

    /// A client connection for client tools (R-CT-1).
    pub async fn connect_client(
        &self,
        workspace: &str,
        id: &str,
    ) -> Result<ClientConnection, RuntimeError> {
        let ctx = self.inner.session_in(workspace, id).await?;
        Ok(self.inner.connect_client(ctx))
    }

    /// Wait until the session's running turn (if any) has finished and
    /// everything it recorded is committed.
    pub async fn idle(&self, workspace: &str, id: &str) -> Result<(), RuntimeError> {
        let ctx = self.inner.session_in(workspace, id).await?;
        ctx.wait_turn().await;
        self.inner.journal.flush().await;
        Ok(())
    }
}

/// The test mode a new session asks for.
fn test_mode(params: &CreateSessionParams) -> Option<rtc_session::test_mode::TestMode> {
    params.test_mode.then(|| rtc_session::test_mode::TestMode {
        scripted: params.scripted_results.clone(),
    })
}

/// Marks a user message whose turn is not started yet (see
/// `SessionCtx::user_turns_pending`) for as long as it lives.
struct UserTurnPending<'a>(&'a SessionCtx);

impl<'a> UserTurnPending<'a> {
    fn new(ctx: &'a SessionCtx) -> Self {
        ctx.user_turns_pending
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Self(ctx)
    }
}

impl Drop for UserTurnPending<'_> {
    fn drop(&mut self) {
        self.0
            .user_turns_pending
            .fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
    }
}

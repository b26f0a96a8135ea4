//! How a realtime session ends or hands off (design `realtime.md` §5c):
//! endConversation's goodbye (none, generated, custom "exactly"), whether
//! the user may interrupt it, and requestHumanHandoff's spoken message.

use super::*;

impl Bridge {
    /// What endConversation and requestHumanHandoff mean for the audio.
    pub(super) async fn after_platform_call(
        &mut self,
        live: &mut Live,
        name: &str,
        interrupt: Option<crate::tool::Interrupt>,
    ) -> Result<Flow, RuntimeError> {
        let built_ins = &self.ctx.config.assistant.built_in_tools;
        if name == BuiltInToolName::EndConversation.as_str() {
            if self.ctx.state.lock().await.ending.is_none() {
                return Ok(Flow::Go);
            }
            let Some(cfg) = built_ins.end_conversation.clone() else {
                return Ok(Flow::Go);
            };
            match cfg.message_type {
                EndMessageType::None => return self.finish_ending(live).await,
                EndMessageType::Custom => {
                    let next = live.book.want(say_exactly(&cfg.custom_message));
                    self.follow_on(live, next).await?;
                }
                // The follow-up response (asked for with the output) is the goodbye.
                EndMessageType::Generated => {}
            }
        } else if interrupt == Some(crate::tool::Interrupt::Handoff)
            && let Some(text) = built_ins
                .request_human_handoff
                .as_ref()
                .and_then(|h| h.message.clone())
        {
            let next = live.book.want(say_exactly(&text));
            self.follow_on(live, next).await?;
        }
        Ok(Flow::Go)
    }

    /// endConversation succeeded: the next response we ask for is the
    /// goodbye (asked for with its output, or a custom message), after
    /// which the session ends; without `allowEndInterruption` the user's
    /// audio is no longer forwarded.
    pub(super) async fn prepare_goodbye(&mut self) {
        let Some((_, allow)) = self.ctx.state.lock().await.ending.clone() else {
            return;
        };
        let spoken = self
            .ctx
            .config
            .assistant
            .built_in_tools
            .end_conversation
            .as_ref()
            .is_some_and(|c| c.message_type != EndMessageType::None);
        if spoken {
            self.ending = Ending::AfterGoodbye;
            self.deaf = !allow;
        }
    }

    /// The user spoke during a goodbye that allows it: the end is off.
    pub(super) async fn speech_during_goodbye(&mut self) {
        if self.ending == Ending::AfterGoodbye && !self.deaf {
            self.ending = Ending::None;
            self.goodbye_asked = false;
            self.ctx.state.lock().await.ending = None;
        }
    }

    pub(super) async fn finish_ending(&mut self, live: &mut Live) -> Result<Flow, RuntimeError> {
        if self.ctx.state.lock().await.ending.is_none() {
            // Called off meanwhile (the user spoke or typed): go on.
            self.ending = Ending::None;
            self.goodbye_asked = false;
            self.deaf = false;
            return Ok(Flow::Go);
        }
        self.rt.finish_ending(&self.ctx).await?;
        let _ = live.adapter.close().await;
        self.rt.forget(&self.ctx.id);
        Ok(Flow::Stop)
    }
}

//! A realtime model's function calls in the bridge: recorded, refused
//! when undeclared or without a host, run through the registry, and their
//! outputs submitted with the follow-up the response book decides.

use super::*;

impl Bridge {
    /// A function call of the model: recorded, then run (or refused).
    pub(super) async fn tool_call(
        &mut self,
        live: &mut Live,
        response_id: String,
        call_id: String,
        name: String,
        arguments: String,
    ) -> Result<(), RuntimeError> {
        // What the model said before the call comes first in the history.
        self.store_items(Some(&response_id), false).await?;
        let mut m = message(MessageRole::Assistant, "");
        m.source = Some("audio".to_owned());
        m.tool_calls = vec![MessageToolCall {
            id: call_id.clone(),
            name: name.clone(),
            arguments: arguments.clone(),
        }];
        let called = ToolCalled {
            call_id: call_id.clone(),
            name: name.clone(),
            arguments: arguments.clone(),
            startup: false,
            origin: None,
        };
        self.rt
            .append(&self.ctx, m, vec![called.into()], Durability::Queued)
            .await?;
        live.book.call(&response_id, &call_id);
        let call = ToolCall {
            id: call_id,
            name,
            arguments,
        };
        let refusal = if !live.plan.declared.contains(&call.name) {
            Some(format!(
                "the tool `{}` is not available in this realtime session",
                call.name
            ))
        } else {
            live.plan
                .client_functions
                .get(&call.name)
                .filter(|f| !self.ctx.broker.supports(f))
                .map(|f| {
                    format!(
                        "no connected client supports `{f}`; the user's app cannot do this right now"
                    )
                })
        };
        if let Some(refusal) = refusal {
            // Answered at once, and the model is not asked to go on (design §5a).
            let done = crate::features::realtime::calls::refuse(&self.rt, &self.ctx, call, refusal)
                .await?;
            return self.submit(live, done).await;
        }
        self.running.push(Box::pin(run_call(
            self.rt.clone(),
            self.ctx.clone(),
            live.plan.tools.clone(),
            call,
        )));
        Ok(())
    }

    /// A call ran to its end: its output goes to the provider.
    pub(super) async fn call_finished(&mut self, done: Finished) -> Result<bool, RuntimeError> {
        let Some(mut live) = self.live.take() else {
            // The provider is gone; the result is stored and the next
            // connection's instructions carry it.
            return Ok(true);
        };
        if !live.book.is_pending(&done.call_id) {
            self.live = Some(live);
            return Ok(true);
        }
        let name = done.name.clone();
        let interrupt = done.interrupt;
        if name == BuiltInToolName::EndConversation.as_str() && !done.is_error {
            self.prepare_goodbye().await;
        }
        let result = self.submit(&mut live, done).await;
        let flow = match result {
            Ok(()) => self.after_platform_call(&mut live, &name, interrupt).await,
            Err(e) => Err(e),
        };
        let keep = !matches!(flow, Ok(Flow::Stop));
        if self.live.is_none() {
            self.live = Some(live);
        }
        flow.map(|_| keep)
    }

    pub(super) async fn submit(
        &mut self,
        live: &mut Live,
        done: Finished,
    ) -> Result<(), RuntimeError> {
        if let Err(e) = live
            .adapter
            .submit_tool_result(&done.call_id, &done.content)
            .await
        {
            tracing::warn!(session = %self.ctx.id, error = %e, "submitting a tool result failed");
            return Ok(());
        }
        let next = live.book.output(&done.call_id, done.follow_up);
        self.follow_on(live, next).await
    }
}

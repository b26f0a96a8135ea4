//! Where an agent stage goes after a completed turn (design §3.3): its
//! edges in order, then the global ones (`from: "*"`); the first whose
//! condition holds is taken. At the first `llm` edge one small-model
//! judge call decides every `llm` edge of the walk (no tools; a JSON
//! schema `{<edgeId>: boolean}`); if it fails they all count as false.

use std::collections::BTreeMap;
use std::sync::Arc;

use rtc_core::llm::{ChatMessage, OutputFormat};
use rtc_protocol::{
    EdgeCondition, EventBody, GLOBAL_EDGE_SOURCE, Message, MessageRole, Workflow, WorkflowEdge,
    WorkflowEvaluated,
};
use serde_json::{Map, Value, json};

use super::WorkflowService;
use crate::session::SessionCtx;
use crate::small_model::{AnswerError, SmallModel};
use crate::{Inner, RuntimeError};

/// How many recent messages the judge reads.
const JUDGE_MESSAGES: usize = 12;

const JUDGE_INSTRUCTIONS: &str = "You route a conversation between a user and an assistant. For each condition below, decide whether it holds now, judging only by what was said in the conversation. Answer with a JSON object that has one boolean per condition id.";

impl WorkflowService<'_> {
    /// The edge an agent node's turn leads over, as `(to, edge id)`;
    /// `None`: the session stays. Emits `workflow.evaluated`.
    pub(crate) async fn walk_agent(
        self,
        ctx: &Arc<SessionCtx>,
        wf: &Workflow,
        node_id: &str,
    ) -> Result<Option<(String, String)>, RuntimeError> {
        let candidates: Vec<&WorkflowEdge> = wf
            .edges_from(node_id)
            .chain(wf.edges_from(GLOBAL_EDGE_SOURCE))
            .collect();
        let vars = self.variables_now(ctx).await;
        let mut verdicts: Option<BTreeMap<String, bool>> = None;
        let mut taken = None;
        for edge in &candidates {
            let holds = match &edge.condition {
                EdgeCondition::Always => true,
                EdgeCondition::Expression { expression } => {
                    self.edge_holds(ctx, &edge.id, expression, &vars).await?
                }
                EdgeCondition::Llm { .. } => {
                    if verdicts.is_none() {
                        verdicts = Some(self.judge_edges(ctx, &candidates).await?);
                    }
                    verdicts
                        .as_ref()
                        .and_then(|v| v.get(&edge.id))
                        .copied()
                        .unwrap_or(false)
                }
                // Only after actions (refused at save elsewhere).
                EdgeCondition::Result { .. } => false,
            };
            if holds {
                taken = Some(*edge);
                break;
            }
        }
        let evaluated = WorkflowEvaluated {
            node_id: node_id.to_owned(),
            taken: taken.map(|e| e.id.clone()),
            llm: verdicts,
        };
        ctx.events.emit(evaluated.into()).await?;
        Ok(taken.map(|e| (e.to.clone(), e.id.clone())))
    }

    /// One judge call for every `llm` edge among `edges`; on failure
    /// (`workflow_judge_failed`) each counts as false.
    async fn judge_edges(
        self,
        ctx: &SessionCtx,
        edges: &[&WorkflowEdge],
    ) -> Result<BTreeMap<String, bool>, RuntimeError> {
        let conditions: Vec<(&str, &str)> = edges
            .iter()
            .filter_map(|e| match &e.condition {
                EdgeCondition::Llm { condition } => Some((e.id.as_str(), condition.as_str())),
                _ => None,
            })
            .collect();
        let mut properties = Map::new();
        let mut listed = String::new();
        for (id, condition) in &conditions {
            properties.insert(
                (*id).to_owned(),
                json!({"type": "boolean", "description": condition}),
            );
            listed.push_str(&format!("\n- {id}: {condition}"));
        }
        let ids: Vec<&str> = conditions.iter().map(|(id, _)| *id).collect();
        let schema = json!({
            "type": "object",
            "properties": properties,
            "required": ids,
            "additionalProperties": false,
        });
        let mut messages = vec![ChatMessage::System {
            content: format!("{JUDGE_INSTRUCTIONS}\n\nConditions:{listed}"),
        }];
        messages.extend(self.with_history(ctx, recent_messages).await?);
        messages.push(ChatMessage::User {
            content: "Decide each condition now.".to_owned(),
        });
        let judge = SmallModel::for_session::<Inner>(self.rt, ctx);
        let output = OutputFormat::JsonSchema {
            name: "workflow_edges".to_owned(),
            schema,
        };
        let answer = judge.complete(messages, output).await.and_then(|text| {
            serde_json::from_str::<Map<String, Value>>(text.trim()).map_err(|_| {
                AnswerError::Unreadable(format!(
                    "the judge did not answer a JSON object: {text:.200}"
                ))
            })
        });
        match answer {
            Ok(map) => Ok(ids
                .iter()
                .map(|id| {
                    let holds = map.get(*id).and_then(Value::as_bool).unwrap_or(false);
                    ((*id).to_owned(), holds)
                })
                .collect()),
            Err(e) => {
                let message = format!("the edge judge failed ({e}); its edges count as false");
                ctx.events
                    .emit(EventBody::error("workflow_judge_failed", message))
                    .await?;
                Ok(ids.iter().map(|id| ((*id).to_owned(), false)).collect())
            }
        }
    }
}

/// The last messages of the conversation the judge reads (what was said,
/// not tool traffic).
fn recent_messages(history: &[Message]) -> Vec<ChatMessage> {
    let said: Vec<&Message> = history
        .iter()
        .filter(|m| m.role != MessageRole::Tool && !m.content.trim().is_empty())
        .collect();
    said[said.len().saturating_sub(JUDGE_MESSAGES)..]
        .iter()
        .map(|m| match m.role {
            MessageRole::User => ChatMessage::User {
                content: m.content.clone(),
            },
            MessageRole::HumanAgent => ChatMessage::Assistant {
                content: format!("[human agent] {}", m.content),
                tool_calls: Vec::new(),
            },
            _ => ChatMessage::Assistant {
                content: m.content.clone(),
                tool_calls: Vec::new(),
            },
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::message;

    #[test]
    fn the_judge_reads_the_last_twelve_things_said() {
        let mut history: Vec<Message> = (0..20)
            .map(|i| message(MessageRole::User, &format!("m{i}")))
            .collect();
        let mut tool = message(MessageRole::Tool, "{\"ok\":true}");
        tool.tool_call_id = Some("c".into());
        history.push(tool);
        history.push(message(MessageRole::Assistant, "last"));
        let recent = recent_messages(&history);
        assert_eq!(recent.len(), JUDGE_MESSAGES);
        assert!(matches!(&recent[0], ChatMessage::User { content } if content == "m9"));
        assert!(matches!(&recent[11], ChatMessage::Assistant { content, .. } if content == "last"));
    }
}

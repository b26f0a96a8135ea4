//! Session trees (R-SA-1, R-SA-5, R-BX-4): who is below whom, the
//! permission rule of the sub-agent tools (a target must be a descendant
//! of the caller), stopping a subtree leaves first, the tree view of
//! `GET /v1/sessions/{id}/tree`, and askUser questions of sub-agents that
//! the root's user answers.

use std::collections::VecDeque;

use rtc_core::time::rfc3339_from_millis;
use rtc_protocol::{
    AnswerParams, AnswerResponse, PendingQuestion, SessionStatus, SessionTreeNode,
    SubAgentCompleted,
};
use rtc_store::{SessionRecord, SubAgentRecord};

use super::SubAgentService;
use crate::features::inbox::InboxService;
use crate::features::interaction::InteractionService;
use crate::features::sub_agents::service::report_item;
use crate::{Runtime, RuntimeError};

/// One session of a tree.
pub(crate) struct Node {
    pub session: SessionRecord,
    /// `None` for the root.
    pub agent: Option<SubAgentRecord>,
}

impl Node {
    /// At work: not ended, and a sub-agent between its task (or a message)
    /// and its report; the root while it is open.
    pub fn working(&self) -> bool {
        self.session.status != SessionStatus::Ended && self.agent.as_ref().is_none_or(|a| a.running)
    }
}

/// All sessions of one tree, oldest first.
pub(crate) struct Tree {
    nodes: Vec<Node>,
}

impl Tree {
    fn children<'a>(&'a self, of: &'a str) -> impl Iterator<Item = &'a Node> + 'a {
        self.nodes
            .iter()
            .filter(move |n| n.session.parent_id.as_deref() == Some(of))
    }

    /// The sessions below `of`, nearest first (breadth-first).
    pub fn descendants<'a>(&'a self, of: &'a str) -> Vec<&'a Node> {
        let mut out = Vec::new();
        let mut queue: VecDeque<&'a str> = VecDeque::from([of]);
        while let Some(id) = queue.pop_front() {
            for child in self.children(id) {
                out.push(child);
                queue.push_back(&child.session.id);
            }
        }
        out
    }

    /// `target` if the caller `of` may act on it: below it in its tree,
    /// never itself. The error is told to the model.
    pub fn descendant<'a>(
        &'a self,
        of: &'a str,
        target: &str,
    ) -> Result<&'a Node, crate::builtins::ArgumentError> {
        if of == target {
            return Err("that is your own session; these tools act on your sub-agents".into());
        }
        self.descendants(of)
            .into_iter()
            .find(|n| n.session.id == target)
            .ok_or_else(|| {
                format!("`{target}` is not one of your sub-agents; listSubAgent lists the ids you may use").into()
            })
    }

    /// `of`'s children still at work (a sub-agent that reported, ended,
    /// failed or was stopped no longer counts; a message makes it work
    /// again).
    pub fn active_children(&self, of: &str) -> usize {
        self.children(of).filter(|n| n.working()).count()
    }

    /// The tree's sessions at work, the root included.
    pub fn active_sessions(&self) -> usize {
        self.nodes.iter().filter(|n| n.working()).count()
    }

    /// Every session the tree ever had (its lifetime bound).
    pub fn all_sessions(&self) -> usize {
        self.nodes.len()
    }

    fn view(&self, node: &Node) -> SessionTreeNode {
        SessionTreeNode {
            session_id: node.session.id.clone(),
            title: node.session.title.clone(),
            status: node.session.status,
            mode: node.agent.as_ref().map(|a| a.mode.clone()),
            running: node.agent.as_ref().is_some_and(|a| a.running),
            depth: node.agent.as_ref().map_or(0, |a| a.depth),
            end_reason: node.session.end_reason.clone(),
            created_at: rfc3339_from_millis(node.session.created_at),
            updated_at: rfc3339_from_millis(node.session.updated_at),
            children: self
                .children(&node.session.id)
                .map(|c| self.view(c))
                .collect(),
        }
    }
}

impl SubAgentService<'_> {
    /// The tree rooted at `root`, with every queued write committed.
    pub(crate) async fn tree(self, root: &str) -> Result<Tree, RuntimeError> {
        self.journal.flush().await;
        let nodes = self
            .store
            .session_tree(root)
            .await?
            .into_iter()
            .map(|(session, agent)| Node { session, agent })
            .collect();
        Ok(Tree { nodes })
    }

    /// Stop `target` and its active descendants, leaves first (R-SA-5).
    /// A stopped sub-agent whose report a sync call waits for answers that
    /// call with "stopped", unless its parent stops too. Returns the
    /// stopped sessions with their titles.
    pub(crate) async fn stop_subtree(
        self,
        tree: &Tree,
        target: &str,
        reason: &str,
        by: &str,
    ) -> Result<Vec<(String, Option<String>)>, RuntimeError> {
        let mut order: Vec<&Node> = tree
            .nodes
            .iter()
            .filter(|n| n.session.id == target)
            .chain(tree.descendants(target))
            .collect();
        order.reverse();
        let stopping: Vec<&str> = order.iter().map(|n| n.session.id.as_str()).collect();
        let mut stopped = Vec::new();
        for node in order {
            if node.session.status == SessionStatus::Ended {
                continue;
            }
            let ctx = self.session(&node.session.id).await?;
            self.end_session(&ctx, Some(reason), by).await?;
            self.store.stop_sub_agent(&node.session.id).await?;
            let title = node.session.title.clone();
            if let Some(agent) = &node.agent {
                let parent = self.session(&agent.parent_id).await?;
                let event = SubAgentCompleted {
                    sub_session_id: node.session.id.clone(),
                    title: title.clone(),
                    status: "stopped".to_owned(),
                    report: None,
                    reason: Some(reason.to_owned()),
                };
                self.tree_event(&parent, event.into()).await?;
                if let Some(call_id) = &agent.call_id
                    && !stopping.contains(&agent.parent_id.as_str())
                {
                    let item = report_item(
                        &agent.parent_id,
                        &node.session.id,
                        title.as_deref(),
                        "stopped",
                        &format!("The sub-agent was stopped: {reason}."),
                        Some(call_id.clone()),
                    );
                    InboxService::of(self.rt).post(&item).await?;
                }
            }
            stopped.push((node.session.id.clone(), title));
        }
        Ok(stopped)
    }

    /// When a session ends, its sub-agents stop with it.
    pub(crate) async fn stop_descendants(
        self,
        session: &str,
        root: &str,
    ) -> Result<(), RuntimeError> {
        let tree = self.tree(root).await?;
        let children: Vec<String> = tree
            .children(session)
            .filter(|n| n.session.status != SessionStatus::Ended)
            .map(|n| n.session.id.clone())
            .collect();
        for child in children {
            self.stop_subtree(&tree, &child, "its parent session ended", "parent")
                .await?;
        }
        Ok(())
    }

    /// The oldest question a sub-agent below `of` waits on (R-BX-4), or the
    /// one whose call is `call_id`.
    async fn asking_descendant(
        self,
        of: &str,
        root: &str,
        call_id: Option<&str>,
    ) -> Result<Option<PendingQuestion>, RuntimeError> {
        let tree = self.tree(root).await?;
        let mut asking: Vec<PendingQuestion> = tree
            .descendants(of)
            .into_iter()
            .filter(|n| n.session.status == SessionStatus::Active)
            .filter_map(|n| n.session.pending_question.clone())
            .filter(|q| call_id.is_none_or(|c| q.call_id == c))
            .collect();
        asking.sort_by(|a, b| a.asked_at.cmp(&b.asked_at));
        Ok(asking.into_iter().next())
    }
}

impl Runtime {
    /// The session and the sub-agents below it (`GET /v1/sessions/{id}/tree`).
    pub async fn tree(&self, workspace: &str, id: &str) -> Result<SessionTreeNode, RuntimeError> {
        let ctx = self.inner.session_in(workspace, id).await?;
        let tree = SubAgentService::of(&self.inner).tree(&ctx.root_id).await?;
        let node = tree
            .nodes
            .iter()
            .find(|n| n.session.id == id)
            .ok_or_else(|| RuntimeError::not_found("session", id))?;
        Ok(tree.view(node))
    }

    /// The question the session waits on: its own, else the oldest one a
    /// sub-agent below it asks (labelled with the sub-agent, R-BX-4).
    pub async fn pending_question(
        &self,
        workspace: &str,
        id: &str,
    ) -> Result<Option<PendingQuestion>, RuntimeError> {
        let ctx = self.inner.session_in(workspace, id).await?;
        if let Some(q) = crate::features::interaction::service::pending_question(&ctx) {
            return Ok(Some(q));
        }
        SubAgentService::of(&self.inner)
            .asking_descendant(id, &ctx.root_id, None)
            .await
    }

    /// The user's answers (R-AU-2/3, R-BX-5): to the session's own question,
    /// or passed down to the sub-agent that asked (R-BX-4).
    pub async fn answer(
        &self,
        workspace: &str,
        id: &str,
        params: AnswerParams,
    ) -> Result<AnswerResponse, RuntimeError> {
        let ctx = self.inner.session_in(workspace, id).await?;
        let own = crate::features::interaction::service::pending_question(&ctx)
            .is_some_and(|q| params.call_id.as_ref().is_none_or(|c| *c == q.call_id));
        if !own
            && let Some(q) = SubAgentService::of(&self.inner)
                .asking_descendant(id, &ctx.root_id, params.call_id.as_deref())
                .await?
            && let Some(child) = q.sub_session_id.as_deref()
        {
            let child = self.inner.session(child).await?;
            return InteractionService::of(&self.inner)
                .answer_question(&child, params)
                .await;
        }
        InteractionService::of(&self.inner)
            .answer_question(&ctx, params)
            .await
    }
}

//! The LLM's built-in tools of seed 000 that a session offers: which ones
//! the model sees (the assistant's `features`, and for the web tools the
//! server's configuration), and where each call goes.

use rtc_core::llm::{ToolCall, ToolSpec};
use rtc_protocol::Assistant;
use std::sync::Arc;

use rtc_tools::builtin::{
    ask_user, goals, loops, memory, subagents, todo_write, web_fetch, web_search,
};

use crate::execute::CallOutcome;
use crate::goals::GoalTool;
use crate::loops::LoopTool;
use crate::memory::MemoryTool;
use crate::session::SessionCtx;
use crate::subagents::SubAgentTool;
use crate::{Inner, RuntimeError};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LlmTool {
    AskUser,
    TodoWrite,
    WebSearch,
    WebFetch,
    Memory(MemoryTool),
    Goal(GoalTool),
    Loop(LoopTool),
    SubAgent(SubAgentTool),
}

impl Inner {
    /// The built-ins this assistant's model may call on this server.
    pub(crate) fn llm_tools(&self, assistant: &Assistant) -> Vec<(ToolSpec, LlmTool)> {
        let f = &assistant.features;
        let mut out = Vec::new();
        if f.sub_agents {
            out.extend([
                (
                    subagents::sub_agent::spec(),
                    LlmTool::SubAgent(SubAgentTool::Start),
                ),
                (
                    subagents::list::spec(),
                    LlmTool::SubAgent(SubAgentTool::List),
                ),
                (
                    subagents::get_message::spec(),
                    LlmTool::SubAgent(SubAgentTool::GetMessage),
                ),
                (
                    subagents::stop::spec(),
                    LlmTool::SubAgent(SubAgentTool::Stop),
                ),
                (
                    subagents::send_message::spec(),
                    LlmTool::SubAgent(SubAgentTool::SendMessage),
                ),
            ]);
        }
        if f.ask_user {
            out.push((ask_user::spec(), LlmTool::AskUser));
        }
        if f.todo {
            out.push((todo_write::spec(), LlmTool::TodoWrite));
        }
        if f.web_search && self.config.web_search.is_some() {
            out.push((web_search::spec(), LlmTool::WebSearch));
        }
        if f.web_fetch && self.config.web_fetch.is_some() {
            out.push((web_fetch::spec(), LlmTool::WebFetch));
        }
        if f.goals {
            out.extend([
                (goals::create::spec(), LlmTool::Goal(GoalTool::Create)),
                (goals::complete::spec(), LlmTool::Goal(GoalTool::Complete)),
                (goals::cancel::spec(), LlmTool::Goal(GoalTool::Cancel)),
            ]);
        }
        if f.loops {
            out.extend([
                (loops::create::spec(), LlmTool::Loop(LoopTool::Create)),
                (loops::cancel::spec(), LlmTool::Loop(LoopTool::Cancel)),
                (loops::complete::spec(), LlmTool::Loop(LoopTool::Complete)),
                (loops::list::spec(), LlmTool::Loop(LoopTool::List)),
                (loops::pause::spec(), LlmTool::Loop(LoopTool::Pause)),
                (loops::resume::spec(), LlmTool::Loop(LoopTool::Resume)),
            ]);
        }
        if f.memory {
            out.extend([
                (memory::save::spec(), LlmTool::Memory(MemoryTool::Save)),
                (memory::update::spec(), LlmTool::Memory(MemoryTool::Update)),
                (memory::delete::spec(), LlmTool::Memory(MemoryTool::Delete)),
                (memory::list::spec(), LlmTool::Memory(MemoryTool::List)),
                (memory::search::spec(), LlmTool::Memory(MemoryTool::Search)),
            ]);
        }
        out
    }

    pub(crate) async fn run_llm_tool(
        self: &Arc<Self>,
        ctx: &Arc<SessionCtx>,
        tool: LlmTool,
        call: &ToolCall,
    ) -> Result<CallOutcome, RuntimeError> {
        Ok(match tool {
            LlmTool::AskUser => self.ask_user(ctx, call).await?,
            LlmTool::TodoWrite => self.todo_write(ctx, call).await?,
            LlmTool::WebSearch => self.web_search(call).await,
            LlmTool::WebFetch => self.web_fetch(ctx, call).await,
            LlmTool::Memory(tool) => self.memory_tool(ctx, tool, call).await?,
            LlmTool::Goal(tool) => self.goal_tool(ctx, tool, call).await?,
            LlmTool::Loop(tool) => self.loop_tool(ctx, tool, call).await?,
            LlmTool::SubAgent(tool) => self.sub_agent_tool(ctx, tool, call).await?,
        })
    }
}

//! What the terminal shows of a session's events: the streamed answer,
//! tool calls and results, state changes, the todo list, goals, loops,
//! sub-agents, tasks, handoffs and errors — one line (or block) each, as
//! they arrive. Output that interrupts a streamed answer or a prompt
//! starts on a new line.

use std::io::Write;

use rtc_protocol::{EventBody, Goal, Loop, MessageRole, TodoItem, TodoStatus};

/// The terminal's output and where its cursor stands.
#[derive(Default)]
pub struct View {
    /// A streamed answer is being written on the current line.
    in_text: bool,
    /// A prompt waits on the current line.
    at_prompt: bool,
    /// The assistant's client tools, which only a connected app can run.
    pub client_tools: Vec<String>,
}

fn write(text: &str) -> anyhow::Result<()> {
    let mut o = std::io::stdout().lock();
    write!(o, "{text}")?;
    o.flush()?;
    Ok(())
}

/// At most `max` characters of `text`, on one line.
fn short(text: &str, max: usize) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= max {
        return flat;
    }
    let cut: String = flat.chars().take(max).collect();
    format!("{cut}…")
}

impl View {
    pub fn new(client_tools: Vec<String>) -> Self {
        Self {
            client_tools,
            ..Self::default()
        }
    }

    /// A line of its own.
    pub fn line(&mut self, text: &str) -> anyhow::Result<()> {
        self.break_line()?;
        write(&format!("{text}\n"))
    }

    /// A prompt; the user types after it.
    pub fn prompt(&mut self, prompt: &str) -> anyhow::Result<()> {
        self.break_line()?;
        self.at_prompt = true;
        write(prompt)
    }

    /// The user typed a line after `prompt` (their terminal moved to the
    /// next line); a piped line is echoed, after the prompt if it was not
    /// shown yet, so the transcript reads as a conversation.
    pub fn typed(&mut self, prompt: &str, line: &str, echo: bool) -> anyhow::Result<()> {
        if echo {
            if !self.at_prompt {
                self.break_line()?;
                write(prompt)?;
            }
            write(&format!("{line}\n"))?;
        }
        self.at_prompt = false;
        Ok(())
    }

    /// Nothing waits on the current line: a prompt may be shown.
    pub fn needs_prompt(&self) -> bool {
        !self.at_prompt && !self.in_text
    }

    /// End a streamed answer or a prompt left on the current line.
    fn break_line(&mut self) -> anyhow::Result<()> {
        if self.in_text || self.at_prompt {
            self.in_text = false;
            self.at_prompt = false;
            write("\n")?;
        }
        Ok(())
    }

    /// Show one event (askUser questions are asked by the conversation,
    /// not shown here).
    pub fn event(&mut self, body: &EventBody) -> anyhow::Result<()> {
        match body {
            EventBody::MessageDelta(d) => {
                if !self.in_text {
                    self.break_line()?;
                    write("assistant> ")?;
                    self.in_text = true;
                }
                write(&d.delta)?;
            }
            EventBody::MessageCompleted(m) => match m.role {
                MessageRole::Assistant if self.in_text => {
                    self.in_text = false;
                    write("\n")?;
                }
                MessageRole::Assistant if m.refusal => {
                    self.line(&format!("assistant (refuses)> {}", m.content))?
                }
                MessageRole::Assistant if !m.content.is_empty() => {
                    self.line(&format!("assistant> {}", m.content))?
                }
                MessageRole::HumanAgent => self.line(&format!("agent> {}", m.content))?,
                MessageRole::User if m.goal_id.is_some() => self.line("  ↻ the goal continues")?,
                MessageRole::User if m.loop_id.is_some() => self.line("  ↻ loop tick")?,
                MessageRole::User if m.from_session_id.is_some() => {
                    self.line(&format!("  ⇠ {}", short(&m.content, 200)))?
                }
                _ => {}
            },
            EventBody::ToolCalled(c) if shown_otherwise(&c.name) => {}
            EventBody::ToolCalled(c) => self.line(&format!("  → {}({})", c.name, c.arguments))?,
            EventBody::ToolCompleted(c) if c.cancelled => {
                self.line(&format!("  ✗ {} (cancelled)", c.name))?
            }
            EventBody::ToolCompleted(c) if c.is_error && self.client_tools.contains(&c.name) => {
                self.line(&format!(
                    "  ✗ {}: a client tool — only an app connected over the WebSocket can run it, not this terminal",
                    c.name
                ))?
            }
            EventBody::ToolCompleted(c) if !c.is_error && shown_otherwise(&c.name) => {}
            EventBody::ToolCompleted(c) => {
                let mark = if c.is_error { "✗" } else { "✓" };
                let result = c.result.as_ref().map(ToString::to_string).unwrap_or_default();
                self.line(&format!("  {mark} {} {result}", c.name))?;
            }
            EventBody::StateUpdated(s) if s.source != "system" => {
                let changes = serde_json::Value::Object(s.changes.clone());
                self.line(&format!("  state {changes}"))?
            }
            EventBody::TodoUpdated(t) => self.line(&todos(&t.todos))?,
            EventBody::GoalUpdated(g) => self.line(&goal(&g.goal))?,
            EventBody::LoopUpdated(l) => self.line(&looping(&l.loop_))?,
            EventBody::SubAgentStarted(s) => self.line(&format!(
                "  sub-agent \"{}\" started ({})",
                s.title, s.mode
            ))?,
            EventBody::SubAgentCompleted(s) => {
                let title = s.title.as_deref().unwrap_or(&s.sub_session_id);
                let mut text = format!("  sub-agent \"{title}\" {}", s.status);
                if let Some(report) = &s.report {
                    text.push_str(&format!(": {}", short(report, 200)));
                } else if let Some(reason) = &s.reason {
                    text.push_str(&format!(" — {reason}"));
                }
                self.line(&text)?
            }
            EventBody::AskUserAnswered(a) if a.dismissed => {
                self.line("  [the question was dismissed]")?
            }
            EventBody::AskUserAnswered(a) => self.line(&format!(
                "  answered: {}",
                a.answers.as_deref().unwrap_or_default().join(" · ")
            ))?,
            EventBody::TaskStarted(t) => self.line(&format!("  task \"{}\" started", t.title))?,
            EventBody::TaskCompleted(t) => {
                let mut text = format!("  task \"{}\" {}", t.title, t.status.as_str());
                if let Some(detail) = t.error.as_ref().or(t.result.as_ref()) {
                    text.push_str(&format!(": {}", short(detail, 200)));
                }
                self.line(&text)?
            }
            EventBody::MemoryUpdated(m) => self.line(&format!("  memory {}", m.action))?,
            EventBody::ClientToolCall(c) => self.line(&format!(
                "  client tool {} requested (a connected app runs it, not this terminal)",
                c.function_name
            ))?,
            EventBody::HandoffRequested(_) => self.line("  [handed off to a human agent]")?,
            EventBody::HandoffReleased(_) => self.line("  [back to the assistant]")?,
            EventBody::TurnSkipped(_) => self.line("  [the assistant stays silent]")?,
            EventBody::Error(e) => self.line(&format!("! {}", e.message))?,
            EventBody::SessionEnded(e) => self.line(&format!(
                "[session ended: {}]",
                e.reason.as_deref().unwrap_or("no reason given")
            ))?,
            _ => {}
        }
        Ok(())
    }
}

/// Built-ins whose calls show through their own events (the question, the
/// todo list, the goal, the loop, the sub-agent): their call and result
/// are not repeated, unless the call failed.
fn shown_otherwise(tool: &str) -> bool {
    matches!(
        tool,
        "askUser" | "todoWrite" | "createGoal" | "createLoop" | "completeLoop" | "subAgent"
    )
}

/// The todo list, one item a line: `[x]` done, `[>]` in progress, `[ ]` to do.
fn todos(items: &[TodoItem]) -> String {
    let done = items
        .iter()
        .filter(|t| t.status == TodoStatus::Completed)
        .count();
    let mut text = format!("  todos ({done}/{} done):", items.len());
    for t in items {
        let mark = match t.status {
            TodoStatus::Completed => "[x]",
            TodoStatus::InProgress => "[>]",
            TodoStatus::Pending => "[ ]",
        };
        text.push_str(&format!("\n    {mark} {}", t.content));
        if t.status == TodoStatus::InProgress
            && let Some(now) = &t.active_form
        {
            text.push_str(&format!(" ({now})"));
        }
    }
    text
}

fn goal(g: &Goal) -> String {
    let mut text = format!(
        "  goal {}: {} ({}/{} turns)",
        g.status.as_str(),
        g.condition,
        g.completed_turns,
        g.max_turns
    );
    if let Some(reason) = &g.reason {
        text.push_str(&format!(" — {reason}"));
    }
    text
}

fn looping(l: &Loop) -> String {
    let mut text = format!(
        "  loop {}: \"{}\" every {} s ({}/{} turns)",
        l.status.as_str(),
        short(&l.prompt, 80),
        l.interval_seconds,
        l.turns_done,
        l.max_turns
    );
    if let Some(reason) = &l.reason {
        text.push_str(&format!(" — {reason}"));
    }
    text
}

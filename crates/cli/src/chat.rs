//! `rtc-agent chat`: a terminal conversation with an assistant through a
//! running server's public API. It shows the streamed answer, tool calls,
//! state changes, the todo list, goals, loops and sub-agents as they
//! happen; asks askUser questions with numbered options and sends the
//! answers through `POST /v1/sessions/{id}/answers`; and ends the session
//! (`POST /v1/sessions/{id}/end`) on `/quit`, end of input (Ctrl-D) or
//! Ctrl-C. The workspace key comes from `RTC_API_KEY` (or `--key`, which
//! other users can read in the process list).
//!
//! One task follows the session's events; this loop reads the user's
//! lines only while nothing is running (after the turn a message started
//! has completed, and while no goal drives the session), so piped input
//! is taken one line per turn, and while a question is open.

mod api;
mod ask_user;
mod render;

use std::collections::{HashSet, VecDeque};
use std::io::{BufRead, IsTerminal};
use std::time::Duration;

use anyhow::{Context, bail};
use clap::Args;
use rtc_protocol::{AnswerValue, AskUserQuestion, EventBody, GoalStatus, SessionEvent};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio::time::Instant;

use self::api::{Answered, Api, Feed};
use self::ask_user::{Asking, Step};
use self::render::View;

#[derive(Debug, Args)]
pub struct ChatArgs {
    /// The assistant to talk to.
    #[arg(long)]
    pub assistant: String,
    /// Base URL of the server.
    #[arg(long, env = "RTC_URL", default_value = "http://127.0.0.1:8080")]
    pub url: String,
    /// A workspace API key. Prefer the RTC_API_KEY environment variable:
    /// a key given here shows in the process list (`ps`).
    #[arg(long, env = "RTC_API_KEY", hide_env_values = true)]
    pub key: String,
    /// End user id (for memories and `system__user_id`).
    #[arg(long)]
    pub user: Option<String>,
    /// Initial variable values, `name=value` (JSON values are parsed).
    #[arg(long = "var", value_name = "NAME=VALUE")]
    pub vars: Vec<String>,
}

const HELP: &str = "\
  Type a message and press Enter. Commands:
    /quit   end the session and leave (so do Ctrl-D and Ctrl-C)
    /help   this help
  When the assistant asks a question, type an option's number (several,
  separated by commas, where it allows more than one), or your own answer.";

/// Silence after which the output of a turn counts as complete.
const QUIET: Duration = Duration::from_millis(300);
/// Silence after which the user may type again even though a turn or a
/// goal has not been seen to finish.
const PATIENCE: Duration = Duration::from_secs(120);

fn variables(vars: &[String]) -> anyhow::Result<Value> {
    let mut map = serde_json::Map::new();
    for v in vars {
        let Some((name, value)) = v.split_once('=') else {
            bail!("--var takes NAME=VALUE, got {v:?}")
        };
        let parsed = serde_json::from_str(value).unwrap_or_else(|_| json!(value));
        map.insert(name.to_owned(), parsed);
    }
    Ok(Value::Object(map))
}

/// What must happen before the user types again.
#[derive(Debug, PartialEq, Eq)]
enum Wait {
    Nothing,
    /// The user's message to be stored (its id).
    Message(String),
    /// The turn it (or an answer) starts.
    TurnStart,
    TurnEnd(String),
    /// An active goal drives the session with turns of its own.
    Goals,
    /// The output to settle: a short silence with no turn running.
    Quiet,
}

/// How the conversation stopped.
enum Exit {
    /// The user left; the session must be ended.
    Leave,
    /// The session ended by itself.
    Ended,
}

struct Chat {
    api: Api,
    session: String,
    view: View,
    wait: Wait,
    turn_running: bool,
    handed_off: bool,
    /// Goals that start turns of their own (not a loop's checks).
    active_goals: HashSet<String>,
    /// Questions not yet put to the user, oldest first.
    questions: VecDeque<AskUserQuestion>,
    asking: Option<Asking>,
    last_event: Instant,
    /// Echo typed lines (input is piped, not a terminal).
    echo: bool,
}

/// Run the conversation until the user leaves or the session ends.
pub async fn run(args: ChatArgs) -> anyhow::Result<()> {
    let api = Api::new(&args.url, &args.key);
    let body = json!({"assistantId": args.assistant, "userId": args.user,
        "dynamicVariables": variables(&args.vars)?});
    let session = api.create_session(body).await?;
    let mut view = View::new(api.client_tools(&args.assistant).await);
    view.line(&format!(
        "session {session} (type /quit or press Ctrl-D to end it, /help for help)"
    ))?;
    if !view.client_tools.is_empty() {
        view.line(&format!(
            "note: this assistant's client tools ({}) run only in an app connected over the WebSocket; here their calls fail at once",
            view.client_tools.join(", ")
        ))?;
    }
    let mut chat = Chat {
        api: api.clone(),
        session: session.clone(),
        view,
        wait: Wait::Quiet,
        turn_running: false,
        handed_off: false,
        active_goals: HashSet::new(),
        questions: VecDeque::new(),
        asking: None,
        last_event: Instant::now(),
        echo: !std::io::stdin().is_terminal(),
    };
    let exit = chat.converse().await?;
    if let Exit::Leave = exit {
        api.end(&session, "the user left the terminal chat")
            .await
            .map_err(|e| e.context(format!("could not end session {session}")))?;
        chat.view.line(&format!("[session {session} ended]"))?;
    }
    Ok(())
}

/// The lines of stdin, read on a thread of their own: a blocking read
/// cannot be cancelled, and the process must be able to leave (Ctrl-C, a
/// session ended by the model) while one waits. The channel closes at the
/// end of input.
fn stdin_lines() -> mpsc::UnboundedReceiver<std::io::Result<String>> {
    let (tx, rx) = mpsc::unbounded_channel();
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines() {
            let failed = line.is_err();
            if tx.send(line).is_err() || failed {
                return;
            }
        }
    });
    rx
}

impl Chat {
    async fn converse(&mut self) -> anyhow::Result<Exit> {
        let mut feed = self.api.follow(&self.session);
        let mut lines = stdin_lines();
        let ctrl_c = tokio::signal::ctrl_c();
        tokio::pin!(ctrl_c);
        loop {
            self.settle();
            self.start_asking()?;
            let typing = self.asking.is_some() || self.wait == Wait::Nothing;
            // The prompt waits while a turn of the session's own (a loop's
            // tick) is writing, so that it is not repeated after each line.
            let mut prompt_later = false;
            if typing && self.view.needs_prompt() {
                if let Some(asking) = &self.asking {
                    self.view.prompt(asking.prompt())?;
                } else if self.turn_running || self.last_event.elapsed() < QUIET {
                    prompt_later = true;
                } else {
                    self.view.prompt("you> ")?;
                }
            }
            tokio::select! {
                item = feed.recv() => match item {
                    Some(Feed::Event(ev)) => {
                        if self.event(*ev)? {
                            return Ok(Exit::Ended);
                        }
                    }
                    Some(Feed::Lost(m)) => self.view.line(&format!("  [{m}]"))?,
                    Some(Feed::Fatal(m)) => bail!("{m}"),
                    None => bail!("the event stream stopped"),
                },
                line = lines.recv(), if typing => {
                    // At the end of input the prompt's line is ended by
                    // whatever is written next.
                    let Some(line) = line else {
                        return Ok(Exit::Leave);
                    };
                    let line = line.context("reading the terminal")?;
                    let prompt = self.asking.as_ref().map_or("you> ", Asking::prompt);
                    self.view.typed(prompt, &line, self.echo)?;
                    if self.input(line.trim()).await? {
                        return Ok(Exit::Leave);
                    }
                }
                () = tokio::time::sleep(Duration::from_millis(100)),
                    if self.wait != Wait::Nothing || prompt_later => {}
                _ = &mut ctrl_c => return Ok(Exit::Leave),
            }
        }
    }

    /// Stop waiting once the output has settled, or after long silence.
    fn settle(&mut self) {
        let silent = self.last_event.elapsed();
        if self.wait == Wait::Quiet && silent >= QUIET && !self.turn_running {
            self.wait = Wait::Nothing;
        }
        if self.wait != Wait::Nothing && silent >= PATIENCE {
            self.wait = Wait::Nothing;
        }
    }

    /// Put the next question to the user: the session's own once its turn
    /// is over, a sub-agent's at once (its parent may be waiting on it).
    fn start_asking(&mut self) -> anyhow::Result<()> {
        if self.asking.is_some() {
            return Ok(());
        }
        let ready = self.questions.front().is_some_and(|q| {
            q.sub_session_id.is_some() || matches!(self.wait, Wait::Nothing | Wait::Goals)
        });
        if let Some(q) = ready.then(|| self.questions.pop_front()).flatten() {
            let asking = Asking::new(q);
            self.view.line(&asking.show())?;
            self.asking = Some(asking);
        }
        Ok(())
    }

    /// Take one event; true when the session ended.
    fn event(&mut self, ev: SessionEvent) -> anyhow::Result<bool> {
        self.last_event = Instant::now();
        self.view.event(&ev.body)?;
        match ev.body {
            EventBody::SessionEnded(_) => return Ok(true),
            // The user's message is stored: its turn comes (none while a
            // human agent has the conversation).
            EventBody::MessageCompleted(m) if self.waits_for(&m.message_id) => {
                self.wait = if self.handed_off {
                    Wait::Quiet
                } else {
                    Wait::TurnStart
                };
            }
            EventBody::TurnStarted(t) => {
                self.turn_running = true;
                if self.wait == Wait::TurnStart {
                    self.wait = Wait::TurnEnd(t.turn_id);
                }
            }
            EventBody::TurnCompleted(t) => {
                self.turn_running = false;
                let ours = match &self.wait {
                    Wait::TurnEnd(id) => t.turn_id.as_ref().is_none_or(|t| t == id),
                    _ => false,
                };
                if ours {
                    self.wait = self.after_turn();
                }
            }
            EventBody::GoalUpdated(g) => {
                if g.goal.status == GoalStatus::Active && g.goal.loop_id.is_none() {
                    self.active_goals.insert(g.goal.id);
                } else {
                    self.active_goals.remove(&g.goal.id);
                }
                if self.wait == Wait::Goals && self.active_goals.is_empty() {
                    self.wait = Wait::Quiet;
                }
            }
            EventBody::HandoffRequested(_) => self.handed_off = true,
            EventBody::HandoffReleased(_) => self.handed_off = false,
            EventBody::AskUserQuestion(q) => self.questions.push_back(q),
            EventBody::AskUserAnswered(a) => {
                // Answered here, elsewhere (the console), or dismissed.
                self.questions.retain(|q| q.call_id != a.call_id);
                if self.asking.as_ref().is_some_and(|q| q.call_id == a.call_id) {
                    self.asking = None;
                }
            }
            _ => {}
        }
        Ok(false)
    }

    /// Whether the user's message `id` is waited for.
    fn waits_for(&self, id: &str) -> bool {
        matches!(&self.wait, Wait::Message(m) if m == id)
    }

    fn after_turn(&self) -> Wait {
        if self.active_goals.is_empty() {
            Wait::Quiet
        } else {
            Wait::Goals
        }
    }

    /// Take one typed line; true when the user leaves.
    async fn input(&mut self, text: &str) -> anyhow::Result<bool> {
        match text {
            "/quit" | "/exit" => return Ok(true),
            "/help" => {
                self.view.line(HELP)?;
                if let Some(asking) = &self.asking {
                    self.view.line(&asking.show())?;
                }
                return Ok(false);
            }
            _ => {}
        }
        if let Some(asking) = self.asking.as_mut() {
            match asking.input(text) {
                Step::Prompt(p) if p.is_empty() => {}
                Step::Prompt(p) => self.view.line(&p)?,
                Step::Done(answers) => self.answer(answers).await?,
            }
            return Ok(false);
        }
        if text.is_empty() {
            return Ok(false);
        }
        match self.api.send(&self.session, text).await {
            Ok(id) => self.wait = Wait::Message(id),
            Err(e) => self.view.line(&format!("! {e:#}"))?,
        }
        Ok(false)
    }

    /// Send the answers of the open question set.
    async fn answer(&mut self, answers: Vec<AnswerValue>) -> anyhow::Result<()> {
        let Some(asking) = self.asking.as_mut() else {
            return Ok(());
        };
        match self
            .api
            .answer(&self.session, &asking.call_id, &answers)
            .await?
        {
            Answered::Accepted => {
                // The asker's next turn starts; a sub-agent's runs in its
                // own session.
                if !asking.from_sub_agent {
                    self.wait = Wait::TurnStart;
                } else if self.wait == Wait::Nothing {
                    self.wait = Wait::Quiet;
                }
                self.last_event = Instant::now();
                self.asking = None;
            }
            Answered::Invalid(m) => {
                let again = asking.restart();
                self.view.line(&format!("! {m}"))?;
                self.view.line(&again)?;
            }
            Answered::Refused(m) => {
                self.view.line(&format!("! {m}"))?;
                self.asking = None;
            }
        }
        Ok(())
    }
}

//! `rtc-agent chat`: a terminal conversation with an assistant through a
//! running server's public API, showing tool calls and state changes as
//! they happen.

use std::io::Write;

use anyhow::{Context, bail};
use clap::Args;
use futures::StreamExt;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};

#[derive(Debug, Args)]
pub struct ChatArgs {
    /// The assistant to talk to.
    #[arg(long)]
    pub assistant: String,
    /// Base URL of the server.
    #[arg(long, env = "RTC_URL", default_value = "http://127.0.0.1:8080")]
    pub url: String,
    /// A workspace API key.
    #[arg(long, env = "RTC_API_KEY")]
    pub key: String,
    /// End user id (for memories and `system__user_id`).
    #[arg(long)]
    pub user: Option<String>,
    /// Initial variable values, `name=value` (JSON values are parsed).
    #[arg(long = "var", value_name = "NAME=VALUE")]
    pub vars: Vec<String>,
}

fn out(line: &str) -> anyhow::Result<()> {
    let mut o = std::io::stdout().lock();
    writeln!(o, "{line}")?;
    o.flush()?;
    Ok(())
}

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

/// Run the conversation until EOF, `/quit` or the end of the session.
pub async fn run(args: ChatArgs) -> anyhow::Result<()> {
    let http = reqwest::Client::new();
    let base = args.url.trim_end_matches('/').to_owned();
    let body = json!({"assistantId": args.assistant, "userId": args.user, "dynamicVariables": variables(&args.vars)?});
    let resp = http
        .post(format!("{base}/v1/sessions"))
        .bearer_auth(&args.key)
        .json(&body)
        .send()
        .await
        .context("connecting to the server")?;
    let status = resp.status();
    let created: Value = resp.json().await?;
    if !status.is_success() {
        bail!(
            "could not open a session: {}",
            created["error"]["message"]
                .as_str()
                .unwrap_or("unknown error")
        );
    }
    let session = created["id"].as_str().unwrap_or_default().to_owned();
    out(&format!("session {session} (type /quit to leave)"))?;
    let mut last = show_until(&http, &base, &args.key, &session, 0, false)
        .await?
        .0;
    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    loop {
        out("you> ")?;
        let Some(line) = lines.next_line().await? else {
            break;
        };
        let text = line.trim();
        if text.is_empty() {
            continue;
        }
        if text == "/quit" {
            break;
        }
        let resp = http
            .post(format!("{base}/v1/sessions/{session}/messages"))
            .bearer_auth(&args.key)
            .json(&json!({"text": text}))
            .send()
            .await?;
        if !resp.status().is_success() {
            let v: Value = resp.json().await.unwrap_or_default();
            out(&format!(
                "! {}",
                v["error"]["message"]
                    .as_str()
                    .unwrap_or("the message was refused")
            ))?;
            continue;
        }
        let (seq, ended) = show_until(&http, &base, &args.key, &session, last, true).await?;
        last = seq;
        if ended {
            break;
        }
    }
    Ok(())
}

/// Print events after `after` until the turn completes (or, when not
/// waiting for a turn, until the stored events are shown). Returns the last
/// seq and whether the session ended.
async fn show_until(
    http: &reqwest::Client,
    base: &str,
    key: &str,
    session: &str,
    after: i64,
    wait_turn: bool,
) -> anyhow::Result<(i64, bool)> {
    let resp = http
        .get(format!("{base}/v1/sessions/{session}/events?after={after}"))
        .bearer_auth(key)
        .send()
        .await?;
    let mut body = resp.bytes_stream();
    let mut buf = String::new();
    let mut last = after;
    let mut in_text = false;
    let idle = std::time::Duration::from_millis(if wait_turn { 120_000 } else { 300 });
    loop {
        let chunk = match tokio::time::timeout(idle, body.next()).await {
            Err(_) | Ok(None) => return Ok((last, false)),
            Ok(Some(c)) => c?,
        };
        buf.push_str(&String::from_utf8_lossy(&chunk));
        while let Some(end) = buf.find("\n\n") {
            let block: String = buf.drain(..end + 2).collect();
            let Some(data) = block.lines().find_map(|l| l.strip_prefix("data:")) else {
                continue;
            };
            let ev: Value = serde_json::from_str(data.trim())?;
            last = ev["seq"].as_i64().unwrap_or(last);
            let kind = ev["type"].as_str().unwrap_or("");
            match kind {
                "message.delta" => {
                    if !in_text {
                        print_raw("assistant> ")?;
                        in_text = true;
                    }
                    print_raw(ev["delta"].as_str().unwrap_or(""))?;
                }
                "message.completed" if ev["role"] == "assistant" => {
                    if in_text {
                        out("")?;
                        in_text = false;
                    } else if !ev["content"].as_str().unwrap_or("").is_empty() {
                        out(&format!(
                            "assistant> {}",
                            ev["content"].as_str().unwrap_or("")
                        ))?;
                    }
                }
                "message.completed" if ev["role"] == "human_agent" => {
                    out(&format!("agent> {}", ev["content"].as_str().unwrap_or("")))?
                }
                "tool.called" => out(&format!(
                    "  → {}({})",
                    ev["name"].as_str().unwrap_or("?"),
                    ev["arguments"].as_str().unwrap_or("")
                ))?,
                "tool.completed" => {
                    let mark = if ev["isError"] == true { "✗" } else { "✓" };
                    out(&format!(
                        "  {mark} {} {}",
                        ev["name"].as_str().unwrap_or("?"),
                        ev["result"]
                    ))?;
                }
                "state.updated" if ev["source"] != "system" => {
                    out(&format!("  state {}", ev["changes"]))?
                }
                "client_tool.call" => out(&format!(
                    "  client tool {} requested (no client connected here)",
                    ev["functionName"].as_str().unwrap_or("?")
                ))?,
                "handoff.requested" => out("  [handed off to a human agent]")?,
                "handoff.released" => out("  [back to the assistant]")?,
                "turn.skipped" => out("  [the assistant stays silent]")?,
                "error" => out(&format!("! {}", ev["message"].as_str().unwrap_or("error")))?,
                "session.ended" => {
                    out(&format!(
                        "[session ended: {}]",
                        ev["reason"].as_str().unwrap_or("no reason given")
                    ))?;
                    return Ok((last, true));
                }
                "turn.completed" if wait_turn => return Ok((last, false)),
                _ => {}
            }
        }
    }
}

fn print_raw(text: &str) -> anyhow::Result<()> {
    let mut o = std::io::stdout().lock();
    write!(o, "{text}")?;
    o.flush()?;
    Ok(())
}

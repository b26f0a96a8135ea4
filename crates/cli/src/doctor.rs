//! `rtc-agent doctor`: check the whole configuration without changing
//! anything — the database (reachable, schema current), the master key
//! (its file's permissions), every model provider (one short request),
//! every web search engine (one query), the outbound address guard — and
//! print one line per check. Exit 1 when any check failed.

use std::io::Write;
use std::path::Path;
use std::time::Duration;

use rtc_store::{MasterKey, SecretBox, Store};
use rtc_tools::web_search::{SearchQuery, WebSearch};

use crate::config::Settings;
use crate::data::Exit;

/// A check's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    Ok,
    /// Works, but worth knowing.
    Warn,
    Fail,
}

struct Report {
    failed: bool,
}

impl Report {
    fn line(&mut self, verdict: Verdict, what: &str, detail: &str) -> anyhow::Result<()> {
        let word = match verdict {
            Verdict::Ok => "ok  ",
            Verdict::Warn => "warn",
            Verdict::Fail => {
                self.failed = true;
                "FAIL"
            }
        };
        let mut out = std::io::stdout().lock();
        writeln!(out, "{word}  {what:<22} {detail}")?;
        out.flush()?;
        Ok(())
    }
}

/// Run every check.
pub async fn run(settings: &Settings) -> anyhow::Result<Exit> {
    let mut r = Report { failed: false };
    database(&mut r, settings).await?;
    master_key(&mut r, settings)?;
    providers(&mut r, settings).await?;
    web(&mut r, settings).await?;
    let (verdict, guard) = if settings.allow_private_network {
        (
            Verdict::Warn,
            "RTC_ALLOW_PRIVATE_NETWORK=1: tools, MCP servers and web fetches may reach private and loopback addresses",
        )
    } else if settings.outbound_allow != rtc_tools::net_guard::AddressPolicy::PublicOnly {
        (
            Verdict::Ok,
            "private addresses are refused but for those RTC_OUTBOUND_ALLOW lists",
        )
    } else {
        (
            Verdict::Ok,
            "private, loopback and link-local addresses are refused to tools, MCP and the web tools",
        )
    };
    r.line(verdict, "outbound guard", guard)?;
    match &settings.admin_token {
        Some(_) => r.line(Verdict::Ok, "admin token", "set by RTC_ADMIN_TOKEN")?,
        None => r.line(
            Verdict::Ok,
            "admin token",
            "generated on the first start and printed once (only its hash is kept)",
        )?,
    }
    Ok(if r.failed { Exit::Failed } else { Exit::Ok })
}

async fn database(r: &mut Report, settings: &Settings) -> anyhow::Result<()> {
    let shown = rtc_store::redact_url(&settings.database_url);
    // Nothing is decrypted here: any key opens the connection.
    let store = match Store::connect(
        &settings.database_url,
        SecretBox::new(&MasterKey::generate()),
    )
    .await
    {
        Ok(s) => s,
        Err(e) => return r.line(Verdict::Fail, "database", &format!("{shown}: {e}")),
    };
    let line = match store.ping().await {
        Err(e) => (Verdict::Fail, format!("{shown}: {e}")),
        Ok(()) => match store.schema_versions().await {
            Ok((applied, latest)) if applied == latest => (
                Verdict::Ok,
                format!("{shown} reachable; schema at {applied}, current"),
            ),
            Ok((applied, latest)) if applied < latest => (
                Verdict::Fail,
                format!(
                    "{shown} reachable; schema at {applied} of {latest}: run `rtc-agent migrate` (or start `serve`, which applies it)"
                ),
            ),
            Ok((applied, latest)) => (
                Verdict::Fail,
                format!(
                    "{shown}: schema at {applied}, newer than this binary's {latest}: upgrade rtc-agent"
                ),
            ),
            Err(e) => (Verdict::Fail, format!("{shown}: {e}")),
        },
    };
    store.close().await;
    r.line(line.0, "database", &line.1)
}

fn master_key(r: &mut Report, settings: &Settings) -> anyhow::Result<()> {
    if let Some(k) = &settings.master_key {
        return match MasterKey::parse(k) {
            Ok(_) => r.line(Verdict::Ok, "master key", "from RTC_MASTER_KEY"),
            Err(e) => r.line(Verdict::Fail, "master key", &format!("RTC_MASTER_KEY: {e}")),
        };
    }
    let path = settings.data_dir.join("master.key");
    if !path.exists() {
        return r.line(
            Verdict::Warn,
            "master key",
            &format!("{} does not exist yet: the first start creates it (keep a copy: secrets cannot be read without it)", path.display()),
        );
    }
    if let Some(mode) = loose_mode(&path)? {
        return r.line(
            Verdict::Fail,
            "master key",
            &format!(
                "{} is readable by others (mode {mode:o}): chmod 600 it",
                path.display()
            ),
        );
    }
    match std::fs::read_to_string(&path)
        .map_err(anyhow::Error::from)
        .and_then(|t| Ok(MasterKey::parse(&t)?))
    {
        Ok(_) => r.line(
            Verdict::Ok,
            "master key",
            &format!("{} (owner only)", path.display()),
        ),
        Err(e) => r.line(
            Verdict::Fail,
            "master key",
            &format!("{}: {e}", path.display()),
        ),
    }
}

/// The file's permission bits when group or others may use it.
#[cfg(unix)]
fn loose_mode(path: &Path) -> anyhow::Result<Option<u32>> {
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(path)?.permissions().mode() & 0o777;
    Ok((mode & 0o077 != 0).then_some(mode))
}

#[cfg(not(unix))]
fn loose_mode(_path: &Path) -> anyhow::Result<Option<u32>> {
    Ok(None)
}

async fn providers(r: &mut Report, settings: &Settings) -> anyhow::Result<()> {
    let mut all = vec![(
        rtc_runtime::DEFAULT_PROVIDER.to_owned(),
        true,
        crate::serve::provider(&settings.llm, Some(settings.small_model.clone()))?,
    )];
    for (name, p) in &settings.providers {
        all.push((
            name.clone(),
            false,
            crate::serve::provider(p, p.small_model.clone())?,
        ));
    }
    for (name, is_default, provider) in all {
        let info = rtc_runtime::describe_provider(&name, is_default, &provider);
        let what = format!("provider {name}");
        if let Some(problem) = &info.problem {
            r.line(
                Verdict::Fail,
                &what,
                &format!("{}: {problem}", info.base_url),
            )?;
            continue;
        }
        let check = rtc_runtime::check_provider(&name, &provider).await;
        match &check.error {
            None => r.line(
                Verdict::Ok,
                &what,
                &format!(
                    "{} answers with {} in {} ms",
                    info.base_url, check.model, check.latency_ms
                ),
            )?,
            Some(e) => r.line(
                Verdict::Fail,
                &what,
                &format!("{} ({}): {e}", info.base_url, check.model),
            )?,
        }
    }
    Ok(())
}

async fn web(r: &mut Report, settings: &Settings) -> anyhow::Result<()> {
    let policy = settings.address_policy();
    if settings.web.search_engines.is_empty() {
        r.line(
            Verdict::Ok,
            "web search",
            "no engine configured: webSearch is not offered",
        )?;
    }
    for engine in &settings.web.search_engines {
        let what = format!("search {}", engine.kind.as_str());
        let search = match WebSearch::new(
            std::slice::from_ref(engine),
            policy,
            settings.web.search_timeout,
        ) {
            Ok(s) => s,
            Err(e) => {
                r.line(Verdict::Fail, &what, &e.to_string())?;
                continue;
            }
        };
        let query = SearchQuery {
            query: "rtc-agent".into(),
            max_results: 1,
            time_range: None,
        };
        let started = std::time::Instant::now();
        match tokio::time::timeout(Duration::from_secs(30), search.search(&query)).await {
            Ok(Ok(found)) => r.line(
                Verdict::Ok,
                &what,
                &format!(
                    "answered {} result(s) in {} ms",
                    found.result_count,
                    started.elapsed().as_millis()
                ),
            )?,
            Ok(Err(e)) => r.line(Verdict::Fail, &what, &e.to_string())?,
            Err(_) => r.line(Verdict::Fail, &what, "no answer within 30 s")?,
        }
    }
    match &settings.web.fetch {
        Some(_) => r.line(Verdict::Ok, "web fetch", "enabled")?,
        None => r.line(
            Verdict::Ok,
            "web fetch",
            "disabled: webFetch is not offered",
        )?,
    }
    Ok(())
}

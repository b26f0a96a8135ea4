//! The `rtc-agent` binary: configuration, logging, and its commands:
//! `serve`, `migrate` (schema migrations, then the Tool Resource v4
//! migration when v3 data is pending), `backup`, `restore`, `import-v3`,
//! `chat` and `test` (conversation tests against a running server), and
//! `doctor` (checks the configuration, changes nothing).

mod chat;
mod config;
mod data;
mod doctor;
mod http;
mod limit_settings;
mod migrate;
mod serve;
mod telemetry;
mod test_cmd;
mod web_config;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::config::{Overrides, Settings};
use crate::data::Exit;

/// What `serve --help` adds: the model provider's settings.
const SERVE_HELP: &str = "\
Model provider (any OpenAI-compatible server), from the environment or the config file:
  RTC_LLM_BASE_URL        its base URL (default https://api.openai.com/v1)
  RTC_LLM_API_KEY         its API key (needed for OpenAI itself)
  RTC_LLM_MODEL           the default model (default gpt-4o-mini)
  RTC_SMALL_MODEL         the model of judges, `llm` leaves, page reading and summaries
  RTC_LLM_CONTEXT_WINDOW  the models' context window in tokens, when the table does not know them
More providers: [providers.NAME] tables in the config file (README, \"Configuration\").
`rtc-agent doctor` checks them; the server warns at start when one cannot work.";

#[derive(Parser)]
#[command(
    name = "rtc-agent",
    version,
    about = "Agent platform server for conversational assistants"
)]
struct Cli {
    /// Config file (TOML); every key can also be set by flag or environment.
    #[arg(long, env = "RTC_CONFIG", global = true)]
    config: Option<std::path::PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the server (migrations are applied first; refuses to start
    /// while v3 data waits for `migrate`).
    #[command(after_help = SERVE_HELP)]
    Serve(Overrides),
    /// Apply the schema migrations; then, when v3 data is pending, run the
    /// Tool Resource v4 migration (needs --backup or --create-backup).
    /// Exit 0 done, 1 failed (nothing changed), 2 refused.
    Migrate(migrate::MigrateArgs),
    /// Write the whole database to one file (exit 0 / 1).
    Backup(data::BackupArgs),
    /// Replace the whole database with a backup (exit 0, 1 failed, 2 refused).
    Restore(data::RestoreArgs),
    /// Store a v3 export as pending legacy documents of a workspace.
    #[command(name = "import-v3")]
    ImportV3(data::ImportArgs),
    /// Talk to an assistant in the terminal through a running server.
    Chat(chat::ChatArgs),
    /// Check the configuration: database, master key, model providers,
    /// web search engines, outbound guard; one line each, exit 1 on a failure.
    Doctor(Overrides),
    /// Run conversation tests through a running server (exit 1 when any
    /// test fails or cannot run).
    Test(test_cmd::TestArgs),
}

fn main() -> ExitCode {
    match run() {
        Ok(exit) => ExitCode::from(exit as u8),
        Err(e) => {
            // The causes, not a backtrace: these are the user's errors
            // (a bad setting, an unreachable server, a 404), and
            // `RUST_BACKTRACE` is for panics.
            eprintln!("Error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> anyhow::Result<Exit> {
    let cli = Cli::parse();
    let overrides = match &cli.command {
        Command::Chat(_) | Command::Test(_) => None,
        Command::Serve(o) | Command::Doctor(o) => Some(o.clone()),
        Command::Migrate(a) => Some(a.db.clone()),
        Command::Backup(a) => Some(a.db.clone()),
        Command::Restore(a) => Some(a.db.clone()),
        Command::ImportV3(a) => Some(a.db.clone()),
    };
    let Some(overrides) = overrides else {
        rtc_tools::init_tls();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        return match cli.command {
            Command::Chat(args) => runtime.block_on(chat::run(args)).map(|()| Exit::Ok),
            Command::Test(args) => runtime.block_on(test_cmd::run(args)),
            _ => Ok(Exit::Failed),
        };
    };
    let settings = Settings::load(cli.config.as_deref(), overrides)?;
    // TLS first: the trace exporter builds its HTTP client at once.
    rtc_tools::init_tls();
    let telemetry = config::init_tracing(&settings)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let exit = runtime.block_on(async {
        match cli.command {
            Command::Serve(_) => {
                serve::run(settings).await?;
                return Ok(Exit::Ok);
            }
            Command::Doctor(_) => return doctor::run(&settings).await,
            _ => {}
        }
        let store = serve::open_store(&settings).await?;
        let exit = match &cli.command {
            Command::Migrate(a) => migrate::run(&settings, &store, a).await,
            Command::Backup(a) => data::backup(&settings, &store, a).await,
            Command::Restore(a) => data::restore(&store, a).await,
            Command::ImportV3(a) => data::import_v3(&store, a).await,
            Command::Serve(_) | Command::Doctor(_) | Command::Chat(_) | Command::Test(_) => {
                Ok(Exit::Failed)
            }
        };
        store.close().await;
        exit
    });
    drop(runtime);
    telemetry.shutdown();
    exit
}

//! The `rtc-agent` binary: configuration, logging, and the `serve` and
//! `migrate` commands.

mod chat;
mod config;
mod http;
mod serve;
mod web_config;

use std::io::Write;

use clap::{Parser, Subcommand};

use crate::config::{Overrides, Settings};

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
    /// Run the server (migrations are applied first).
    Serve(Overrides),
    /// Apply database migrations and exit.
    Migrate(Overrides),
    /// Talk to an assistant in the terminal through a running server.
    Chat(chat::ChatArgs),
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let (overrides, serve) = match cli.command {
        Command::Serve(o) => (o, true),
        Command::Migrate(o) => (o, false),
        Command::Chat(args) => {
            rtc_tools::init_tls();
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            return runtime.block_on(chat::run(args));
        }
    };
    let settings = Settings::load(cli.config.as_deref(), overrides)?;
    config::init_tracing(&settings);
    rtc_tools::init_tls();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        if serve {
            serve::run(settings).await
        } else {
            let store = serve::open_store(&settings).await?;
            store.close().await;
            writeln!(
                std::io::stdout(),
                "migrations applied to {}",
                rtc_store::redact_url(&settings.database_url)
            )?;
            Ok(())
        }
    })
}

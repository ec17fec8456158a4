//! `weft`: one binary for the server (`up`, `serve`, `worker`, `migrate`, `admin`)
//! and the terminal client. Thin: parse flags, init logs, dispatch.

mod server;

use clap::{Parser, Subcommand};

use crate::server::{AdminCommand, ListenArgs, ServerArgs};

#[derive(Debug, Parser)]
#[command(name = "weft", version, about = "Weft: self-hosted AI agent chat — server, worker and terminal client", long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run everything in one process: gateway + worker (embedded SQLite unless URLs are given). Web UI on http://127.0.0.1:8900.
    Up {
        #[command(flatten)]
        server: ServerArgs,
        #[command(flatten)]
        listen: ListenArgs,
    },
    /// Run the HTTP/SSE gateway only (distributed mode: Postgres + Redis).
    Serve {
        #[command(flatten)]
        server: ServerArgs,
        #[command(flatten)]
        listen: ListenArgs,
    },
    /// Run a worker only (distributed mode: Postgres + Redis).
    Worker {
        #[command(flatten)]
        server: ServerArgs,
    },
    /// Apply database migrations and exit.
    Migrate {
        #[command(flatten)]
        server: ServerArgs,
    },
    /// Users and tokens, straight in the database.
    Admin {
        #[command(flatten)]
        server: ServerArgs,
        #[command(subcommand)]
        command: AdminCommand,
    },
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let Some(command) = cli.command else {
        eprintln!("the terminal client is not built yet; try `weft up` or `weft --help`");
        return std::process::ExitCode::from(2);
    };
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("tokio runtime");
    match runtime.block_on(run_server(command)) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("weft: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

async fn run_server(command: Command) -> anyhow::Result<()> {
    let log_format = std::env::var("WEFT_LOG_FORMAT").unwrap_or_default();
    weft_shared::telemetry::init(&log_format);
    match command {
        Command::Up { server, listen } => server::up(server::load_config(&server, Some(&listen), "127.0.0.1")?).await,
        Command::Serve { server, listen } => server::serve(server::load_config(&server, Some(&listen), "0.0.0.0")?).await,
        Command::Worker { server } => server::worker(server::load_config(&server, None, "0.0.0.0")?).await,
        Command::Migrate { server } => server::migrate(server::load_config(&server, None, "0.0.0.0")?).await,
        Command::Admin { server, command } => server::admin(server::load_config(&server, None, "0.0.0.0")?, command).await,
    }
}

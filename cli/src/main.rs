//! `weft`: one binary for the server (`up`, `serve`, `worker`, `migrate`, `admin`)
//! and the terminal client (`weft`, `weft -p`, `weft chat`, `login`, `sessions`,
//! `schedules`, `channels` …).
//! Thin: parse flags, then dispatch. Server commands get a multi-thread runtime and
//! telemetry; client commands go to `client.rs`, which initialises neither.

mod channels;
mod client;
mod schedules;
mod server;
mod update;

/// mimalloc instead of glibc's malloc: under the throughput load glibc's
/// `malloc`/`free` (with `malloc_consolidate` and arena locks) took ~17 % of
/// `weft up`'s CPU in `perf` profiles (issue 23); mimalloc's thread-local free
/// lists make the many small, short-lived allocations of the run path cheap.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use clap::{Parser, Subcommand};
use weft_shared::telemetry::{Process, Telemetry};

use crate::client::{
    ChatArgs, ClientCommand, ConnectArgs, KnowledgeCommand, OneShotArgs, SessionsCommand,
};
use crate::server::{AdminCommand, ListenArgs, MetricsArgs, ServerArgs};

#[derive(Debug, Parser)]
#[command(
    name = "weft",
    version,
    about = "Weft: self-hosted AI agent chat — server, worker and terminal client",
    long_about = None,
    args_conflicts_with_subcommands = true,
    after_help = "Examples:\n  weft                         interactive chat (REPL)\n  weft -p \"summarise this\"     one-shot: print the reply and exit\n  git diff | weft -p \"review\"  piped text follows the prompt\n  weft -p \"what is this?\" -f shot.png -f report.pdf\n                               send files with the message (images, PDF, Office, text)\n  weft -r last                 resume the most recent session\n  weft up                      run a local server (and log this client in)"
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    /// Send PROMPT, print the reply and exit (one-shot).
    #[arg(
        short = 'p',
        long = "print",
        value_name = "PROMPT",
        conflicts_with = "prompt"
    )]
    print: Option<String>,
    /// A message to send one-shot (same as -p). Without one (and without piped stdin) the REPL starts.
    #[arg(value_name = "PROMPT")]
    prompt: Option<String>,
    #[command(flatten)]
    chat: ChatArgs,
    #[command(flatten)]
    oneshot: OneShotArgs,
    #[command(flatten)]
    connect: ConnectArgs,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run everything in one process: gateway + worker (embedded SQLite unless URLs are given). Web UI on http://127.0.0.1:8900.
    Up {
        #[command(flatten)]
        server: ServerArgs,
        #[command(flatten)]
        listen: ListenArgs,
        #[command(flatten)]
        metrics: MetricsArgs,
    },
    /// Run the HTTP/SSE gateway only (distributed mode: Postgres + Redis).
    Serve {
        #[command(flatten)]
        server: ServerArgs,
        #[command(flatten)]
        listen: ListenArgs,
        #[command(flatten)]
        metrics: MetricsArgs,
    },
    /// Run a worker only (distributed mode: Postgres + Redis).
    Worker {
        #[command(flatten)]
        server: ServerArgs,
        #[command(flatten)]
        metrics: MetricsArgs,
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
    /// Interactive chat with a gateway (the same as `weft` with no prompt).
    Chat {
        #[command(flatten)]
        chat: ChatArgs,
        #[command(flatten)]
        connect: ConnectArgs,
    },
    /// Sign in to a gateway and store it with an API token in ~/.config/weft/config.toml (mode 0600).
    Login {
        /// Username (asked for when missing).
        #[arg(long)]
        username: Option<String>,
        /// Read the password from stdin instead of the terminal.
        #[arg(long)]
        password_stdin: bool,
        #[command(flatten)]
        connect: ConnectArgs,
    },
    /// Revoke the stored token and forget it.
    Logout {
        #[command(flatten)]
        connect: ConnectArgs,
    },
    /// List, show or delete your sessions.
    Sessions {
        #[command(subcommand)]
        command: SessionsCommand,
        #[command(flatten)]
        connect: ConnectArgs,
    },
    /// Knowledge bases: list, create, add files and folders, search, remove.
    Knowledge {
        #[command(subcommand)]
        command: KnowledgeCommand,
        #[command(flatten)]
        connect: ConnectArgs,
    },
    /// Prompts an agent runs on its own — cron, every so long, or once — in
    /// your timezone: list (the default), add, pause, resume, rename, deliver,
    /// rm, run now, fires.
    #[command(after_help = schedules::EXAMPLES)]
    Schedules {
        #[command(subcommand)]
        command: Option<schedules::SchedulesCommand>,
        #[command(flatten)]
        connect: ConnectArgs,
    },
    /// Where your schedules' notifications go besides the inbox — a signed
    /// webhook, an email address, Lark: list (the default), add, rename, rm,
    /// test, deliveries.
    #[command(after_help = channels::EXAMPLES)]
    Channels {
        #[command(subcommand)]
        command: Option<channels::ChannelsCommand>,
        #[command(flatten)]
        connect: ConnectArgs,
    },
    /// The models the gateway offers.
    Models {
        #[command(flatten)]
        connect: ConnectArgs,
    },
    /// The agents you may choose (`weft --agent ID`), with their models and
    /// knowledge bases.
    Agents {
        #[command(flatten)]
        connect: ConnectArgs,
    },
    /// The skills agents may load.
    Skills {
        #[command(flatten)]
        connect: ConnectArgs,
    },
    /// Update this binary to the latest signed release, or roll it back.
    #[command(after_help = update::after_help())]
    Update(update::UpdateArgs),
    /// Read a document from stdin and print its text: how Weft reads every
    /// untrusted file (uploads, Lark files, web_fetch pages), one limited child
    /// process per file. Exit 0: the text; 65: why it cannot be read.
    #[command(
        after_help = "Example:\n  weft extract pdf < report.pdf\n\nThe limits are set on this process before it reads a byte; a file that\nneeds more is killed by the kernel, never the server that started it."
    )]
    Extract {
        /// What the bytes are: pdf, docx, xlsx, pptx, text, or html (to Markdown).
        #[arg(value_parser = parse_job)]
        kind: weft_files::Job,
        /// CPU seconds it may use (the server also kills it after as many seconds of wall clock).
        #[arg(long, default_value_t = 20)]
        cpu_secs: u64,
        /// Address space it may use, in bytes.
        #[arg(long, default_value_t = 1 << 30)]
        memory_bytes: u64,
    },
}

fn parse_job(arg: &str) -> Result<weft_files::Job, String> {
    weft_files::Job::parse(arg)
        .ok_or_else(|| "expected one of pdf, docx, xlsx, pptx, text, html".to_owned())
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let (connect, command) = match cli.command {
        None => (
            cli.connect,
            ClientCommand::Talk {
                prompt: cli.print.or(cli.prompt),
                chat: cli.chat,
                oneshot: cli.oneshot,
            },
        ),
        Some(Command::Chat { chat, connect }) => (
            connect,
            ClientCommand::Talk {
                prompt: None,
                chat,
                oneshot: OneShotArgs::default(),
            },
        ),
        Some(Command::Login {
            username,
            password_stdin,
            connect,
        }) => (
            connect,
            ClientCommand::Login {
                username,
                password_stdin,
            },
        ),
        Some(Command::Logout { connect }) => (connect, ClientCommand::Logout),
        Some(Command::Sessions { command, connect }) => (connect, ClientCommand::Sessions(command)),
        Some(Command::Schedules { command, connect }) => {
            (connect, ClientCommand::Schedules(command))
        }
        Some(Command::Channels { command, connect }) => (connect, ClientCommand::Channels(command)),
        Some(Command::Models { connect }) => (connect, ClientCommand::Models),
        Some(Command::Agents { connect }) => (connect, ClientCommand::Agents),
        Some(Command::Skills { connect }) => (connect, ClientCommand::Skills),
        Some(Command::Knowledge { command, connect }) => {
            (connect, ClientCommand::Knowledge(command))
        }
        // No runtime, no config, no logging: a child that reads one file and exits.
        Some(Command::Extract {
            kind,
            cpu_secs,
            memory_bytes,
        }) => {
            let limits = weft_files::Limits {
                timeout: std::time::Duration::from_secs(cpu_secs),
                memory_bytes,
            };
            return weft_files::isolate::serve_child(kind, limits);
        }
        // Its own: no gateway, no config beyond `[update]`, its own runtime.
        Some(Command::Update(args)) => return std::process::ExitCode::from(update::run(args)),
        Some(server_command) => return run_server_command(server_command),
    };
    std::process::ExitCode::from(client::run(connect, command))
}

fn run_server_command(command: Command) -> std::process::ExitCode {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let mut telemetry = None;
    let result = runtime.block_on(run_server(command, &mut telemetry));
    // After the drain, while the runtime (the gRPC exporter's connection) still runs.
    if let Some(telemetry) = telemetry {
        telemetry.shutdown();
    }
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("weft: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// Loads the configuration, then starts logging (and trace export) as it says
/// (`log_format` may come from `weft.toml`, so logging cannot start earlier).
fn configured(
    server: &ServerArgs,
    listen: Option<&ListenArgs>,
    metrics: Option<&MetricsArgs>,
    default_host: &str,
    process: Process,
    telemetry: &mut Option<Telemetry>,
) -> anyhow::Result<weft_config::LiveConfig> {
    let live = server::load_config(server, listen, metrics, default_host)?;
    *telemetry = Some(weft_shared::telemetry::init(
        &live.get().log_format,
        process,
    )?);
    Ok(live)
}

async fn run_server(command: Command, telemetry: &mut Option<Telemetry>) -> anyhow::Result<()> {
    let t = telemetry;
    match command {
        Command::Up {
            server,
            listen,
            metrics,
        } => {
            let live = configured(
                &server,
                Some(&listen),
                Some(&metrics),
                "127.0.0.1",
                Process::Up,
                t,
            )?;
            server::up(live).await
        }
        Command::Serve {
            server,
            listen,
            metrics,
        } => {
            let live = configured(
                &server,
                Some(&listen),
                Some(&metrics),
                "0.0.0.0",
                Process::Gateway,
                t,
            )?;
            server::serve(live).await
        }
        Command::Worker { server, metrics } => {
            let live = configured(&server, None, Some(&metrics), "0.0.0.0", Process::Worker, t)?;
            server::worker(live).await
        }
        Command::Migrate { server } => {
            let live = configured(&server, None, None, "0.0.0.0", Process::Command, t)?;
            server::migrate((*live.get()).clone()).await
        }
        Command::Admin { server, command } => {
            let live = configured(&server, None, None, "0.0.0.0", Process::Command, t)?;
            server::admin(live, command).await
        }
        Command::Chat { .. }
        | Command::Login { .. }
        | Command::Logout { .. }
        | Command::Sessions { .. }
        | Command::Knowledge { .. }
        | Command::Schedules { .. }
        | Command::Channels { .. }
        | Command::Models { .. }
        | Command::Agents { .. }
        | Command::Skills { .. }
        | Command::Extract { .. }
        | Command::Update(_) => unreachable!("client commands are dispatched in main"),
    }
}

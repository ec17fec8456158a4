//! Client-side flags and dispatch: the REPL, one-shot sends and the account and
//! session commands (`weft schedules` has its own file, `schedules.rs`). Runs on a current-thread tokio runtime (the REPL gets one
//! worker thread) and never touches server code, so start-up stays cheap.

use std::io::{IsTerminal, Read};
use std::path::PathBuf;

use clap::{Args, Subcommand, ValueEnum};
use weft_client::attach::{self, LocalFile};
use weft_client::oneshot::{OneShot, Output};
use weft_client::repl::ReplOptions;
use weft_client::session::SessionChoice;
use weft_client::{ClientError, api::Gateway, commands, config};

/// Which gateway to talk to and as whom.
#[derive(Debug, Clone, Default, Args)]
pub struct ConnectArgs {
    /// Gateway URL, e.g. https://weft.example.com (default: the config file, else http://127.0.0.1:8900).
    #[arg(long, env = "WEFT_GATEWAY", value_name = "URL")]
    pub gateway: Option<String>,
    /// API token (default: the one stored by `weft login` or `weft up` for that gateway).
    #[arg(long, env = "WEFT_TOKEN", value_name = "TOKEN", hide_env_values = true)]
    pub token: Option<String>,
}

/// Which session and how to talk in it.
#[derive(Debug, Clone, Default, Args)]
pub struct ChatArgs {
    /// Continue this session (full id or a unique suffix of it).
    #[arg(
        short = 's',
        long = "session",
        value_name = "ID",
        conflicts_with = "resume"
    )]
    pub session: Option<String>,
    /// Resume `last` (the most recently used session) or a session id.
    #[arg(short = 'r', long = "resume", value_name = "last|ID")]
    pub resume: Option<String>,
    /// Model id for this message/session (`weft models` lists them).
    #[arg(short = 'm', long, value_name = "ID")]
    pub model: Option<String>,
    /// The agent for this session (`weft agents` lists them), e.g. `agent` or
    /// `chat`; `--mode` is its older name.
    #[arg(long = "agent", visible_alias = "mode", value_name = "ID")]
    pub agent: Option<String>,
    /// Attach a file to the message (repeatable): images (PNG, JPEG, GIF, WebP) or
    /// documents (PDF, DOCX, XLSX, PPTX, text, Markdown, CSV, JSON, code). In the
    /// REPL the files go with the first message; `/attach PATH` adds more there.
    #[arg(short = 'f', long = "file", value_name = "PATH")]
    pub files: Vec<PathBuf>,
}

impl ChatArgs {
    fn session_choice(&self) -> SessionChoice {
        match (&self.session, &self.resume) {
            (Some(id), _) => SessionChoice::Id(id.clone()),
            (None, Some(r)) => SessionChoice::from_resume(r),
            (None, None) => SessionChoice::New,
        }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    /// The reply on stdout, nothing else.
    #[default]
    Text,
    /// One JSON object: session_id, run_id, response, tool_calls, model, usage, duration_ms.
    Json,
}

/// One-shot flags (ignored by the REPL).
#[derive(Debug, Clone, Default, Args)]
pub struct OneShotArgs {
    /// Output format of a one-shot reply.
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    pub output: OutputFormat,
    /// Write the reply as it arrives (default).
    #[arg(long, overrides_with = "no_stream")]
    pub stream: bool,
    /// Write the reply once the run is over.
    #[arg(long, overrides_with = "stream")]
    pub no_stream: bool,
    /// Print tool activity to stderr.
    #[arg(long)]
    pub print_tools: bool,
    /// Tool calls that need a person's yes: `never` cancels the run and exits 1
    /// (nobody is there to answer), `auto` approves them all.
    #[arg(long, value_enum, default_value_t = ApproveMode::Never)]
    pub approve: ApproveMode,
    /// Questions the agent asks (`ask_user`): `never` says what was asked,
    /// cancels the run and exits 1 (nobody is there to answer), `auto` picks
    /// the first option.
    #[arg(long, value_enum, default_value_t = AnswerArg::Never)]
    pub answer: AnswerArg,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum AnswerArg {
    #[default]
    Never,
    Auto,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum ApproveMode {
    #[default]
    Never,
    Auto,
}

#[derive(Debug, Subcommand)]
pub enum SessionsCommand {
    /// Your sessions, most recently used first.
    List {
        /// How many to show (1–100).
        #[arg(long, default_value_t = 30)]
        limit: u32,
    },
    /// A session's recent messages.
    Show {
        /// Session id (or a unique suffix).
        id: String,
        /// How many messages (1–100).
        #[arg(long, default_value_t = 50)]
        limit: u32,
    },
    /// Delete a session and its messages.
    Delete {
        /// Session id (or a unique suffix).
        id: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum KnowledgeCommand {
    /// The knowledge bases you may search: yours and the shared ones.
    List,
    /// Make a knowledge base (private unless --shared, which is for admins).
    Create {
        /// 1–64 letters, digits, spaces, '-', '_' or '.'.
        name: String,
        #[arg(long, default_value = "")]
        description: String,
        /// Every user may search it (admins only).
        #[arg(long)]
        shared: bool,
    },
    /// Add files, and every file in folders, then wait until each is indexed.
    Add {
        name: String,
        /// Files and folders (folders are walked; hidden entries are skipped).
        #[arg(required = true)]
        paths: Vec<std::path::PathBuf>,
        /// Return once uploaded, without waiting for the indexing.
        #[arg(long)]
        no_wait: bool,
    },
    /// The documents of a base, with their status.
    Docs { name: String },
    /// Search a base: numbered passages with their document and page or section.
    Search {
        name: String,
        query: String,
        /// How many passages (1–50).
        #[arg(long)]
        top_k: Option<u32>,
    },
    /// Delete a base, or one of its documents (by id or name).
    Rm {
        name: String,
        document: Option<String>,
    },
}

/// What a client invocation asks for.
pub enum ClientCommand {
    Talk {
        prompt: Option<String>,
        chat: ChatArgs,
        oneshot: OneShotArgs,
    },
    Login {
        username: Option<String>,
        password_stdin: bool,
    },
    Logout,
    Sessions(SessionsCommand),
    Knowledge(KnowledgeCommand),
    /// `weft schedules` alone lists them.
    Schedules(Option<crate::schedules::SchedulesCommand>),
    /// `weft channels` alone lists them.
    Channels(Option<crate::channels::ChannelsCommand>),
    Models,
    Agents,
    Skills,
}

fn runtime(multi: bool) -> Result<tokio::runtime::Runtime, ClientError> {
    let mut b = if multi {
        let mut b = tokio::runtime::Builder::new_multi_thread();
        b.worker_threads(1);
        b
    } else {
        tokio::runtime::Builder::new_current_thread()
    };
    b.enable_all()
        .build()
        .map_err(|e| ClientError::Local(format!("tokio runtime: {e}")))
}

/// Run a client command; the answer is the process exit code.
pub fn run(connect: ConnectArgs, cmd: ClientCommand) -> u8 {
    match dispatch(connect, cmd) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("weft: {e}");
            e.exit_code()
        }
    }
}

fn dispatch(connect: ConnectArgs, cmd: ClientCommand) -> Result<u8, ClientError> {
    let conn = config::resolve(connect.gateway.as_deref(), connect.token.as_deref())?;
    let gw = Gateway::new(conn)?;
    let ok = |r: Result<(), ClientError>| r.map(|()| weft_client::exit::OK);
    match cmd {
        ClientCommand::Talk {
            prompt,
            chat,
            oneshot,
        } => talk(&gw, prompt, chat, oneshot),
        ClientCommand::Login {
            username,
            password_stdin,
        } => {
            let args = commands::LoginArgs {
                token: connect.token,
                username,
                password_stdin,
            };
            ok(runtime(false)?.block_on(commands::login(&gw, args)))
        }
        ClientCommand::Logout => ok(runtime(false)?.block_on(commands::logout(&gw))),
        ClientCommand::Models => ok(runtime(false)?.block_on(commands::models(&gw))),
        ClientCommand::Agents => ok(runtime(false)?.block_on(commands::agents(&gw))),
        ClientCommand::Skills => ok(runtime(false)?.block_on(commands::skills(&gw))),
        ClientCommand::Schedules(c) => runtime(false)?.block_on(crate::schedules::run(&gw, c)),
        ClientCommand::Channels(c) => runtime(false)?.block_on(crate::channels::run(&gw, c)),
        ClientCommand::Knowledge(c) => runtime(false)?.block_on(async {
            use weft_client::knowledge as kb;
            match c {
                KnowledgeCommand::List => kb::list(&gw).await.map(|()| true),
                KnowledgeCommand::Create {
                    name,
                    description,
                    shared,
                } => kb::create(&gw, &name, &description, shared)
                    .await
                    .map(|()| true),
                KnowledgeCommand::Add {
                    name,
                    paths,
                    no_wait,
                } => kb::add(&gw, &name, &paths, no_wait).await,
                KnowledgeCommand::Docs { name } => kb::documents(&gw, &name).await.map(|()| true),
                KnowledgeCommand::Search { name, query, top_k } => {
                    kb::search(&gw, &name, &query, top_k).await.map(|()| true)
                }
                KnowledgeCommand::Rm { name, document } => {
                    kb::remove(&gw, &name, document.as_deref())
                        .await
                        .map(|()| true)
                }
            }
            .map(|all| {
                if all {
                    weft_client::exit::OK
                } else {
                    weft_client::exit::RUN_FAILED
                }
            })
        }),
        ClientCommand::Sessions(c) => ok(runtime(false)?.block_on(async {
            match c {
                SessionsCommand::List { limit } => commands::sessions_list(&gw, limit).await,
                SessionsCommand::Show { id, limit } => {
                    commands::sessions_show(&gw, &id, limit).await
                }
                SessionsCommand::Delete { id } => commands::sessions_delete(&gw, &id).await,
            }
        })),
    }
}

fn talk(
    gw: &Gateway,
    prompt: Option<String>,
    chat: ChatArgs,
    oneshot: OneShotArgs,
) -> Result<u8, ClientError> {
    // Every file is checked before stdin is read or anything is sent.
    let files = chat
        .files
        .iter()
        .map(|p| LocalFile::open(p))
        .collect::<Result<Vec<_>, _>>()?;
    let stdin_piped = !std::io::stdin().is_terminal();
    let text = match (prompt, stdin_piped) {
        (Some(p), true) => Some(with_piped_input(p, read_stdin()?)),
        (Some(p), false) => Some(p),
        (None, true) => Some(read_stdin()?),
        (None, false) => None,
    };
    let Some(text) = text else {
        let opts = ReplOptions {
            session: chat.session_choice(),
            model: chat.model,
            agent: chat.agent,
            files,
        };
        return weft_client::repl::run(&runtime(true)?, gw, opts);
    };
    if text.trim().is_empty() && files.is_empty() {
        return Err(ClientError::Usage("nothing to send: the prompt is empty (give -p TEXT, a positional TEXT, or pipe text in)".into()));
    }
    let job = OneShot {
        text,
        files,
        session: chat.session_choice(),
        model: chat.model,
        agent: chat.agent,
        output: match oneshot.output {
            OutputFormat::Text => Output::Text,
            OutputFormat::Json => Output::Json,
        },
        stream: !oneshot.no_stream,
        print_tools: oneshot.print_tools,
        approve: match oneshot.approve {
            ApproveMode::Never => weft_client::oneshot::Approve::Never,
            ApproveMode::Auto => weft_client::oneshot::Approve::Auto,
        },
        answer: match oneshot.answer {
            AnswerArg::Never => weft_client::oneshot::AnswerMode::Never,
            AnswerArg::Auto => weft_client::oneshot::AnswerMode::Auto,
        },
    };
    runtime(false)?.block_on(weft_client::oneshot::run(gw, job))
}

/// Piped text; binary data (an image, say) is refused with a pointer to `-f`.
fn read_stdin() -> Result<String, ClientError> {
    let mut bytes = Vec::new();
    std::io::stdin()
        .read_to_end(&mut bytes)
        .map_err(|e| ClientError::Usage(format!("reading stdin: {e}")))?;
    attach::stdin_text(bytes)
}

/// `git diff | weft -p "review this"`: the prompt, then the piped text.
fn with_piped_input(prompt: String, piped: String) -> String {
    if piped.trim().is_empty() {
        prompt
    } else {
        format!("{prompt}\n\n{}", piped.trim_end())
    }
}

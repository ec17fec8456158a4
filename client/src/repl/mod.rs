//! The interactive REPL (`weft`, `weft chat`): a line editor with history across
//! runs, slash commands, and streamed, rendered replies.
//!
//! The editor blocks the main thread while a person types; the async side (HTTP
//! connections kept alive in the pool) runs on a one-worker tokio runtime so the
//! pool notices closed connections meanwhile. Each turn is `block_on`.

pub mod attachments;
pub mod commands;
pub mod display;
pub mod helper;
pub mod memory;
pub mod pager;
pub mod state;
pub mod turn;

use rustyline::error::ReadlineError;
use rustyline::history::FileHistory;
use rustyline::{Config, Editor};

use crate::api::Gateway;
use crate::attach::LocalFile;
use crate::error::{ClientError, Result};
use crate::exit;
use crate::render::{DIM, RESET};
use crate::session::{self, SessionChoice};
use commands::Flow;
use helper::ReplHelper;
use state::ReplState;

pub const PROMPT: &str = "❯ ";

#[derive(Debug, Clone)]
pub struct ReplOptions {
    pub session: SessionChoice,
    pub model: Option<String>,
    pub agent: Option<String>,
    /// `-f` files: they go with the first message.
    pub files: Vec<LocalFile>,
}

/// Run until `/exit` or Ctrl-D; the answer is the exit code.
pub fn run(rt: &tokio::runtime::Runtime, gw: &Gateway, opts: ReplOptions) -> Result<u8> {
    let (mut state, streaming) = rt.block_on(start(gw, &opts))?;
    state.pending = opts.files;
    let mut rl: Editor<ReplHelper, FileHistory> = Editor::with_config(
        Config::builder()
            .max_history_size(2000)
            .map_err(|e| ClientError::Local(e.to_string()))?
            .auto_add_history(false)
            .build(),
    )
    .map_err(|e| ClientError::Local(e.to_string()))?;
    rl.set_helper(Some(ReplHelper {
        models: state.models.iter().map(|m| m.id.clone()).collect(),
        agents: state.agents.iter().map(|a| a.id.clone()).collect(),
        ..ReplHelper::default()
    }));
    let history = crate::config::state_dir().map(|d| d.join("history"));
    if let Some(h) = &history {
        let _ = std::fs::create_dir_all(h.parent().expect("has a parent"));
        let _ = rl.load_history(h);
    }
    println!("{}", state.status_line(gw));
    println!(
        "{DIM}/help for commands · \\ at line end continues · Ctrl-C stops a reply · Ctrl-D quits{RESET}"
    );
    if let Some(run) = streaming
        && let Err(e) = rt.block_on(turn::follow_active(gw, &mut state, &run))
    {
        eprintln!("weft: {e}");
    }
    loop {
        match rl.readline(&state.prompt()) {
            Ok(line) => {
                let text = helper::message_text(&line);
                if text.is_empty() {
                    continue;
                }
                let _ = rl.add_history_entry(line.as_str());
                if let Some(h) = &history {
                    let _ = rl.append_history(h);
                }
                let result = if text.starts_with('/') && !text.contains('\n') {
                    rt.block_on(commands::run(gw, &mut state, &text))
                } else {
                    rt.block_on(turn::run(gw, &mut state, text))
                        .map(|()| Flow::Continue)
                };
                match result {
                    Ok(Flow::Exit) => break,
                    Ok(Flow::Continue) => {}
                    Err(e) => eprintln!("weft: {e}"),
                }
            }
            Err(ReadlineError::Interrupted) => println!("{DIM}(Ctrl-D or /exit to quit){RESET}"),
            Err(ReadlineError::Eof) => break,
            Err(e) => return Err(ClientError::Local(format!("line editor: {e}"))),
        }
    }
    Ok(exit::OK)
}

/// Check the connection (so a bad token fails fast, exit 3), load the catalogue,
/// and pick the session; with it, the run streaming in it (from another client)
/// if there is one.
async fn start(gw: &Gateway, opts: &ReplOptions) -> Result<(ReplState, Option<String>)> {
    let (models, agents) = tokio::try_join!(gw.models(), gw.agents())?;
    let mut state = ReplState::new(models.models, agents.agents);
    let mut streaming = None;
    if opts.session != SessionChoice::New {
        let s = session::open(gw, &opts.session, None, None).await?;
        state.adopt(&s);
        streaming = s.active_run_id.clone();
    }
    if let Some(m) = &opts.model {
        if !state.models.iter().any(|x| &x.id == m) {
            return Err(ClientError::Usage(format!(
                "unknown model {m:?}; `weft models` lists them"
            )));
        }
        state.model = Some(m.clone());
    }
    if let Some(a) = &opts.agent {
        if !state.agents.iter().any(|x| &x.id == a) {
            return Err(ClientError::Usage(format!("unknown agent {a:?}")));
        }
        state.agent = a.clone();
    }
    if opts.model.is_some() || opts.agent.is_some() {
        state.sync_session(gw).await?;
    }
    Ok((state, streaming))
}

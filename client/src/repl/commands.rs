//! Slash commands: `/sessions`, `/resume ID`, `/new`, `/model [ID]`, `/agent [ID]`,
//! `/undo`, `/redo`, `/retry`, `/edit TEXT`, `/compact`, `/attach PATH`, `/detach`,
//! `/stop`, `/think`, `/todo`, `/status`, `/mcp`, `/memory`, `/help`, `/exit`.

use super::state::ReplState;
use crate::api::Gateway;
use crate::error::Result;
use crate::render::{DIM, RESET, YELLOW};
use crate::session::{self, SessionChoice, short};

/// Names and one-line help, also used for Tab completion.
pub const COMMANDS: &[(&str, &str)] = &[
    ("/sessions", "list your recent sessions"),
    (
        "/resume",
        "ID|last — continue a session (a unique suffix of its id is enough), following a reply still streaming in it",
    ),
    (
        "/new",
        "start a new session (keeps the current agent and model)",
    ),
    ("/model", "[ID] — show or switch the model"),
    (
        "/agent",
        "[ID] — show or switch the agent (/mode is the older name)",
    ),
    ("/undo", "remove the last turn from the conversation"),
    ("/redo", "bring back the turn undone last"),
    (
        "/retry",
        "answer the last message again (the old reply stays an alternative)",
    ),
    (
        "/edit",
        "TEXT — replace your last message and answer it again",
    ),
    (
        "/compact",
        "summarise the older turns before the next reply",
    ),
    (
        "/attach",
        "PATH… — files (images, PDF, Office, text) for your next message; alone: list",
    ),
    (
        "/detach",
        "[N|NAME] — drop the attached files, or one of them",
    ),
    ("/stop", "cancel the session's active run"),
    ("/think", "show the last reply's thinking in full"),
    ("/todo", "the agent's todo list for this conversation"),
    (
        "/plan",
        "TASK: plan first — read-only research, then a plan to approve, reject or edit",
    ),
    ("/status", "show the status line"),
    ("/mcp", "the MCP servers and their tools (admins)"),
    (
        "/memory",
        "what I remember about you; forget N, search TEXT, off, on",
    ),
    ("/help", "this list"),
    ("/exit", "quit (Ctrl-D works too)"),
];

pub enum Flow {
    Continue,
    Exit,
}

pub async fn run(gw: &Gateway, state: &mut ReplState, line: &str) -> Result<Flow> {
    let (cmd, arg) = line
        .split_once(char::is_whitespace)
        .map_or((line, ""), |(c, a)| (c, a.trim()));
    match cmd {
        "/exit" | "/quit" => return Ok(Flow::Exit),
        "/help" | "/?" => {
            for (name, help) in COMMANDS {
                println!("  {YELLOW}{name:<10}{RESET} {help}");
            }
            println!(
                "  {DIM}Enter sends · end a line with \\ for a new line · Ctrl-C stops a reply · Ctrl-D quits{RESET}"
            );
        }
        "/skills" => {
            let list = gw.skills().await?.skills;
            if list.is_empty() {
                println!(
                    "{DIM}no skills (add folders with a SKILL.md to skills_dir, or upload one){RESET}"
                );
            }
            for s in list {
                println!("  {YELLOW}{:<16}{RESET} {}", s.name, s.description);
            }
        }
        "/mcp" => match gw.mcp().await {
            Ok(list) => print_mcp(&list),
            Err(crate::error::ClientError::Api { status: 403, .. }) => {
                println!("only admins can see the MCP servers")
            }
            Err(e) => return Err(e),
        },
        "/memory" => super::memory::run(gw, state, arg).await?,
        "/plan" if arg.is_empty() => println!(
            "{DIM}/plan TASK: the agent researches with read-only tools and proposes a plan; nothing is done before you approve it{RESET}"
        ),
        "/plan" => super::turn::plan(gw, state, arg.to_string()).await?,
        "/todo" => match &state.session_id {
            None => println!("{DIM}no conversation yet{RESET}"),
            Some(id) => {
                state.todos = gw.todos(id).await?.items;
                if state.todos.is_empty() {
                    println!("{DIM}no todo list in this conversation{RESET}");
                } else {
                    println!("{}", crate::render::todo_progress(&state.todos));
                    println!("{}", crate::render::todo_list(&state.todos));
                }
            }
        },
        "/attach" => super::attachments::attach(state, arg),
        "/detach" => super::attachments::detach(state, arg),
        "/new" => {
            state.session_id = None;
            state.last = None;
            println!("{DIM}new session (agent {}){RESET}", state.agent);
        }
        "/sessions" => {
            for s in gw.sessions(20).await?.sessions {
                let mark = if state.session_id.as_deref() == Some(s.id.as_str()) {
                    "▸"
                } else {
                    " "
                };
                let title = if s.title.is_empty() {
                    "(untitled)"
                } else {
                    s.title.as_str()
                };
                println!(
                    "{mark} {YELLOW}{}{RESET}  {DIM}{}  {}{RESET}  {title}",
                    short(&s.id),
                    s.updated_at.get(..16).unwrap_or(&s.updated_at),
                    s.model
                );
            }
        }
        "/resume" => {
            let s = session::open(gw, &SessionChoice::from_resume(arg), None, None).await?;
            state.adopt(&s);
            // For the status line; a gateway without the route shows none.
            state.todos = gw.todos(&s.id).await.map(|l| l.items).unwrap_or_default();
            let title = if s.title.is_empty() {
                "(untitled)"
            } else {
                s.title.as_str()
            };
            println!("{DIM}resumed {} · {title}{RESET}", short(&s.id));
            for m in gw
                .messages(&s.id, 4)
                .await?
                .messages
                .iter()
                .filter(|m| m.role != "tool")
            {
                println!(
                    "{DIM}{}: {}{RESET}",
                    m.role,
                    crate::render::truncate(
                        &m.content,
                        crate::render::term_width().saturating_sub(12)
                    )
                );
                for a in &m.attachments {
                    println!("{DIM}  {}{RESET}", crate::render::attachment_line(a));
                }
            }
            if let Some(run) = &s.active_run_id {
                super::turn::follow_active(gw, state, run).await?;
            }
        }
        "/model" if arg.is_empty() => {
            println!("model {}", state.current_model());
            for m in &state.models {
                println!(
                    "  {DIM}{}{}{RESET}",
                    m.id,
                    if m.default { " (default)" } else { "" }
                );
            }
        }
        "/model" => match state.models.iter().find(|m| m.id == arg) {
            Some(m) => {
                state.model = Some(m.id.clone());
                state.sync_session(gw).await?;
                println!("{DIM}model {}{RESET}", m.id);
            }
            None => println!(
                "unknown model {arg:?}; keeping {} (`/model` lists them)",
                state.current_model()
            ),
        },
        "/mode" | "/agent" if arg.is_empty() => {
            println!("agent {}", state.agent);
            for a in &state.agents {
                println!("  {DIM}{:<8} {}{RESET}", a.id, a.description);
            }
        }
        "/mode" | "/agent" => match state.agents.iter().find(|a| a.id == arg) {
            Some(a) => {
                state.agent = a.id.clone();
                state.sync_session(gw).await?;
                println!("{DIM}agent {}{RESET}", a.id);
            }
            None => println!("unknown agent {arg:?}; keeping {}", state.agent),
        },
        "/undo" | "/redo" | "/retry" | "/edit" | "/compact" => {
            let Some(session) = state.session_id.clone() else {
                println!("{DIM}no conversation yet{RESET}");
                return Ok(Flow::Continue);
            };
            let started = match cmd {
                "/undo" | "/redo" => gw.turn(&session, &cmd[1..]).await.map(|_| None),
                "/retry" => gw
                    .turn(&session, "regenerate")
                    .await
                    .map(|t| Some(t.run_id)),
                "/edit" if arg.is_empty() => {
                    println!("usage: /edit TEXT");
                    return Ok(Flow::Continue);
                }
                "/edit" => gw.edit(&session, arg).await.map(|t| Some(t.run_id)),
                _ => gw.compact(&session).await.map(|_| None),
            };
            match started {
                Ok(Some(run)) => super::turn::attach(gw, state, &run).await?,
                Ok(None) => println!(
                    "{DIM}{}{RESET}",
                    match cmd {
                        "/undo" =>
                            "undone: the last turn is out of the conversation (/redo brings it back)",
                        "/redo" => "redone: the turn is back",
                        _ => "the older turns will be summarised before the next reply",
                    }
                ),
                Err(crate::error::ClientError::Api {
                    status: 409,
                    message,
                    ..
                }) => {
                    println!("{DIM}{message}{RESET}")
                }
                Err(e) => return Err(e),
            }
        }
        "/stop" => {
            let active = match &state.session_id {
                Some(id) => gw.session(id).await?.active_run_id,
                None => None,
            };
            match active {
                Some(run) => {
                    gw.cancel(&run).await?;
                    println!("{DIM}stopped run {}{RESET}", short(&run));
                }
                None => println!("{DIM}nothing is running{RESET}"),
            }
        }
        "/think" => match state
            .last
            .as_ref()
            .map(|r| r.thinking())
            .filter(|t| !t.is_empty())
        {
            Some(t) => println!("{DIM}{t}{RESET}"),
            None => println!("{DIM}the last reply had no thinking{RESET}"),
        },
        "/status" => println!("{}", state.status_line(gw)),
        other => println!("unknown command {other}; /help lists them"),
    }
    Ok(Flow::Continue)
}

fn print_mcp(list: &weft_wire::api::McpStatusList) {
    if list.configured.is_empty() {
        println!("no MCP servers are configured ([[mcp_servers]] in weft.toml)");
        return;
    }
    if list.workers.is_empty() {
        println!(
            "configured: {} — no worker has reported yet",
            list.configured.join(", ")
        );
        return;
    }
    for w in &list.workers {
        println!(
            "{DIM}worker {} (reported {}){RESET}",
            w.worker_id, w.updated_at
        );
        for s in &w.servers {
            println!(
                "  {YELLOW}{:<16}{RESET} {:<8} {:<5} policy {:<7} {} tools",
                s.name,
                s.state,
                s.transport,
                s.policy,
                s.tools.len()
            );
            if let Some(e) = &s.last_error {
                println!("  {DIM}  last error: {e}{RESET}");
            }
        }
    }
}

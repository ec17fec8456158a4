//! The non-chat client commands: `login`, `logout`, `sessions list|show|delete`,
//! `models`. Each prints plain, grep-able lines.

use std::io::{BufRead, IsTerminal, Write};

use crate::api::Gateway;
use crate::config::{self, FileConfig};
use crate::error::{ClientError, Result};
use crate::session::{self, short};

/// How `weft login` gets its credentials.
#[derive(Debug, Clone, Default)]
pub struct LoginArgs {
    pub token: Option<String>,
    pub username: Option<String>,
    pub password_stdin: bool,
}

/// Verify the credentials, then store gateway + a personal API token (0600).
pub async fn login(gw: &Gateway, args: LoginArgs) -> Result<()> {
    let path = config::config_path().ok_or_else(|| {
        ClientError::Local("cannot tell where the config goes: set HOME or XDG_CONFIG_HOME".into())
    })?;
    let token = match args.token {
        Some(t) => t,
        None => {
            let username = match args.username {
                Some(u) => u,
                None => prompt("username: ")?,
            };
            let password = if args.password_stdin || !std::io::stdin().is_terminal() {
                read_line()?
            } else {
                rpassword::prompt_password("password: ")?
            };
            let login = gw.login(&username, &password).await?;
            // Swap the 30-day login token for a personal API token, then drop it.
            let host = std::env::var("HOSTNAME").unwrap_or_else(|_| "this machine".into());
            let login_gw = gw.with_token(&login.token);
            let created = login_gw.create_token(&format!("weft cli ({host})")).await?;
            let _ = login_gw.logout().await;
            created.token
        }
    };
    let me = gw.with_token(&token).me().await?;
    let mut file = config::load(&path)?;
    file.gateway = Some(gw.url().to_string());
    file.token = Some(token);
    config::save(&path, &file)?;
    eprintln!(
        "logged in to {} as {} (saved in {})",
        gw.url(),
        me.username,
        path.display()
    );
    Ok(())
}

/// Revoke the stored token at the gateway (best effort) and forget it.
pub async fn logout(gw: &Gateway) -> Result<()> {
    let path = config::config_path()
        .ok_or_else(|| ClientError::Local("set HOME or XDG_CONFIG_HOME".into()))?;
    let file = config::load(&path)?;
    if file.token.is_none() {
        eprintln!("not logged in");
        return Ok(());
    }
    if gw.has_token()
        && let Err(e) = gw.logout().await
    {
        let url = gw.url();
        eprintln!("weft: could not revoke the token at {url} ({e}); forgetting it here anyway");
    }
    config::save(
        &path,
        &FileConfig {
            token: None,
            ..file
        },
    )?;
    eprintln!("logged out of {}", gw.url());
    Ok(())
}

fn prompt(label: &str) -> Result<String> {
    eprint!("{label}");
    std::io::stderr().flush()?;
    read_line()
}

fn read_line() -> Result<String> {
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line)?;
    Ok(line.trim_end_matches(['\r', '\n']).to_string())
}

pub async fn sessions_list(gw: &Gateway, limit: u32) -> Result<()> {
    let list = gw.sessions(limit).await?;
    let mut out = std::io::stdout().lock();
    for s in list.sessions {
        let title = if s.title.is_empty() {
            "(untitled)"
        } else {
            s.title.as_str()
        };
        let active = if s.active_run_id.is_some() {
            " ●"
        } else {
            ""
        };
        writeln!(
            out,
            "{}  {}  {}  {}  {title}{active}",
            short(&s.id),
            s.updated_at.get(..16).unwrap_or(&s.updated_at),
            s.model,
            s.agent
        )?;
    }
    Ok(())
}

pub async fn sessions_show(gw: &Gateway, id: &str, limit: u32) -> Result<()> {
    let s = session::find(gw, id).await?;
    let list = gw.messages(&s.id, limit).await?;
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "session {}  model {}  agent {}  {}",
        s.id, s.model, s.agent, s.title
    )?;
    for m in list.messages {
        match m.role.as_str() {
            "tool" => writeln!(
                out,
                "\n[tool {}] {}",
                m.name.unwrap_or_default(),
                crate::render::truncate(&m.content, 200)
            )?,
            role => {
                writeln!(out, "\n[{role}]")?;
                for c in &m.tool_calls {
                    writeln!(
                        out,
                        "⚙ {} {}",
                        c.name,
                        crate::render::args_summary(&c.args, 80)
                    )?;
                }
                writeln!(out, "{}", m.content)?;
                for a in &m.attachments {
                    writeln!(out, "{}", crate::render::attachment_line(a))?;
                }
            }
        }
    }
    Ok(())
}

pub async fn sessions_delete(gw: &Gateway, id: &str) -> Result<()> {
    let s = session::find(gw, id).await?;
    gw.delete_session(&s.id).await?;
    eprintln!("deleted session {}", short(&s.id));
    Ok(())
}

/// `weft agents`: one agent a line — its id, name, model (or the default)
/// and the knowledge bases it searches — and its description below. (Every
/// string of an answer is cleaned for the terminal where it is decoded.)
pub async fn agents(gw: &Gateway) -> Result<()> {
    let list = gw.agents().await?;
    let mut out = std::io::stdout().lock();
    for a in list.agents {
        let model = a.model.as_deref().unwrap_or("(default model)");
        let mut line = format!("{}\t{}\t{model}", a.id, a.name);
        if !a.knowledge.is_empty() {
            line.push_str(&format!("\tknowledge: {}", a.knowledge.join(", ")));
        }
        writeln!(out, "{line}")?;
        if !a.description.trim().is_empty() {
            writeln!(out, "  {}", a.description.trim())?;
        }
    }
    Ok(())
}

/// `weft skills`: one skill a line — its name and what it is for.
pub async fn skills(gw: &Gateway) -> Result<()> {
    let list = gw.skills().await?;
    let mut out = std::io::stdout().lock();
    if list.skills.is_empty() {
        writeln!(out, "(no skills)")?;
    }
    for s in list.skills {
        writeln!(out, "{}\t{}", s.name, s.description.trim())?;
    }
    Ok(())
}

pub async fn models(gw: &Gateway) -> Result<()> {
    let list = gw.models().await?;
    let mut out = std::io::stdout().lock();
    for m in list.models {
        writeln!(
            out,
            "{}\t{}{}",
            m.id,
            m.provider,
            if m.default { "\t(default)" } else { "" }
        )?;
    }
    Ok(())
}

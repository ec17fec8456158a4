//! `/memory`: what the assistant remembers about you (docs/memory.md) — the
//! list, numbered; `search TEXT` (only those sharing words with it, best
//! first); `forget N…`; `off` and `on`, your switch.
//!
//! `forget N` means the N-th memory of the last list shown here, by its id:
//! the numbers stay as shown until the next list, so a memory kept or
//! forgotten meanwhile (by a run, on the web page) cannot make a number name
//! another memory.

use weft_wire::api::{MemoryDto, MemoryList};

use super::state::ReplState;
use crate::api::Gateway;
use crate::error::Result;
use crate::render::{DIM, RESET, YELLOW};

/// What `/memory` takes after it (also offered by Tab).
pub const ARGS: &[&str] = &["search", "forget", "off", "on"];

/// A memory as the last list showed it.
#[derive(Debug, Clone)]
pub struct Listed {
    pub id: String,
    pub text: String,
    /// Forgotten since, here: its number stays taken.
    pub forgotten: bool,
}

pub async fn run(gw: &Gateway, state: &mut ReplState, arg: &str) -> Result<()> {
    let (sub, rest) = arg
        .split_once(char::is_whitespace)
        .map_or((arg, ""), |(s, r)| (s, r.trim()));
    match sub {
        "" | "list" => list(gw, state, None).await,
        "search" if rest.is_empty() => {
            println!("usage: /memory search TEXT");
            Ok(())
        }
        "search" => list(gw, state, Some(rest)).await,
        "forget" => forget(gw, state, rest).await,
        "off" => switch(gw, false).await,
        "on" => switch(gw, true).await,
        other => {
            println!("unknown /memory {other:?}; use /memory [search TEXT | forget N | off | on]");
            Ok(())
        }
    }
}

async fn list(gw: &Gateway, state: &mut ReplState, query: Option<&str>) -> Result<()> {
    let list = gw.memories(query).await?;
    state.memories = list
        .memories
        .iter()
        .map(|m| Listed {
            id: m.id.clone(),
            text: m.text.clone(),
            forgotten: false,
        })
        .collect();
    if list.memories.is_empty() {
        match query {
            Some(q) => println!("{DIM}no memory matches {q:?}{RESET}"),
            None => println!("{DIM}nothing remembered about you yet{RESET}"),
        }
    }
    let width = crate::render::term_width().saturating_sub(20).max(20);
    for (i, m) in list.memories.iter().enumerate() {
        println!("{}", line(i + 1, m, width));
    }
    println!("{DIM}{}{RESET}", footer(&list));
    Ok(())
}

/// `  2. episode    📌 shipped the refunds service`
fn line(n: usize, m: &MemoryDto, width: usize) -> String {
    let pin = if m.pinned { "📌" } else { "  " };
    format!(
        "{YELLOW}{n:>3}.{RESET} {:<9} {pin} {}",
        m.kind.as_str(),
        crate::render::truncate(&m.text, width)
    )
}

/// Whether memory is on, and what to do next.
fn footer(list: &MemoryList) -> String {
    if !list.available {
        "memory is turned off on this gateway: nothing is remembered or recalled".into()
    } else if !list.enabled {
        "your memory is off: nothing new is remembered or recalled (/memory on turns it on)".into()
    } else if list.memories.is_empty() {
        "memory is on · /memory off turns it off".into()
    } else {
        "memory is on · /memory forget N · /memory search TEXT · /memory off".into()
    }
}

/// `forget N…`: each by the id the last list showed under that number.
async fn forget(gw: &Gateway, state: &mut ReplState, arg: &str) -> Result<()> {
    let numbers: Option<Vec<usize>> = arg.split_whitespace().map(|n| n.parse().ok()).collect();
    let numbers = match numbers {
        Some(n) if !n.is_empty() => n,
        _ => {
            println!("usage: /memory forget N (N from the last /memory list)");
            return Ok(());
        }
    };
    if state.memories.is_empty() {
        println!("{DIM}no list to pick from: /memory lists your memories first{RESET}");
        return Ok(());
    }
    let shown = state.memories.len();
    for n in numbers {
        let Some(m) = n.checked_sub(1).and_then(|i| state.memories.get_mut(i)) else {
            println!("the last list has no memory {n} (1–{shown})");
            continue;
        };
        if m.forgotten {
            println!("{DIM}{n} is forgotten already{RESET}");
            continue;
        }
        match gw.delete_memory(&m.id).await {
            Ok(()) => println!(
                "{DIM}forgot {n}: {}{RESET}",
                crate::render::truncate(&m.text, 60)
            ),
            Err(e) if e.is_not_found() => {
                println!("{DIM}{n} was already gone{RESET}")
            }
            Err(e) => return Err(e),
        }
        m.forgotten = true;
    }
    Ok(())
}

async fn switch(gw: &Gateway, enabled: bool) -> Result<()> {
    let now = gw.switch_memory(enabled).await?;
    if now.enabled {
        println!(
            "{DIM}memory on: what you tell me may be remembered and recalled in later conversations{RESET}"
        );
    } else {
        println!(
            "{DIM}memory off: nothing new is remembered or recalled; what is kept stays until you forget it{RESET}"
        );
    }
    Ok(())
}

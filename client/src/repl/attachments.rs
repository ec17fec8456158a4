//! `/attach PATH…` and `/detach [N|NAME]`: the files that wait for the next
//! message. Each path is checked when it is attached (so a typo shows at once),
//! and read when the message goes (see [`crate::attach`]).

use super::state::ReplState;
use crate::attach::{self, LocalFile};
use crate::render::{DIM, RESET, YELLOW};

/// `/attach PATH…` adds files; `/attach` alone lists them; `/attach --clear`
/// is `/detach`.
pub fn attach(state: &mut ReplState, arg: &str) {
    if arg == "--clear" {
        return detach(state, "");
    }
    let paths = match attach::parse_paths(arg) {
        Ok(p) => p,
        Err(e) => return println!("weft: {e}"),
    };
    if paths.is_empty() {
        return list(state);
    }
    for path in paths {
        match LocalFile::open(&path) {
            Ok(f) if state.pending.iter().any(|p| p.path() == f.path()) => {
                println!("{DIM}{} is attached already{RESET}", f.name());
            }
            Ok(f) => {
                println!("{DIM}📎 attached {}{RESET}", f.label());
                state.pending.push(f);
            }
            Err(e) => println!("weft: {e}"),
        }
    }
    if !state.pending.is_empty() {
        println!(
            "{DIM}{} will go with your next message (/detach drops them){RESET}",
            attach::count(state.pending.len())
        );
    }
}

fn list(state: &ReplState) {
    if state.pending.is_empty() {
        println!("{DIM}no files attached; /attach PATH adds one{RESET}");
        return;
    }
    for (i, f) in state.pending.iter().enumerate() {
        println!(
            "  {YELLOW}{}{RESET} 📎 {}  {DIM}{}{RESET}",
            i + 1,
            f.label(),
            f.path().display()
        );
    }
}

/// `/detach` drops every attached file; `/detach N` or `/detach NAME` one of them.
pub fn detach(state: &mut ReplState, arg: &str) {
    if arg.is_empty() {
        let n = state.pending.len();
        state.pending.clear();
        match n {
            0 => println!("{DIM}no files were attached{RESET}"),
            n => println!("{DIM}dropped {}{RESET}", attach::count(n)),
        }
        return;
    }
    let index = match arg.parse::<usize>() {
        Ok(n) => n.checked_sub(1).filter(|i| *i < state.pending.len()),
        Err(_) => state.pending.iter().position(|f| f.name() == arg),
    };
    match index {
        Some(i) => {
            let f = state.pending.remove(i);
            println!("{DIM}dropped {}{RESET}", f.name());
        }
        None => println!("no attached file {arg:?}; /attach lists them"),
    }
}

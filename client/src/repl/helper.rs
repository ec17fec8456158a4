//! Line-editor integration (`rustyline`, which lays out wide/CJK characters by
//! display width): Tab completion of slash commands and their arguments (paths
//! after `/attach`, `~/` included; agents after `/agent` and `/mode`;
//! `/memory`'s words), and multi-line input — a line ending in `\` or an
//! unclosed ``` fence continues.

use std::borrow::Cow;

use rustyline::completion::{Completer, FilenameCompleter, Pair};
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::validate::{ValidationContext, ValidationResult, Validator};
use rustyline::{Context, Helper};

use super::commands::COMMANDS;

#[derive(Default)]
pub struct ReplHelper {
    pub models: Vec<String>,
    pub agents: Vec<String>,
    pub paths: FilenameCompleter,
}

impl ReplHelper {
    /// Paths for `/attach`: rustyline's completer (which escapes spaces the way
    /// `/attach` reads them), with `~/` standing for the home directory.
    fn complete_path(&self, line: &str, pos: usize) -> rustyline::Result<(usize, Vec<Pair>)> {
        let (start, found) = self.paths.complete_path(line, pos)?;
        let word = &line[start..pos];
        let Some(rest) = word.strip_prefix('~').filter(|r| r.starts_with('/')) else {
            return Ok((start, found));
        };
        let Some(home) = std::env::var("HOME").ok().filter(|h| !h.is_empty()) else {
            return Ok((start, found));
        };
        let expanded = format!("{}{home}{rest}", &line[..start]);
        let (_, found) = self.paths.complete_path(&expanded, expanded.len())?;
        let found = found
            .into_iter()
            .map(|p| Pair {
                replacement: match p.replacement.strip_prefix(home.as_str()) {
                    Some(tail) => format!("~{tail}"),
                    None => p.replacement,
                },
                display: p.display,
            })
            .collect();
        Ok((start, found))
    }
}

impl Completer for ReplHelper {
    type Candidate = Pair;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        _ctx: &Context<'_>,
    ) -> rustyline::Result<(usize, Vec<Pair>)> {
        let line = &line[..pos];
        if !line.starts_with('/') {
            return Ok((pos, vec![]));
        }
        let pair = |s: &str| Pair {
            display: s.to_string(),
            replacement: s.to_string(),
        };
        match line.split_once(' ') {
            None => Ok((
                0,
                COMMANDS
                    .iter()
                    .map(|(c, _)| *c)
                    .filter(|c| c.starts_with(line))
                    .map(|c| pair(&format!("{c} ")))
                    .collect(),
            )),
            Some(("/attach", _)) => self.complete_path(line, pos),
            Some((cmd, arg)) => {
                let memory: Vec<String>;
                let options: &[String] = match cmd {
                    "/model" => &self.models,
                    "/agent" | "/mode" => &self.agents,
                    "/memory" if !arg.contains(' ') => {
                        memory = super::memory::ARGS.iter().map(|a| a.to_string()).collect();
                        &memory
                    }
                    _ => &[],
                };
                let start = pos - arg.len();
                Ok((
                    start,
                    options
                        .iter()
                        .filter(|o| o.starts_with(arg))
                        .map(|o| pair(o))
                        .collect(),
                ))
            }
        }
    }
}

impl Hinter for ReplHelper {
    type Hint = String;
}

impl Highlighter for ReplHelper {
    fn highlight_prompt<'b, 's: 'b, 'p: 'b>(
        &'s self,
        prompt: &'p str,
        default: bool,
    ) -> Cow<'b, str> {
        if !default {
            return Cow::Borrowed(prompt);
        }
        // `[2 files] ❯ `: the count in yellow, the arrow as always.
        match prompt.strip_suffix(super::PROMPT) {
            Some(files) if !files.is_empty() => {
                Cow::Owned(format!("\x1b[33m{files}\x1b[1;36m{}\x1b[0m", super::PROMPT))
            }
            _ => Cow::Owned(format!("\x1b[1;36m{prompt}\x1b[0m")),
        }
    }
}

impl Validator for ReplHelper {
    fn validate(&self, ctx: &mut ValidationContext<'_>) -> rustyline::Result<ValidationResult> {
        Ok(if needs_more(ctx.input()) {
            ValidationResult::Incomplete
        } else {
            ValidationResult::Valid(None)
        })
    }
}

impl Helper for ReplHelper {}

/// Input that continues on the next line.
pub fn needs_more(input: &str) -> bool {
    let fences = input
        .lines()
        .filter(|l| l.trim_start().starts_with("```"))
        .count();
    input.ends_with('\\') || fences % 2 == 1
}

/// The message as sent: continuation backslashes removed.
pub fn message_text(input: &str) -> String {
    input.replace("\\\n", "\n").trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn continuation_rules() {
        assert!(needs_more("first line \\"));
        assert!(needs_more("look:\n```rust\nfn x()"));
        assert!(!needs_more("look:\n```rust\nfn x()\n```"));
        assert_eq!(message_text("a \\\nb"), "a \nb");
    }

    #[test]
    fn agents_complete_after_agent_and_its_older_name() {
        let helper = ReplHelper {
            agents: vec!["agent".into(), "chat".into(), "coder".into()],
            ..ReplHelper::default()
        };
        let history = rustyline::history::DefaultHistory::new();
        let ctx = Context::new(&history);
        for line in ["/agent c", "/mode c"] {
            let (start, found) = helper.complete(line, line.len(), &ctx).unwrap();
            let found: Vec<_> = found.into_iter().map(|p| p.replacement).collect();
            assert_eq!(
                (start, found),
                (line.len() - 1, vec!["chat".into(), "coder".into()]),
                "{line}"
            );
        }
    }
}

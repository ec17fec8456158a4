//! The live view of one reply in the REPL: a spinner until the first output,
//! thinking as one dimmed line that folds to its last three lines when the
//! answer starts (`/think` shows it all), tool calls
//! as compact lines that turn into ✓/✗ with their duration, and text rendered as
//! Markdown line by line. A run that has said nothing but heartbeats for three
//! minutes is "still working… 3 min" in the line already redrawn — the
//! spinner's or the running call's — so a long wait adds no lines.
//!
//! The unfinished last line of text is shown raw and redrawn, rendered, once its
//! newline arrives; table rows stay provisional until the table ends. Both need
//! the number of terminal rows they occupy, hence the width bookkeeping.

use std::io::Write;
use std::time::Instant;

use crate::render::markdown::{Emit, Markdown};
use crate::render::{self, DIM, GREEN, RED, RESET, args_summary, human_ms, rows, truncate};
use crate::reply::ToolCall;

/// Lines of thinking left in view once the answer starts.
const THINKING_LINES: usize = 3;

/// The end of `text` as at most [`THINKING_LINES`] lines of `width` columns
/// (words wrapped, line breaks kept; `…` where it starts mid-way), and whether
/// more was left out.
fn folded(text: &str, width: usize) -> (Vec<String>, bool) {
    let width = width.max(10);
    let mut lines: Vec<String> = Vec::new();
    for paragraph in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let mut line = String::new();
        for word in paragraph.split_whitespace() {
            let word = truncate(word, width);
            if !line.is_empty()
                && render::visible_width(&line) + 1 + render::visible_width(&word) > width
            {
                lines.push(std::mem::take(&mut line));
            }
            if !line.is_empty() {
                line.push(' ');
            }
            line.push_str(&word);
        }
        lines.push(line);
    }
    let more = lines.len() > THINKING_LINES;
    let mut shown = lines.split_off(lines.len().saturating_sub(THINKING_LINES));
    if more && let Some(first) = shown.first_mut() {
        *first = truncate(&format!("…{first}"), width);
    }
    (shown, more)
}

const SPINNER: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

/// The line of a call that runs: `  ⚙ name key=value …`, then how long the
/// run has been still working, if it has; one terminal row, so it can be
/// redrawn in place.
fn running_line(call: &str, still: Option<&str>, width: usize) -> String {
    let line = match still {
        Some(still) => format!("  ⚙ {call} … {still}"),
        None => format!("  ⚙ {call} …"),
    };
    format!("{DIM}{}{RESET}", truncate(&line, width.saturating_sub(1)))
}

/// `name key=value …`, or just `name` without arguments.
fn with_args(name: &str, args: &serde_json::Value, width: usize) -> String {
    let summary = args_summary(args, width.saturating_sub(name.len() + 1));
    if summary.is_empty() {
        name.to_string()
    } else {
        format!("{name} {summary}")
    }
}

pub struct Display {
    out: std::io::Stdout,
    md: Markdown,
    width: usize,
    started: Instant,
    spinner: Option<usize>,
    partial: String,
    provisional_rows: usize,
    thinking: Option<(Instant, String)>,
    /// The call whose line is the unfinished last line: its id and `name args`.
    open_tool: Option<(String, String)>,
    /// `still working… 3 min`, while the run is ([`Display::still_working`]).
    still: Option<String>,
    text_step: Option<u32>,
    /// Something was printed on the current (unfinished) terminal line.
    mid_line: bool,
}

impl Default for Display {
    fn default() -> Self {
        Display::new()
    }
}

impl Display {
    pub fn new() -> Display {
        let width = render::term_width();
        Display {
            out: std::io::stdout(),
            md: Markdown::new(width),
            width,
            started: Instant::now(),
            spinner: Some(0),
            partial: String::new(),
            provisional_rows: 0,
            thinking: None,
            open_tool: None,
            still: None,
            text_step: None,
            mid_line: false,
        }
    }

    fn w(&mut self, s: &str) {
        let _ = self.out.write_all(s.as_bytes());
    }

    fn flush(&mut self) {
        let _ = self.out.flush();
    }

    /// Advance the spinner (called on a timer) while nothing else was shown.
    pub fn tick(&mut self) {
        if let Some(frame) = self.spinner {
            let waiting = match &self.still {
                Some(still) => still.clone(),
                None => format!(
                    "waiting for the model… {}",
                    human_ms(self.started.elapsed().as_millis() as u64)
                ),
            };
            let s = format!(
                "\r\x1b[2K{DIM}{} {waiting}{RESET}",
                SPINNER[frame % SPINNER.len()],
            );
            self.w(&s);
            self.spinner = Some(frame + 1);
            self.flush();
        }
    }

    fn clear_spinner(&mut self) {
        if self.spinner.take().is_some() {
            self.w("\r\x1b[2K");
        }
    }

    /// Make sure the cursor is at the start of an empty line.
    fn settle(&mut self) {
        self.clear_spinner();
        self.end_thinking();
        if !self.partial.is_empty() {
            let line = std::mem::take(&mut self.partial);
            self.erase_partial(&line);
            self.emit_line(&line);
        }
        if let Some(_tool) = self.open_tool.take() {
            self.w("\n");
        }
        if self.mid_line {
            self.w("\n");
            self.mid_line = false;
        }
    }

    pub fn thinking(&mut self, delta: &str) {
        self.clear_spinner();
        let (_, text) = self
            .thinking
            .get_or_insert_with(|| (Instant::now(), String::new()));
        text.push_str(delta);
        let tail: String = text
            .replace('\n', " ")
            .chars()
            .rev()
            .take(self.width)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        let line = format!(
            "\r\x1b[2K{DIM}💭 {}{RESET}",
            truncate(tail.trim_start(), self.width.saturating_sub(5))
        );
        self.w(&line);
        self.mid_line = true;
        self.flush();
    }

    fn end_thinking(&mut self) {
        if let Some((since, text)) = self.thinking.take() {
            let words = text.split_whitespace().count();
            let (shown, more) = folded(&text, self.width.saturating_sub(2));
            let mut out = format!(
                "\r\x1b[2K{DIM}▸ thought for {} · {words} words",
                human_ms(since.elapsed().as_millis() as u64)
            );
            out.push_str(if more { " · /think to expand" } else { "" });
            out.push('\n');
            for line in shown {
                out.push_str(&format!("  {line}\n"));
            }
            out.push_str(RESET);
            self.w(&out);
            self.mid_line = false;
        }
    }

    pub fn text(&mut self, step: u32, delta: &str) {
        if self.text_step != Some(step) {
            if self.text_step.is_some() || self.open_tool.is_some() {
                self.settle();
            }
            self.text_step = Some(step);
        }
        self.clear_spinner();
        self.end_thinking();
        let mut rest = delta;
        while let Some(nl) = rest.find('\n') {
            let (head, tail) = rest.split_at(nl);
            let mut line = std::mem::take(&mut self.partial);
            self.erase_partial(&line);
            line.push_str(head);
            self.emit_line(&line);
            rest = &tail[1..];
        }
        if !rest.is_empty() {
            self.partial.push_str(rest);
            self.w(rest);
            self.mid_line = true;
        }
        self.flush();
    }

    /// Move back over the raw partial line so it can be replaced.
    fn erase_partial(&mut self, shown: &str) {
        if shown.is_empty() {
            return;
        }
        let up = rows(shown, self.width) - 1;
        let seq = if up > 0 {
            format!("\r\x1b[{up}A\x1b[J")
        } else {
            "\r\x1b[J".to_string()
        };
        self.w(&seq);
        self.mid_line = false;
    }

    fn emit_line(&mut self, line: &str) {
        for emit in self.md.line(line) {
            self.show(emit);
        }
    }

    fn show(&mut self, emit: Emit) {
        match emit {
            Emit::Line(s) => self.w(&format!("{s}\n")),
            Emit::Provisional(s) => {
                self.provisional_rows += rows(&s, self.width);
                self.w(&format!("{s}\n"));
            }
            Emit::Replace(lines) => {
                if self.provisional_rows > 0 {
                    let up = std::mem::take(&mut self.provisional_rows);
                    self.w(&format!("\x1b[{up}A\r\x1b[J"));
                }
                for l in lines {
                    self.w(&format!("{l}\n"));
                }
            }
        }
        self.mid_line = false;
    }

    pub fn tool_start(&mut self, t: &ToolCall) {
        self.settle();
        let call = with_args(&t.name, &t.args, self.width.saturating_sub(10));
        let line = running_line(&call, self.still.as_deref(), self.width);
        self.w(&line);
        self.open_tool = Some((t.call_id.clone(), call));
        self.mid_line = true;
        self.flush();
    }

    /// The run has said nothing but heartbeats for a while, `elapsed_ms` into
    /// it (`None`: it spoke again). The spinner shows it from its next tick, a
    /// running call's line is redrawn with it; elsewhere (the model stopped
    /// mid-text or mid-thought) it is a note, once per minute shown.
    pub fn still_working(&mut self, elapsed_ms: Option<u64>) {
        let still = elapsed_ms.map(render::still_working);
        if still == self.still {
            return;
        }
        self.still = still;
        if self.spinner.is_some() {
            return;
        }
        if let Some((_, call)) = &self.open_tool {
            let line = running_line(call, self.still.as_deref(), self.width);
            self.w(&format!("\r\x1b[2K{line}"));
            self.flush();
        } else if let Some(still) = self.still.clone() {
            self.note(&format!("⏳ {still}"));
        }
    }

    pub fn tool_end(&mut self, t: &ToolCall) {
        self.clear_spinner();
        if self.open_tool.as_ref().map(|(id, _)| id) == Some(&t.call_id) {
            self.w("\r\x1b[2K");
            self.open_tool = None;
            self.mid_line = false;
        } else {
            self.settle();
        }
        let ended = t.ended.as_ref();
        let (mark, color) = if ended.is_some_and(|e| e.ok) {
            ("✓", GREEN)
        } else {
            ("✗", RED)
        };
        let call = with_args(&t.name, &t.args, self.width.saturating_sub(20));
        self.w(&format!(
            "  {color}{mark}{RESET} {DIM}{call} · {}{RESET}\n",
            human_ms(ended.map_or(0, |e| e.duration_ms))
        ));
        self.text_step = None;
        self.spinner = Some(0);
        self.flush();
    }

    /// Output already shown became void (an upstream retry); say so.
    pub fn retract(&mut self, reason: &str) {
        self.settle();
        self.w(&format!(
            "{DIM}↻ {reason}: the partial reply above is void, it starts again{RESET}\n"
        ));
        self.text_step = None;
        self.flush();
    }

    /// A dimmed note on its own line.
    pub fn note(&mut self, note: &str) {
        self.settle();
        self.w(&format!("{DIM}{note}{RESET}\n"));
        self.flush();
    }

    pub fn finish(&mut self) {
        self.settle();
        for emit in self.md.finish() {
            self.show(emit);
        }
        self.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::{folded, running_line};
    use crate::render::{DIM, RESET};

    #[test]
    fn a_running_call_says_when_the_run_is_still_working_in_one_row() {
        assert_eq!(
            running_line("web_fetch url=https://x", None, 80),
            format!("{DIM}  ⚙ web_fetch url=https://x …{RESET}")
        );
        let still = crate::render::still_working(190_000);
        assert_eq!(
            running_line("web_fetch url=https://x", Some(&still), 80),
            format!("{DIM}  ⚙ web_fetch url=https://x … still working… 3 min{RESET}")
        );
        // Redrawn in place, so never wider than the terminal.
        let narrow = running_line("web_fetch url=https://x", Some(&still), 30);
        assert!(crate::render::visible_width(&narrow) < 30, "{narrow}");
    }

    #[test]
    fn thinking_folds_to_its_last_three_lines() {
        let (shown, more) = folded("one\ntwo\nthree\nfour five six seven", 12);
        assert!(more);
        assert_eq!(shown, ["…three", "four five", "six seven"]);
        // Short thinking is shown whole, nothing to expand.
        assert_eq!(
            folded("just this", 40),
            (vec!["just this".to_string()], false)
        );
        assert_eq!(folded("", 40), (Vec::<String>::new(), false));
    }
}

//! Long text shown whole before a decision (a proposed plan, already streamed
//! above as the reply's text): when it is taller than the terminal, rendered
//! as Markdown and paged through `$PAGER` (`less -R` when unset), so its start
//! has not scrolled away when the person decides. Short, not a terminal, or no
//! pager to start: left as streamed.

use std::io::{IsTerminal, Write};
use std::process::{Command, Stdio};

use crate::render::markdown::{Emit, Markdown};

pub fn page_if_tall(markdown: &str) {
    let text = render(markdown);
    let rows = terminal_size::terminal_size().map_or(0, |(_, h)| usize::from(h.0));
    let tall = rows > 0 && text.lines().count() + 2 > rows;
    if tall && std::io::stdout().is_terminal() {
        page(&text);
    }
}

fn render(markdown: &str) -> String {
    let mut md = Markdown::new(crate::render::term_width());
    let mut lines = Vec::new();
    let keep = |emits: Vec<Emit>, lines: &mut Vec<String>| {
        for e in emits {
            match e {
                Emit::Line(l) => lines.push(l),
                // Whole text at once: nothing is provisional for long.
                Emit::Provisional(_) => {}
                Emit::Replace(ls) => lines.extend(ls),
            }
        }
    };
    for line in markdown.lines() {
        keep(md.line(line), &mut lines);
    }
    keep(md.finish(), &mut lines);
    lines.join("\n")
}

/// Through the pager; `false` when none could be started.
fn page(text: &str) -> bool {
    let pager = std::env::var("PAGER")
        .ok()
        .filter(|p| !p.trim().is_empty())
        .unwrap_or_else(|| "less -R".into());
    let mut words = pager.split_whitespace();
    let Some(program) = words.next() else {
        return false;
    };
    let Ok(mut child) = Command::new(program)
        .args(words)
        .stdin(Stdio::piped())
        .spawn()
    else {
        return false;
    };
    if let Some(mut stdin) = child.stdin.take() {
        // A pager quit early closes its end: not an error.
        let _ = stdin.write_all(text.as_bytes());
    }
    child.wait().is_ok()
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_plan_renders_every_line_of_its_markdown() {
        let text = super::render("# Plan\n\n1. Read the file.\n2. Fix it.\n");
        for want in ["Plan", "Read the file.", "Fix it."] {
            assert!(text.contains(want), "{want} in {text:?}");
        }
    }
}

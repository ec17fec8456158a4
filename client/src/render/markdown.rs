//! Streaming Markdown → ANSI, one complete line at a time.
//!
//! A reply arrives in arbitrary fragments, so block structure is decided per line
//! (headings, lists, quotes, rules, fenced code, tables) and inline spans (bold,
//! italic, code, links, strikethrough) by `pulldown-cmark` on that line's content.
//! Lines are final once emitted, except table rows: a table's column widths are
//! only known at its end, so its rows are shown raw as *provisional* output and
//! replaced by the aligned table when a non-table line (or the end) arrives.

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

use super::highlight::CodeHighlighter;
use super::table;
use super::{BLUE, BOLD, CYAN, DIM, ITALIC, MAGENTA, RESET, STRIKE, UNDERLINE, YELLOW};

/// What the display should do with a rendered line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Emit {
    /// Final: print it.
    Line(String),
    /// Print it, but it will be replaced by the next `Replace`.
    Provisional(String),
    /// Erase all provisional lines and print these instead.
    Replace(Vec<String>),
}

#[derive(Default)]
pub struct Markdown {
    code: Option<(String, CodeHighlighter)>,
    table: Vec<String>,
    width: usize,
}

impl Markdown {
    pub fn new(width: usize) -> Markdown {
        Markdown {
            width,
            ..Markdown::default()
        }
    }

    /// Render one complete line (without its newline).
    pub fn line(&mut self, line: &str) -> Vec<Emit> {
        let mut out = Vec::new();
        if let Some((fence, hl)) = self.code.as_mut() {
            if line.trim_start().starts_with(fence.as_str())
                && line
                    .trim()
                    .trim_start_matches(fence.chars().next().unwrap_or('`'))
                    .is_empty()
            {
                self.code = None;
                out.push(Emit::Line(format!("{DIM}╰─{RESET}")));
            } else {
                out.push(Emit::Line(format!("{DIM}│{RESET} {}", hl.line(line))));
            }
            return out;
        }
        let trimmed = line.trim_start();
        if trimmed.starts_with('|') {
            self.table.push(line.to_string());
            out.push(Emit::Provisional(line.to_string()));
            return out;
        }
        out.extend(self.flush_table());
        if let Some(fence) = fence_open(trimmed) {
            let lang = trimmed[fence.len()..].trim().to_string();
            out.push(Emit::Line(format!("{DIM}╭─ {lang}{RESET}")));
            self.code = Some((fence, CodeHighlighter::new(&lang)));
            return out;
        }
        out.push(Emit::Line(self.block(line)));
        out
    }

    /// The reply ended: close what is open.
    pub fn finish(&mut self) -> Vec<Emit> {
        self.code = None;
        self.flush_table()
    }

    fn flush_table(&mut self) -> Vec<Emit> {
        if self.table.is_empty() {
            return vec![];
        }
        let rows = std::mem::take(&mut self.table);
        match table::render(&rows, self.width) {
            Some(lines) => vec![Emit::Replace(lines)],
            None => vec![Emit::Replace(rows.iter().map(|r| inline(r)).collect())],
        }
    }

    fn block(&self, line: &str) -> String {
        let indent = line.len() - line.trim_start().len();
        let t = line.trim_start();
        let pad = " ".repeat(indent);
        if let Some((level, text)) = heading(t) {
            let style = if level == 1 {
                format!("{BOLD}{UNDERLINE}{MAGENTA}")
            } else {
                format!("{BOLD}{MAGENTA}")
            };
            return format!(
                "{style}{}{RESET}",
                inline(text).replace(RESET, &format!("{RESET}{style}"))
            );
        }
        if is_rule(t) {
            return format!("{DIM}{}{RESET}", "─".repeat(self.width.clamp(10, 60)));
        }
        if let Some(rest) = t.strip_prefix("> ").or_else(|| (t == ">").then_some("")) {
            return format!("{pad}{DIM}▌{RESET} {ITALIC}{}{RESET}", inline(rest));
        }
        if let Some(rest) = ["- [ ] ", "* [ ] "].iter().find_map(|p| t.strip_prefix(p)) {
            return format!("{pad}☐ {}", inline(rest));
        }
        if let Some(rest) = ["- [x] ", "* [x] ", "- [X] "]
            .iter()
            .find_map(|p| t.strip_prefix(p))
        {
            return format!("{pad}☑ {}", inline(rest));
        }
        if let Some(rest) = ["- ", "* ", "+ "].iter().find_map(|p| t.strip_prefix(p)) {
            return format!("{pad}{YELLOW}•{RESET} {}", inline(rest));
        }
        if let Some(dot) = t.find(['.', ')']).filter(|&i| {
            i > 0
                && i < 4
                && t[..i].bytes().all(|b| b.is_ascii_digit())
                && t[i + 1..].starts_with(' ')
        }) {
            return format!(
                "{pad}{YELLOW}{}{RESET} {}",
                &t[..=dot],
                inline(&t[dot + 2..])
            );
        }
        format!("{pad}{}", inline(t))
    }
}

fn fence_open(t: &str) -> Option<String> {
    ["```", "~~~"].iter().find(|f| t.starts_with(**f)).map(|f| {
        let c = f.chars().next().unwrap_or('`');
        t.chars().take_while(|x| *x == c).collect()
    })
}

fn heading(t: &str) -> Option<(usize, &str)> {
    let level = t.bytes().take_while(|b| *b == b'#').count();
    ((1..=6).contains(&level) && t[level..].starts_with(' ')).then(|| (level, t[level..].trim()))
}

fn is_rule(t: &str) -> bool {
    let t: String = t.chars().filter(|c| !c.is_whitespace()).collect();
    t.len() >= 3
        && ["-", "*", "_"]
            .iter()
            .any(|c| t.chars().all(|x| x.to_string() == *c))
}

/// Inline Markdown of one line's content to ANSI.
pub fn inline(text: &str) -> String {
    fn restyle(out: &mut String, stack: &[&str]) {
        out.push_str(RESET);
        stack.iter().for_each(|s| out.push_str(s));
    }
    let mut out = String::new();
    let mut stack: Vec<&str> = Vec::new();
    let mut link: Option<String> = None;
    for ev in Parser::new_ext(text, Options::ENABLE_STRIKETHROUGH) {
        match ev {
            Event::Start(
                tag @ (Tag::Strong | Tag::Emphasis | Tag::Strikethrough | Tag::Link { .. }),
            ) => {
                let style = match tag {
                    Tag::Strong => BOLD,
                    Tag::Emphasis => ITALIC,
                    Tag::Strikethrough => STRIKE,
                    Tag::Link { dest_url, .. } => {
                        link = Some(dest_url.to_string());
                        UNDERLINE
                    }
                    _ => unreachable!("matched above"),
                };
                stack.push(style);
                out.push_str(style);
            }
            Event::End(TagEnd::Strong | TagEnd::Emphasis | TagEnd::Strikethrough) => {
                stack.pop();
                restyle(&mut out, &stack);
            }
            Event::End(TagEnd::Link) => {
                stack.pop();
                restyle(&mut out, &stack);
                if let Some(url) = link.take() {
                    out.push_str(&format!(" {DIM}({url}){RESET}"));
                    restyle(&mut out, &stack);
                }
            }
            Event::Code(code) => {
                out.push_str(&format!("{CYAN}{code}"));
                restyle(&mut out, &stack);
            }
            Event::InlineMath(m) | Event::DisplayMath(m) => {
                out.push_str(&format!("{BLUE}{m}"));
                restyle(&mut out, &stack);
            }
            Event::Text(t) | Event::Html(t) | Event::InlineHtml(t) => out.push_str(&t),
            Event::SoftBreak | Event::HardBreak => out.push(' '),
            _ => {}
        }
    }
    let out = out.trim_end_matches(RESET).to_string();
    if out.contains('\x1b') {
        format!("{out}{RESET}")
    } else {
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::visible_width;

    fn plain(s: &str) -> String {
        let mut out = String::new();
        let mut esc = false;
        for c in s.chars() {
            match (esc, c) {
                (false, '\x1b') => esc = true,
                (true, c) if c.is_ascii_alphabetic() => esc = false,
                (true, _) => {}
                (false, c) => out.push(c),
            }
        }
        out
    }

    #[test]
    fn blocks_and_inline_spans_render_without_markup() {
        let mut md = Markdown::new(80);
        let mut lines = vec![];
        for l in [
            "# Title",
            "some **bold** and `code`",
            "- item 你好",
            "```rust",
            "fn main() {}",
            "```",
        ] {
            for e in md.line(l) {
                if let Emit::Line(s) = e {
                    lines.push(plain(&s));
                }
            }
        }
        assert_eq!(
            lines,
            [
                "Title",
                "some bold and code",
                "• item 你好",
                "╭─ rust",
                "│ fn main() {}",
                "╰─"
            ]
        );
    }

    #[test]
    fn tables_are_provisional_until_they_end() {
        let mut md = Markdown::new(80);
        assert!(matches!(md.line("| a | 名字 |")[0], Emit::Provisional(_)));
        md.line("|---|---|");
        md.line("| 1 | x |");
        let out = md.line("after");
        let Emit::Replace(rows) = &out[0] else {
            panic!("{out:?}")
        };
        let widths: Vec<usize> = rows.iter().map(|r| visible_width(r)).collect();
        assert!(widths.windows(2).all(|w| w[0] == w[1]), "{rows:?}");
        assert!(plain(&rows.join("\n")).contains("名字"));
    }
}

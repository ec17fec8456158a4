//! Syntax highlighting of fenced code blocks with `syntect`, loaded lazily: the
//! syntax and theme dumps are decoded on the first code block of a session, so
//! start-up and replies without code pay nothing for them.

use std::sync::OnceLock;

use syntect::easy::HighlightLines;
use syntect::highlighting::{Theme, ThemeSet};
use syntect::parsing::SyntaxSet;
use syntect::util::as_24_bit_terminal_escaped;

struct Assets {
    syntaxes: SyntaxSet,
    theme: Theme,
}

fn assets() -> &'static Assets {
    static ASSETS: OnceLock<Assets> = OnceLock::new();
    ASSETS.get_or_init(|| {
        let syntaxes = SyntaxSet::load_defaults_newlines();
        let mut themes = ThemeSet::load_defaults();
        let theme = themes
            .themes
            .remove("base16-ocean.dark")
            .unwrap_or_default();
        Assets { syntaxes, theme }
    })
}

/// Highlights one code block, line by line, keeping the parser state between lines.
pub struct CodeHighlighter {
    inner: Option<HighlightLines<'static>>,
}

impl CodeHighlighter {
    /// `lang` is the fence's info string (`rust`, `py`, `sh` …); unknown languages
    /// are shown plain.
    pub fn new(lang: &str) -> CodeHighlighter {
        let lang = lang.split([' ', ',', '{']).next().unwrap_or("").trim();
        if lang.is_empty() {
            return CodeHighlighter { inner: None };
        }
        let a = assets();
        let syntax = a.syntaxes.find_syntax_by_token(lang);
        CodeHighlighter {
            inner: syntax.map(|s| HighlightLines::new(s, &a.theme)),
        }
    }

    /// One line (without newline) with 24-bit colour escapes, reset at the end.
    pub fn line(&mut self, line: &str) -> String {
        let Some(h) = self.inner.as_mut() else {
            return line.to_string();
        };
        let with_nl = format!("{line}\n");
        match h.highlight_line(&with_nl, &assets().syntaxes) {
            Ok(ranges) => {
                let mut s = as_24_bit_terminal_escaped(&ranges, false);
                if s.ends_with('\n') {
                    s.pop();
                }
                s.push_str(super::RESET);
                s
            }
            Err(_) => line.to_string(),
        }
    }
}

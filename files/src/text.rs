//! Plain text: when bytes are text, which text subtype the name may pick, and
//! cutting text to a budget.
//!
//! The name never makes bytes text; it only says what kind of text they are.
//! HTML, SVG and XML stay `text/plain`: the type is what `GET /v1/files/{id}`
//! serves back, and an uploaded page must never render on Weft's origin.

use crate::mime;

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// Extension → text subtype. `.json` is here too but only applies when the
/// bytes parse (see [`refine`]).
const BY_EXTENSION: &[(&[&str], &str)] = &[
    (&["md", "markdown"], mime::MARKDOWN),
    (&["csv"], mime::CSV),
    (&["tsv"], mime::TSV),
    (&["rs"], "text/x-rust"),
    (&["py", "pyi"], "text/x-python"),
    (&["ts", "tsx", "mts", "cts"], "text/x-typescript"),
    (&["js", "jsx", "mjs", "cjs"], "text/javascript"),
    (&["go"], "text/x-go"),
    (&["java"], "text/x-java"),
    (&["kt", "kts"], "text/x-kotlin"),
    (&["c", "h"], "text/x-c"),
    (&["cpp", "cc", "cxx", "hpp", "hh", "hxx"], "text/x-c++"),
    (&["cs"], "text/x-csharp"),
    (&["rb"], "text/x-ruby"),
    (&["php"], "text/x-php"),
    (&["swift"], "text/x-swift"),
    (&["sh", "bash", "zsh"], "text/x-shellscript"),
    (&["toml"], "text/x-toml"),
    (&["yaml", "yml"], "text/x-yaml"),
    (&["css"], "text/css"),
    (&["sql"], "text/x-sql"),
];

/// Every text type [`refine`] can return.
pub(crate) const MIMES: &[&str] = &[
    mime::TEXT,
    mime::MARKDOWN,
    mime::CSV,
    mime::TSV,
    mime::JSON,
    "text/x-rust",
    "text/x-python",
    "text/x-typescript",
    "text/javascript",
    "text/x-go",
    "text/x-java",
    "text/x-kotlin",
    "text/x-c",
    "text/x-c++",
    "text/x-csharp",
    "text/x-ruby",
    "text/x-php",
    "text/x-swift",
    "text/x-shellscript",
    "text/x-toml",
    "text/x-yaml",
    "text/css",
    "text/x-sql",
];

/// The text of `bytes` if they are UTF-8 (an optional BOM dropped) without NUL.
pub(crate) fn as_text(bytes: &[u8]) -> Option<&str> {
    let body = bytes.strip_prefix(BOM).unwrap_or(bytes);
    if body.contains(&0) {
        return None;
    }
    std::str::from_utf8(body).ok()
}

/// The text subtype of `text` named `name`: the extension may refine
/// `text/plain`, and `.json` only counts when the text is JSON.
pub(crate) fn refine(name: &str, text: &str) -> &'static str {
    let Some((_, ext)) = name.rsplit_once('.') else {
        return mime::TEXT;
    };
    let ext = ext.to_ascii_lowercase();
    if ext == "json" {
        let parses = serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok();
        return if parses { mime::JSON } else { mime::TEXT };
    }
    BY_EXTENSION
        .iter()
        .find(|(exts, _)| exts.contains(&ext.as_str()))
        .map_or(mime::TEXT, |(_, m)| m)
}

/// `text` cut to at most `max_chars` characters, and whether anything was cut.
///
/// The cut prefers the last line break within the final tenth of the budget (at
/// most 1,000 characters back), so a model does not see half a line; failing
/// that it falls on a character boundary.
pub fn truncate(text: &str, max_chars: usize) -> (String, bool) {
    let Some((cut, _)) = text.char_indices().nth(max_chars) else {
        return (text.to_owned(), false);
    };
    let kept = &text[..cut];
    let window = (max_chars / 10).min(1_000);
    let at_line = kept
        .rfind('\n')
        .filter(|&nl| kept[nl + 1..].chars().count() <= window);
    let kept = match at_line {
        Some(nl) => kept[..nl].trim_end_matches('\r'),
        None => kept,
    };
    (kept.to_owned(), true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_extension_maps_to_a_listed_mime() {
        for (_, m) in BY_EXTENSION {
            assert!(MIMES.contains(m), "{m}");
        }
    }

    #[test]
    fn the_extension_only_refines_text() {
        assert_eq!(refine("notes.MD", "# hi"), mime::MARKDOWN);
        assert_eq!(refine("data.json", "{\"a\": [1, 2]}"), mime::JSON);
        assert_eq!(refine("data.json", "{not json"), mime::TEXT);
        assert_eq!(refine("page.html", "<script>alert(1)</script>"), mime::TEXT);
        assert_eq!(refine("main.rs", "fn main() {}"), "text/x-rust");
        assert_eq!(refine("Makefile", "all:"), mime::TEXT);
    }

    #[test]
    fn text_allows_a_bom_but_not_nul() {
        assert_eq!(as_text(b"\xEF\xBB\xBFhello"), Some("hello"));
        assert_eq!(as_text(b"hel\0lo"), None);
        assert_eq!(as_text(b"\xFF\xFEh\0i\0"), None);
    }

    #[test]
    fn truncation_keeps_short_text_whole() {
        assert_eq!(truncate("héllo", 5), ("héllo".to_owned(), false));
        assert_eq!(truncate("", 0), (String::new(), false));
        assert_eq!(truncate("a", 0), (String::new(), true));
    }

    #[test]
    fn truncation_prefers_a_line_break_near_the_end() {
        let text = format!("{}\r\n{}", "a".repeat(95), "b".repeat(50));
        let (cut, truncated) = truncate(&text, 100);
        assert!(truncated);
        assert_eq!(cut, "a".repeat(95));
        // A break far from the end is not worth losing most of the budget for.
        let text = format!("a\n{}", "b".repeat(200));
        assert_eq!(truncate(&text, 100).0.chars().count(), 100);
    }
}

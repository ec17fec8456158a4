//! Making model markdown acceptable to Lark card markdown elements.
//!
//! Lark rejects a card with too many tables (230099 / `ErrCode: 11310`; the exact
//! limit is undocumented, so we keep at most 3) and a request body over 30 KB.
//! [`sanitize`] keeps the first tables as tables and turns the rest into fenced
//! text blocks (still readable, no longer tables); [`split`] cuts long text at line
//! boundaries into pieces under a byte budget, closing and reopening code fences so
//! every piece renders on its own.

/// Limits applied to one card's markdown.
#[derive(Debug, Clone, Copy)]
pub struct MarkdownLimits {
    pub max_tables: usize,
    /// Bytes of the answer's markdown per card; leaves room for the rest of a
    /// 30 KB request (the reasoning and the calls take up to 6 KB more).
    pub max_element_bytes: usize,
}

impl Default for MarkdownLimits {
    fn default() -> Self {
        Self {
            max_tables: 3,
            max_element_bytes: 20_000,
        }
    }
}

/// Is `line` a table delimiter row such as `|---|:--:|`?
pub fn is_table_delimiter(line: &str) -> bool {
    let trimmed = line.trim();
    if !trimmed.contains('|') || !trimmed.contains('-') {
        return false;
    }
    let inner = trimmed.trim_start_matches('|').trim_end_matches('|');
    inner.split('|').all(|cell| {
        let cell = cell.trim();
        let core = cell.trim_start_matches(':').trim_end_matches(':');
        !core.is_empty() && core.chars().all(|c| c == '-')
    })
}

fn is_fence(line: &str) -> bool {
    let t = line.trim_start();
    t.starts_with("```") || t.starts_with("~~~")
}

/// Number of tables outside code fences.
pub fn count_tables(text: &str) -> usize {
    let lines: Vec<&str> = text.lines().collect();
    let mut in_fence = false;
    let mut count = 0;
    for (i, line) in lines.iter().enumerate() {
        if is_fence(line) {
            in_fence = !in_fence;
        } else if !in_fence && i > 0 && lines[i - 1].contains('|') && is_table_delimiter(line) {
            count += 1;
        }
    }
    count
}

/// Keeps the first `max_tables` tables; the rest become fenced text blocks.
pub fn sanitize(text: &str, max_tables: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let mut out: Vec<String> = Vec::with_capacity(lines.len());
    let mut in_fence = false;
    let mut tables = 0;
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if is_fence(line) {
            in_fence = !in_fence;
        }
        let starts_table = !in_fence
            && line.contains('|')
            && lines
                .get(i + 1)
                .is_some_and(|next| is_table_delimiter(next));
        if !starts_table {
            out.push(line.to_owned());
            i += 1;
            continue;
        }
        let end = (i + 2..lines.len())
            .find(|&j| lines[j].trim().is_empty() || !lines[j].contains('|'))
            .unwrap_or(lines.len());
        tables += 1;
        if tables <= max_tables {
            out.extend(lines[i..end].iter().map(|l| (*l).to_owned()));
        } else {
            out.push("```text".to_owned());
            out.extend(
                lines[i..end]
                    .iter()
                    .filter(|l| !is_table_delimiter(l))
                    .map(|l| (*l).to_owned()),
            );
            out.push("```".to_owned());
        }
        i = end;
    }
    let mut joined = out.join("\n");
    if text.ends_with('\n') {
        joined.push('\n');
    }
    neutralize_mentions(&joined)
}

/// Lark card markdown turns `<at id=all></at>` (and `<at id=ou_…>`, `<at
/// email=…>`) into real mentions. Model output must never notify people, so every
/// `<at` tag opener is escaped to `&lt;at`, which renders as the literal text.
pub fn neutralize_mentions(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(pos) = rest.find('<') {
        out.push_str(&rest[..pos]);
        let tail = &rest[pos + 1..];
        let is_at = tail.get(..2).is_some_and(|t| t.eq_ignore_ascii_case("at"))
            && tail[2..]
                .chars()
                .next()
                .is_none_or(|c| c.is_whitespace() || c == '>' || c == '/');
        out.push_str(if is_at { "&lt;" } else { "<" });
        rest = tail;
    }
    out.push_str(rest);
    out
}

/// Splits `text` into pieces of at most `max_bytes` (≥ 16), at line boundaries
/// where possible; an open code fence is closed at the end of a piece and reopened
/// at the start of the next.
pub fn split(text: &str, max_bytes: usize) -> Vec<String> {
    let max_bytes = max_bytes.max(16);
    if text.len() <= max_bytes {
        return vec![text.to_owned()];
    }
    let mut pieces = Vec::new();
    let mut current = String::new();
    let mut fence: Option<String> = None;
    for line in text.split_inclusive('\n') {
        let reserve = if fence.is_some() { 4 } else { 0 };
        if !current.is_empty() && current.len() + line.len() + reserve > max_bytes {
            close_piece(&mut pieces, &mut current, fence.as_deref());
        }
        let mut rest = line;
        while current.len() + rest.len() + reserve > max_bytes {
            let room = max_bytes.saturating_sub(current.len() + reserve).max(1);
            let cut = floor_char_boundary(rest, room);
            let cut = if cut == 0 {
                rest.chars().next().map_or(rest.len(), char::len_utf8)
            } else {
                cut
            };
            current.push_str(&rest[..cut]);
            rest = &rest[cut..];
            close_piece(&mut pieces, &mut current, fence.as_deref());
        }
        current.push_str(rest);
        if is_fence(line) {
            fence = match fence {
                Some(_) => None,
                None => Some(line.trim_end().to_owned()),
            };
        }
    }
    if !current.is_empty() {
        pieces.push(current);
    }
    pieces
}

fn close_piece(pieces: &mut Vec<String>, current: &mut String, fence: Option<&str>) {
    if let Some(opener) = fence {
        if !current.ends_with('\n') {
            current.push('\n');
        }
        current.push_str("```");
        pieces.push(std::mem::take(current));
        current.push_str(opener);
        current.push('\n');
    } else {
        pieces.push(std::mem::take(current));
    }
}

fn floor_char_boundary(s: &str, index: usize) -> usize {
    let mut i = index.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

#[cfg(test)]
mod tests {
    #[test]
    fn mentions_cannot_be_forged() {
        let s = super::sanitize(
            "hi <at id=all></at> and <AT id=ou_1>x</at> <b>ok</b> <attr>",
            3,
        );
        assert!(!s.to_lowercase().contains("<at "), "{s}");
        assert!(s.contains("&lt;at id=all>"), "{s}");
        assert!(
            s.contains("<b>ok</b> <attr>"),
            "other tags are left alone: {s}"
        );
    }

    use super::*;

    fn table(n: usize) -> String {
        format!("| h{n} | x |\n|---|:-:|\n| a | b |\n")
    }

    #[test]
    fn keeps_three_tables_and_degrades_the_rest() {
        let text: String = (0..5)
            .map(|n| format!("{}\ntext {n}\n\n", table(n)))
            .collect();
        assert_eq!(count_tables(&text), 5);
        let clean = sanitize(&text, 3);
        assert_eq!(count_tables(&clean), 3);
        assert!(
            clean.contains("| h4 | x |"),
            "degraded tables keep their text"
        );
    }

    #[test]
    fn tables_in_code_fences_are_not_tables() {
        let text = format!("```\n{}```\n", table(1));
        assert_eq!(count_tables(&text), 0);
        assert_eq!(sanitize(&text, 0), text);
    }

    #[test]
    fn split_respects_budget_and_fences() {
        let text = format!("intro\n```rust\n{}```\nend\n", "let x = 1;\n".repeat(50));
        let pieces = split(&text, 120);
        assert!(pieces.len() > 1);
        for piece in &pieces {
            assert!(piece.len() <= 120, "{} bytes", piece.len());
            assert_eq!(
                piece.matches("```").count() % 2,
                0,
                "balanced fences in {piece:?}"
            );
        }
    }

    #[test]
    fn split_never_cuts_inside_a_char() {
        let text = "天".repeat(100);
        for piece in split(&text, 31) {
            assert!(piece.len() <= 31);
        }
    }
}

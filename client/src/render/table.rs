//! Markdown tables drawn with box characters, aligned by display width (so CJK
//! cells line up), or `None` when the table would not fit the terminal.

use super::markdown::inline;
use super::{BOLD, DIM, RESET, visible_width};

fn cells(row: &str) -> Vec<String> {
    let t = row.trim();
    let t = t.strip_prefix('|').unwrap_or(t);
    let t = t.strip_suffix('|').unwrap_or(t);
    t.split('|').map(|c| inline(c.trim())).collect()
}

fn is_separator(row: &str) -> bool {
    row.contains('-')
        && row
            .chars()
            .all(|c| matches!(c, '|' | '-' | ':' | ' ' | '\t'))
}

pub fn render(rows: &[String], width: usize) -> Option<Vec<String>> {
    let header_sep = rows.get(1).is_some_and(|r| is_separator(r));
    let body: Vec<Vec<String>> = rows
        .iter()
        .filter(|r| !is_separator(r))
        .map(|r| cells(r))
        .collect();
    let ncols = body.iter().map(Vec::len).max()?;
    let mut widths = vec![0; ncols];
    for row in &body {
        for (i, c) in row.iter().enumerate() {
            widths[i] = widths[i].max(visible_width(c));
        }
    }
    let total: usize = widths.iter().map(|w| w + 3).sum::<usize>() + 1;
    if total > width {
        return None;
    }
    let rule = |l: &str, m: &str, r: &str| {
        format!(
            "{DIM}{l}{}{r}{RESET}",
            widths
                .iter()
                .map(|w| "─".repeat(w + 2))
                .collect::<Vec<_>>()
                .join(m)
        )
    };
    let mut out = vec![rule("┌", "┬", "┐")];
    for (n, row) in body.iter().enumerate() {
        let mut line = format!("{DIM}│{RESET}");
        for (i, w) in widths.iter().enumerate() {
            let c = row.get(i).map_or("", String::as_str);
            let pad = " ".repeat(w - visible_width(c));
            let c = if n == 0 && header_sep {
                format!("{BOLD}{c}{RESET}")
            } else {
                c.to_string()
            };
            line.push_str(&format!(" {c}{pad} {DIM}│{RESET}"));
        }
        out.push(line);
        if n == 0 && header_sep && body.len() > 1 {
            out.push(rule("├", "┼", "┤"));
        }
    }
    out.push(rule("└", "┴", "┘"));
    Some(out)
}

//! Terminal output helpers: ANSI styles, display widths (CJK-aware), summaries,
//! and the streaming Markdown renderer in [`markdown`].

pub mod highlight;
pub mod markdown;
pub mod table;

use unicode_width::UnicodeWidthChar;
use weft_wire::states::Verdict;

pub const RESET: &str = "\x1b[0m";
pub const BOLD: &str = "\x1b[1m";
pub const DIM: &str = "\x1b[2m";
pub const ITALIC: &str = "\x1b[3m";
pub const UNDERLINE: &str = "\x1b[4m";
pub const STRIKE: &str = "\x1b[9m";
pub const RED: &str = "\x1b[31m";
pub const GREEN: &str = "\x1b[32m";
pub const YELLOW: &str = "\x1b[33m";
pub const BLUE: &str = "\x1b[34m";
pub const MAGENTA: &str = "\x1b[35m";
pub const CYAN: &str = "\x1b[36m";

/// Columns of the terminal on stdout (80 when unknown).
pub fn term_width() -> usize {
    terminal_size::terminal_size()
        .filter(|(w, _)| w.0 > 0)
        .map_or(80, |(w, _)| usize::from(w.0).max(20))
}

/// Display columns of `s`, ignoring ANSI escape sequences; wide (CJK) chars count 2.
pub fn visible_width(s: &str) -> usize {
    let mut width = 0;
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            width += c.width().unwrap_or(0);
        }
    }
    width
}

/// Terminal rows that `s` (one line, no newline) occupies in `cols` columns.
pub fn rows(s: &str, cols: usize) -> usize {
    visible_width(s).max(1).div_ceil(cols.max(1))
}

/// At most `max` display columns of `s`, with `…` when cut.
pub fn truncate(s: &str, max: usize) -> String {
    let s = s.replace(['\n', '\r', '\t'], " ");
    if visible_width(&s) <= max {
        return s;
    }
    let mut out = String::new();
    let mut w = 0;
    for c in s.chars() {
        let cw = c.width().unwrap_or(0);
        if w + cw + 1 > max {
            break;
        }
        w += cw;
        out.push(c);
    }
    out.push('…');
    out
}

/// How a decided approval reads: `✓ web_fetch approved by ana`.
pub fn decision_note(name: &str, decision: Verdict, by: Option<&str>) -> String {
    let mark = if decision == Verdict::Approved {
        "✓"
    } else {
        "✗"
    };
    let decision = decision.as_str();
    match by {
        Some(by) => format!("{mark} {name} {decision} by {by}"),
        None => format!("{mark} {name} {decision}"),
    }
}

/// How an answered question reads: `✓ answered by ana: blue`, or that
/// nobody answered in time.
pub fn answer_note(a: &weft_wire::fold::Answered) -> String {
    if a.status != weft_wire::states::QuestionStatus::Answered {
        return "✗ nobody answered in time".into();
    }
    match &a.by {
        Some(by) => format!("✓ answered by {by}: {}", a.answer.join(", ")),
        None => format!("✓ answered: {}", a.answer.join(", ")),
    }
}

/// How a plan was decided, as a one-line note.
pub fn plan_note(d: &weft_wire::fold::PlanDecided) -> String {
    use weft_wire::states::PlanStatus;
    let by =
        d.by.as_deref()
            .map(|b| format!(" by {b}"))
            .unwrap_or_default();
    match d.status {
        PlanStatus::Approved => format!("✓ plan approved{by}: carrying it out"),
        PlanStatus::Revised => format!(
            "↻ changes asked{by}: {}",
            d.comment.as_deref().unwrap_or_default()
        ),
        PlanStatus::Rejected => format!("✗ plan rejected{by}: nothing was carried out"),
        PlanStatus::Expired => {
            "✗ nobody decided on the plan in time: nothing was carried out".into()
        }
        PlanStatus::Proposed => "… the plan waits for a decision".into(),
    }
}

/// A task handed to another agent (`agent_start`), as a one-line note: the
/// agent, the task's first line, and how to watch it (`weft -r` on the
/// child's session attaches to its reply as it streams).
pub fn agent_start_note(d: &weft_wire::fold::Delegation) -> String {
    let line = d.task.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    let mut task: String = line.trim().chars().take(80).collect();
    if line.trim().chars().count() > 80 || d.task.trim().lines().count() > 1 {
        task.push('…');
    }
    format!(
        "↳ {} is on it: {task}  (watch: weft -r {})",
        d.agent, d.session_id
    )
}

/// How a delegated run ended (`agent_end`), as a one-line note.
pub fn agent_end_note(d: &weft_wire::fold::Delegation) -> String {
    use weft_wire::states::DelegationStatus;
    match d.status {
        DelegationStatus::Succeeded => format!("✓ {} answered", d.agent),
        DelegationStatus::Failed => format!("✗ {} failed", d.agent),
        DelegationStatus::Cancelled => format!("⏹ {}'s run was cancelled", d.agent),
        DelegationStatus::Running => format!("… {} is working", d.agent),
    }
}

/// A person's typed reply to a question as its answer: option numbers
/// (comma-separated when it takes several), else the text itself where a
/// typed answer is accepted; or why it cannot be.
pub fn parse_answer(q: &weft_wire::fold::Question, line: &str) -> Result<Vec<String>, String> {
    if line.is_empty() {
        return Err("type an answer".into());
    }
    let numbers: Option<Vec<usize>> = line
        .split(',')
        .map(|p| p.trim().parse::<usize>().ok())
        .collect();
    if let Some(numbers) = numbers.filter(|_| !q.options.is_empty()) {
        if numbers.len() > 1 && !q.multiple {
            return Err("pick one option".into());
        }
        return numbers
            .iter()
            .map(|n| {
                q.options
                    .get(n.wrapping_sub(1))
                    .cloned()
                    .ok_or_else(|| format!("there is no option {n}: 1 to {}", q.options.len()))
            })
            .collect();
    }
    if let Some(option) = q.options.iter().find(|o| o.eq_ignore_ascii_case(line)) {
        return Ok(vec![option.clone()]);
    }
    if q.options.is_empty() || q.allow_text {
        Ok(vec![line.to_string()])
    } else {
        Err(format!(
            "pick one of the options by its number (1 to {})",
            q.options.len()
        ))
    }
}

/// What a reply remembered of the person: "used 2 memories: prefers
/// answers in Chinese; works on payments" (each cut to 60 characters).
pub fn memories_note(memories: &[weft_wire::api::MemoryRef]) -> String {
    let texts: Vec<String> = memories
        .iter()
        .map(|m| {
            let mut t: String = m.text.chars().take(60).collect();
            if m.text.chars().count() > 60 {
                t.push('…');
            }
            t
        })
        .collect();
    let n = memories.len();
    let noun = if n == 1 { "memory" } else { "memories" };
    format!("🧠 used {n} {noun}: {}", texts.join("; "))
}

/// `todo 1/3` and the item in progress, if any: the list's progress in one line
/// (items dropped are not counted). Empty for no list.
pub fn todo_progress(items: &[weft_wire::api::TodoItem]) -> String {
    use weft_wire::api::TodoStatus;
    let kept: Vec<_> = items
        .iter()
        .filter(|i| i.status != TodoStatus::Cancelled)
        .collect();
    if kept.is_empty() {
        return String::new();
    }
    let done = kept.iter().filter(|i| i.status == TodoStatus::Done).count();
    let mut out = format!("todo {done}/{}", kept.len());
    if let Some(now) = kept.iter().find(|i| i.status == TodoStatus::InProgress) {
        out.push_str(&format!(" · now: {}", now.text));
    }
    out
}

/// The whole list, one item a line: `✓ 1. read`, `▸ 2. write` (in progress),
/// `· 3. send`, `✗ 4. print` (dropped).
pub fn todo_list(items: &[weft_wire::api::TodoItem]) -> String {
    use weft_wire::api::TodoStatus;
    items
        .iter()
        .map(|i| {
            let mark = match i.status {
                TodoStatus::Pending => "·",
                TodoStatus::InProgress => "▸",
                TodoStatus::Done => "✓",
                TodoStatus::Cancelled => "✗",
            };
            format!("  {mark} {}. {}", i.id, i.text)
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The documents a reply cites, under it: `Sources` and one line per `[n]`:
/// `[1] handbook.pdf — page 7`. Plain text (`styled = false`) for a pipe.
pub fn sources(citations: &[weft_wire::api::Citation], styled: bool) -> String {
    let (bold, dim, reset) = if styled {
        (BOLD, DIM, RESET)
    } else {
        ("", "", "")
    };
    let mut out = format!("{bold}Sources{reset}");
    for c in citations {
        out.push_str(&format!("\n  [{}] {}", c.n, c.document_name));
        if !c.position.is_empty() {
            out.push_str(&format!(" {dim}— {}{reset}", c.position));
        }
    }
    out
}

/// A one-line summary of tool arguments: `key=value` pairs, cut to `max` columns.
pub fn args_summary(args: &serde_json::Value, max: usize) -> String {
    let s = match args {
        serde_json::Value::Object(m) if m.is_empty() => String::new(),
        serde_json::Value::Object(m) => m
            .iter()
            .map(|(k, v)| match v {
                serde_json::Value::String(s) => format!("{k}={s}"),
                other => format!("{k}={other}"),
            })
            .collect::<Vec<_>>()
            .join(" "),
        serde_json::Value::Null => String::new(),
        other => other.to_string(),
    };
    truncate(&s, max)
}

/// A duration for people: `850ms`, `3.2s`, `2m05s`.
pub fn human_ms(ms: u64) -> String {
    match ms {
        0..1_000 => format!("{ms}ms"),
        1_000..60_000 => format!("{:.1}s", ms as f64 / 1000.0),
        _ => format!("{}m{:02}s", ms / 60_000, (ms / 1000) % 60),
    }
}

/// `still working… 3 min`: a run that has said nothing but heartbeats for
/// three minutes ([`weft_wire::fold::RunFold::still_working`]), `elapsed_ms`
/// into it.
pub fn still_working(elapsed_ms: u64) -> String {
    format!(
        "still working… {}",
        weft_wire::time::whole_minutes(elapsed_ms, "min", "h")
    )
}

/// `812 B`, `12.3 KiB`, `4.0 MiB`.
pub fn human_bytes(n: u64) -> String {
    const KIB: f64 = 1024.0;
    match n {
        0..1024 => format!("{n} B"),
        1024..1_048_576 => format!("{:.1} KiB", n as f64 / KIB),
        _ => format!("{:.1} MiB", n as f64 / (KIB * KIB)),
    }
}

/// How a message's file reads in history: `📎 shot.png (image, 12.3 KiB)`.
pub fn attachment_line(a: &weft_wire::api::AttachmentDto) -> String {
    let kind = match a.kind {
        weft_wire::api::AttachmentKind::Image => "image",
        weft_wire::api::AttachmentKind::Document => "document",
    };
    let line = format!("📎 {} ({kind}, {})", a.name, human_bytes(a.bytes));
    match &a.unreadable {
        Some(why) => format!("{line}: could not be read ({why})"),
        None => line,
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_delegation_is_a_line_when_it_starts_and_when_it_ends() {
        use weft_wire::states::DelegationStatus;
        let mut d = weft_wire::fold::Delegation {
            seq: 3,
            delegation_id: "dg_1".into(),
            step: 1,
            call_id: "c1".into(),
            agent: "researcher".into(),
            task: "find the Q3 numbers\nand their sources".into(),
            session_id: "s-child".into(),
            run_id: "r-child".into(),
            status: DelegationStatus::Running,
        };
        assert_eq!(
            super::agent_start_note(&d),
            "↳ researcher is on it: find the Q3 numbers…  (watch: weft -r s-child)"
        );
        d.task = "x".repeat(100);
        assert!(super::agent_start_note(&d).contains(&format!("{}…", "x".repeat(80))));
        let ends: Vec<String> = [
            DelegationStatus::Succeeded,
            DelegationStatus::Failed,
            DelegationStatus::Cancelled,
        ]
        .into_iter()
        .map(|status| {
            super::agent_end_note(&weft_wire::fold::Delegation {
                status,
                ..d.clone()
            })
        })
        .collect();
        assert_eq!(
            ends,
            [
                "✓ researcher answered",
                "✗ researcher failed",
                "⏹ researcher's run was cancelled"
            ]
        );
    }

    fn question(options: &[&str], multiple: bool, allow_text: bool) -> weft_wire::fold::Question {
        weft_wire::fold::Question {
            seq: 1,
            question_id: "q".into(),
            step: 1,
            call_id: "c".into(),
            question: "?".into(),
            options: options.iter().map(|o| o.to_string()).collect(),
            multiple,
            allow_text,
            expires_at: 0,
            answered: None,
        }
    }

    #[test]
    fn a_typed_reply_becomes_the_answer_a_question_takes() {
        let single = question(&["red", "blue"], false, false);
        assert_eq!(parse_answer(&single, "2"), Ok(vec!["blue".to_string()]));
        assert_eq!(parse_answer(&single, "Blue"), Ok(vec!["blue".to_string()]));
        assert!(
            parse_answer(&single, "1,2")
                .unwrap_err()
                .contains("one option")
        );
        assert!(
            parse_answer(&single, "3")
                .unwrap_err()
                .contains("no option 3")
        );
        assert!(parse_answer(&single, "0").is_err());
        assert!(
            parse_answer(&single, "green")
                .unwrap_err()
                .contains("by its number")
        );
        assert!(parse_answer(&single, "").is_err());
        let several = question(&["a", "b", "c"], true, true);
        assert_eq!(
            parse_answer(&several, "1, 3"),
            Ok(vec!["a".to_string(), "c".to_string()])
        );
        assert_eq!(parse_answer(&several, "d"), Ok(vec!["d".to_string()]));
        let free = question(&[], false, true);
        assert_eq!(parse_answer(&free, "42"), Ok(vec!["42".to_string()]));
    }

    use super::*;

    #[test]
    fn unreadable_documents_say_why() {
        let a = weft_wire::api::AttachmentDto {
            id: "f".into(),
            name: "loop.pdf".into(),
            kind: weft_wire::api::AttachmentKind::Document,
            mime: "application/pdf".into(),
            bytes: 636,
            unreadable: Some("it is nested too deeply to read".into()),
        };
        assert_eq!(
            attachment_line(&a),
            "📎 loop.pdf (document, 636 B): could not be read (it is nested too deeply to read)"
        );
    }

    #[test]
    fn a_long_silence_reads_in_whole_minutes() {
        assert_eq!(still_working(185_000), "still working… 3 min");
        assert_eq!(still_working(12 * 60_000 + 59_999), "still working… 12 min");
        assert_eq!(still_working(65 * 60_000), "still working… 1 h 5 min");
    }

    #[test]
    fn sizes_read_in_binary_units() {
        assert_eq!(human_bytes(812), "812 B");
        assert_eq!(human_bytes(12_595), "12.3 KiB");
        assert_eq!(human_bytes(4 << 20), "4.0 MiB");
    }

    #[test]
    fn widths_count_cjk_as_two_and_skip_escapes() {
        assert_eq!(visible_width("\x1b[1m你好\x1b[0m ab"), 7);
        assert_eq!(rows("你好你好", 4), 2);
        assert_eq!(truncate("你好世界", 5), "你好…");
        assert_eq!(
            args_summary(&serde_json::json!({"url":"http://x","n":2}), 80),
            "n=2 url=http://x"
        );
    }
}

//! How a long text is shown to the model: its head, cut on a character
//! boundary, and a line saying what was left out — with a pointer to the rest
//! where the rest is stored (a tool's output, `read_output`; a document of the
//! conversation, `file_<id>`).

/// At most `max` bytes of `s`, ending on a character boundary.
pub(crate) fn cut(s: &str, max: usize) -> &str {
    let mut end = max.min(s.len());
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// The head of `content` within `cap` bytes, and where to read on (`id`).
pub(crate) fn head_with_pointer(content: &str, cap: usize, id: &str) -> String {
    let head = cut(content, cap);
    format!(
        "{head}\n\n[output truncated: showing {} of {} bytes. The rest is stored: call read_output with {{\"id\": \"{id}\", \"offset\": {}}} to read on.]",
        head.len(),
        content.len(),
        head.len()
    )
}

/// The head of `content` within `cap` bytes, and how much was left out.
pub(crate) fn head_only(content: &str, cap: usize) -> String {
    let head = cut(content, cap);
    format!(
        "{head}\n\n[output truncated: showing {} of {} bytes]",
        head.len(),
        content.len()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heads_cut_on_char_boundaries_and_point_at_the_rest() {
        let s = "é".repeat(100); // 200 bytes
        let out = head_with_pointer(&s, 11, "out_1");
        assert!(out.starts_with(&"é".repeat(5)));
        assert!(out.contains("showing 10 of 200 bytes"), "{out}");
        assert!(out.contains(r#"{"id": "out_1", "offset": 10}"#), "{out}");
        assert!(head_only(&s, 3).contains("showing 2 of 200"));
    }
}

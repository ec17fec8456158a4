//! What the gateway sends, made safe for a terminal as it is decoded.
//!
//! Model output, tool names, arguments and outputs, session titles and error
//! messages are text someone else chose (a prompt-injected web page, a hostile
//! MCP server, another user's title). Printed raw, an escape sequence in it can
//! retitle the window (`ESC ] 0 ; … BEL`), clear the screen (`ESC [ 2 J`), hide or
//! rewrite what was shown above (cursor moves, `\r`), plant a clickable link
//! (OSC 8) or, on some terminals, write to the clipboard (OSC 52).
//!
//! So every string of every answer is cleaned once, where it is decoded
//! ([`decode`]: API bodies and run events alike): escape sequences are removed
//! whole (CSI, OSC/DCS/SOS/PM/APC strings to their terminator, two-byte
//! escapes), as are the other C0 controls, DEL and the C1 controls (U+0080–U+009F,
//! which some terminals obey as escapes too). Newlines and tabs stay. The
//! client's own styling is added after, by the renderers, so it is untouched —
//! and no print site can forget the rule.

use std::borrow::Cow;
use std::iter::Peekable;
use std::str::Chars;

use serde::de::DeserializeOwned;
use serde_json::Value;

/// `json` (an answer's body or an event's data) decoded after every string in
/// it — object keys too — is [`text`]-cleaned.
pub fn decode<T: DeserializeOwned>(json: &str) -> serde_json::Result<T> {
    let mut value: Value = serde_json::from_str(json)?;
    clean_value(&mut value);
    serde_json::from_value(value)
}

/// Every string in `value`, keys included, through [`text`].
pub fn clean_value(value: &mut Value) {
    match value {
        Value::String(s) => {
            if let Cow::Owned(clean) = text(s) {
                *s = clean;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(clean_value),
        Value::Object(map) => {
            let entries = std::mem::take(map);
            for (k, mut v) in entries {
                clean_value(&mut v);
                map.insert(text(&k).into_owned(), v);
            }
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

/// `s` without terminal control: escape sequences removed whole, other control
/// characters dropped; `\n` and `\t` kept.
pub fn text(s: &str) -> Cow<'_, str> {
    if !s.chars().any(|c| is_control(c) && c != '\n' && c != '\t') {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\n' | '\t' => out.push(c),
            '\x1b' => skip_escape(&mut chars),
            '\u{9b}' => skip_csi(&mut chars),
            // C1 OSC, DCS, SOS, PM, APC: a string up to its terminator.
            '\u{9d}' | '\u{90}' | '\u{98}' | '\u{9e}' | '\u{9f}' => skip_string(&mut chars),
            c if is_control(c) => {}
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// C0 (U+0000–U+001F), DEL and C1 (U+0080–U+009F).
fn is_control(c: char) -> bool {
    matches!(c, '\0'..='\x1f' | '\x7f'..='\u{9f}')
}

/// After an ESC: the rest of its sequence.
fn skip_escape(chars: &mut Peekable<Chars<'_>>) {
    match chars.peek().copied() {
        Some('[') => {
            chars.next();
            skip_csi(chars);
        }
        Some(']' | 'P' | 'X' | '^' | '_') => {
            chars.next();
            skip_string(chars);
        }
        // nF escapes: intermediates (space to `/`), then one final byte.
        Some('\x20'..='\x2f') => {
            while chars.next_if(|c| matches!(c, '\x20'..='\x2f')).is_some() {}
            chars.next_if(|c| matches!(c, '\x30'..='\x7e'));
        }
        // Two-byte escapes (ESC c, ESC 7, ESC M …).
        Some('\x30'..='\x7e') => {
            chars.next();
        }
        _ => {}
    }
}

/// A control sequence's parameters and intermediates, then its final byte.
fn skip_csi(chars: &mut Peekable<Chars<'_>>) {
    while chars.next_if(|c| matches!(c, '\x20'..='\x3f')).is_some() {}
    chars.next_if(|c| matches!(c, '\x40'..='\x7e'));
}

/// An OSC/DCS/… string: up to BEL, ST (`ESC \` or U+009C), or the end of the text
/// (an unterminated one takes the rest with it: it was never meant to be read).
fn skip_string(chars: &mut Peekable<Chars<'_>>) {
    while let Some(c) = chars.next() {
        match c {
            '\x07' | '\u{9c}' => return,
            '\x1b' => {
                chars.next_if_eq(&'\\');
                return;
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_and_controls_go_newlines_and_tabs_stay() {
        let cases = [
            ("\x1b]0;pwned\x07title", "title"),
            ("a\x1b[2Jb", "ab"),
            ("\x1b[31;1mred\x1b[0m", "red"),
            ("\x1b]8;;http://evil/\x1b\\click\x1b]8;;\x1b\\", "click"),
            ("\x1b]52;c;ZXZpbA==\x07copied", "copied"),
            ("line\r\x1b[2Kover", "lineover"),
            ("\u{9b}2Jc1 csi", "c1 csi"),
            ("\u{9d}0;t\u{9c}c1 osc", "c1 osc"),
            ("keep\ttabs\nand lines", "keep\ttabs\nand lines"),
            ("bell\x07 nul\0 del\x7f bs\x08", "bell nul del bs"),
            ("\x1bcreset", "reset"),
            ("\x1b(Bcharset", "charset"),
            ("unterminated \x1b]0;rest", "unterminated "),
            ("trailing \x1b", "trailing "),
            ("你好 ✓ é", "你好 ✓ é"),
        ];
        for (raw, want) in cases {
            assert_eq!(text(raw), want, "{raw:?}");
            assert!(!text(raw).chars().any(|c| c == '\x1b'), "{raw:?}");
        }
        assert!(matches!(text("plain"), Cow::Borrowed(_)));
    }

    #[test]
    fn every_string_of_an_answer_is_cleaned_keys_too() {
        let raw = r#"{"type":"tool_start","name":"x\u001b]0;t\u0007y","args":{"k\u001b[2J":["v\u009b1m",{"n":1}]}}"#;
        let v: Value = decode(raw).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"type":"tool_start","name":"xy","args":{"k":["v",{"n":1}]}})
        );
    }

    #[test]
    fn run_events_are_decoded_clean() {
        let raw = r#"{"run_id":"r","seq":1,"ts":0,"type":"text","step":1,"delta":"hi \u001b]0;pwned\u0007\u001b[2Jthere"}"#;
        let ev: weft_wire::event::RunEvent = decode(raw).unwrap();
        match ev.kind {
            weft_wire::event::EventKind::Text { delta, .. } => assert_eq!(delta, "hi there"),
            other => panic!("{other:?}"),
        }
    }
}

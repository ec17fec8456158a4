//! Words for the lexical index. Both indexes (SQLite FTS5's `unicode61`
//! tokenizer, Postgres' `simple` text search configuration) split words at
//! spaces and punctuation, which leaves Chinese and Japanese — written without
//! spaces — as one "word" per sentence, so a query for 密码 would never match
//! 如何重置密码. The text is therefore cut into words here, the same way for the
//! stored chunk and for the query, and handed to the index space-separated:
//!
//! - Han runs: jieba's search mode (words and the shorter words inside them:
//!   重置密码 → 重置, 密码), jieba being the maintained segmenter for Chinese.
//!   Japanese kanji runs go the same way, which cuts them into plausible words.
//! - Kana and Hangul runs: overlapping character pairs (パスワード → パス, スワ,
//!   ワー, ード), the usual fallback where no dictionary is at hand: a query's
//!   pairs are a subset of a document's whenever the query's text occurs in it.
//! - Everything else: runs of letters and digits, lower-cased.
//!
//! jieba's dictionary takes a few tens of megabytes and a fraction of a second
//! to load: it is loaded on the first text that has Han characters in it.

use std::sync::OnceLock;

use jieba_rs::Jieba;

fn jieba() -> &'static Jieba {
    static JIEBA: OnceLock<Jieba> = OnceLock::new();
    JIEBA.get_or_init(Jieba::new)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Script {
    Han,
    /// Kana and Hangul: cut into pairs.
    Syllabic,
    /// Letters and digits of alphabets.
    Word,
    Other,
}

fn script(c: char) -> Script {
    match c as u32 {
        0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF | 0x20000..=0x2FA1F => Script::Han,
        // Hiragana, Katakana (with the prolonged sound mark), Hangul syllables and jamo.
        0x3040..=0x30FF | 0x31F0..=0x31FF | 0xAC00..=0xD7AF | 0x1100..=0x11FF | 0x3130..=0x318F => {
            Script::Syllabic
        }
        _ if c.is_alphanumeric() => Script::Word,
        _ => Script::Other,
    }
}

/// The words of `text`, in order, lower-cased (repeats kept: they weigh in
/// the index's ranking).
pub fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut run = String::new();
    let mut run_script = Script::Other;
    for c in text.chars() {
        let s = script(c);
        if s != run_script && !run.is_empty() {
            emit(&run, run_script, &mut out);
            run.clear();
        }
        run_script = s;
        if s != Script::Other {
            run.push(c);
        }
    }
    if !run.is_empty() {
        emit(&run, run_script, &mut out);
    }
    out
}

fn emit(run: &str, script: Script, out: &mut Vec<String>) {
    match script {
        Script::Han => out.extend(
            jieba()
                .cut_for_search(run, true)
                .into_iter()
                .map(|token| token.word)
                .filter(|w| w.chars().any(|c| self::script(c) != Script::Other))
                .map(str::to_owned),
        ),
        Script::Syllabic => {
            let chars: Vec<char> = run.chars().collect();
            if chars.len() == 1 {
                out.push(run.to_owned());
            }
            out.extend(chars.windows(2).map(|pair| pair.iter().collect()));
        }
        Script::Word => out.push(run.to_lowercase()),
        Script::Other => {}
    }
}

/// `text` as the lexical index stores it: its words, space-separated.
pub fn lexical(text: &str) -> String {
    words(text).join(" ")
}

/// The distinct words of a query, at most `max`, in order: a search matches
/// any of them and ranks chunks by how well they match.
pub fn query_terms(query: &str, max: usize) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    words(query)
        .into_iter()
        .filter(|w| seen.insert(w.clone()))
        .take(max)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latin_words_are_lower_cased_runs_of_letters_and_digits() {
        assert_eq!(
            words("Reset the VPN-password (v2.1)!"),
            ["reset", "the", "vpn", "password", "v2", "1"]
        );
    }

    #[test]
    fn chinese_is_cut_into_words_the_query_shares() {
        let doc = words("如何重置公司邮箱的密码");
        for w in ["重置", "密码", "邮箱"] {
            assert!(doc.iter().any(|d| d == w), "{w} in {doc:?}");
        }
        let query = query_terms("重置密码", 8);
        assert!(query.iter().all(|q| doc.contains(q)), "{query:?} ⊂ {doc:?}");
    }

    #[test]
    fn kana_and_hangul_become_pairs_a_query_shares() {
        let doc = words("パスワードを変更する");
        let query = words("パスワード");
        assert!(query.iter().all(|q| doc.contains(q)), "{query:?} ⊂ {doc:?}");
        assert!(words("비밀번호 변경").contains(&"밀번".to_string()));
        assert_eq!(words("の"), ["の"]);
    }

    #[test]
    fn mixed_scripts_split_where_the_script_changes() {
        assert_eq!(words("用VPN连接"), ["用", "vpn", "连接"]);
    }

    #[test]
    fn query_terms_are_distinct_and_capped() {
        assert_eq!(query_terms("a b a c d", 3), ["a", "b", "c"]);
        assert!(query_terms("!!! ...", 8).is_empty());
    }
}

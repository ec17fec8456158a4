//! What a message typed in the chat answers, read against the open question:
//! an option named in full, option numbers (`2`, `1,3`, `1 3`, `1、3`),
//! several options named (`red, blue`, when several may be chosen), else the
//! text itself when the question takes a typed answer. Pure, so every rule is a
//! unit test; the store checks the answer once more ([`Question::accept`]).

use weft_lark::text::{Lang, say};
use weft_store::Question;

/// What a typed message says to a question.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(in crate::lark) enum Reading {
    /// The answer to record.
    Answer(Vec<String>),
    /// Not an answer this question takes.
    Problem(Problem),
}

/// Why a typed message is not an answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(in crate::lark) enum Problem {
    /// A number past the options (and no typed answer is taken).
    NoSuchOption(u64),
    /// Several options for a question that takes one.
    OneAnswerOnly,
    /// Not one of the options (and no typed answer is taken).
    NotAnOption(String),
}

impl Problem {
    /// Why, in `lang`.
    pub(in crate::lark) fn say(&self, lang: Lang) -> String {
        match self {
            Problem::NoSuchOption(n) => say::no_such_option(lang, *n),
            Problem::OneAnswerOnly => say::one_answer_only(lang).to_owned(),
            Problem::NotAnOption(text) => say::not_an_option(lang, text),
        }
    }
}

/// Characters of a refused text quoted back.
const QUOTED: usize = 100;

/// Reads `text` as an answer to `question`.
pub(in crate::lark) fn read(text: &str, question: &Question) -> Reading {
    let text = text.trim();
    let options = &question.options;
    if options.is_empty() {
        return Reading::Answer(vec![text.to_owned()]);
    }
    if let Some(option) = named(question, text) {
        return Reading::Answer(vec![option.to_owned()]);
    }
    if let Some(numbers) = numbers(text) {
        let past = numbers
            .iter()
            .find(|n| **n == 0 || **n > options.len() as u64);
        return match past {
            // "42" may well be the answer itself.
            Some(_) if question.allow_text => Reading::Answer(vec![text.to_owned()]),
            Some(n) => Reading::Problem(Problem::NoSuchOption(*n)),
            None => {
                let chosen = distinct(numbers.iter().map(|n| &options[*n as usize - 1]));
                if chosen.len() > 1 && !question.multiple {
                    Reading::Problem(Problem::OneAnswerOnly)
                } else {
                    Reading::Answer(chosen)
                }
            }
        };
    }
    if question.multiple {
        let names: Vec<&str> = text
            .split([',', '，', '、', ';', '；'])
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .collect();
        let found: Option<Vec<&String>> = names.iter().map(|n| named(question, n)).collect();
        if let Some(found) = found.filter(|f| f.len() > 1) {
            return Reading::Answer(distinct(found.into_iter()));
        }
    }
    if question.allow_text {
        return Reading::Answer(vec![text.to_owned()]);
    }
    let mut quoted: String = text.chars().take(QUOTED).collect();
    if text.chars().count() > QUOTED {
        quoted.push('…');
    }
    Reading::Problem(Problem::NotAnOption(quoted))
}

/// Whether `text` names one of `question`'s options in full (such a reply is
/// an answer even when it is also a stop word: `取消` may be an option).
pub(in crate::lark) fn names_option(question: &Question, text: &str) -> bool {
    named(question, text.trim()).is_some()
}

/// The option `text` names, ignoring case.
fn named<'q>(question: &'q Question, text: &str) -> Option<&'q String> {
    let text = text.trim();
    question
        .options
        .iter()
        .find(|o| o.trim().to_lowercase() == text.to_lowercase())
}

/// `text` as option numbers (`2`, `1,3`, `1 3`, `1、3`, `2.`), when it is
/// nothing else.
fn numbers(text: &str) -> Option<Vec<u64>> {
    let pieces: Vec<&str> = text
        .split(|c: char| c.is_whitespace() || [',', '，', '、', ';', '；'].contains(&c))
        .map(|p| p.trim_end_matches(['.', '。']))
        .filter(|p| !p.is_empty())
        .collect();
    if pieces.is_empty() {
        return None;
    }
    pieces.iter().map(|p| p.parse::<u64>().ok()).collect()
}

/// The options in the order first chosen, each once.
fn distinct<'a>(chosen: impl Iterator<Item = &'a String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for option in chosen {
        if !out.contains(option) {
            out.push(option.clone());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use weft_shared::ids::{RunId, SessionId, UserId};
    use weft_store::QuestionStatus;

    use super::*;

    fn question(options: &[&str], multiple: bool, allow_text: bool) -> Question {
        Question {
            id: "q_1".into(),
            run_id: RunId("r".into()),
            session_id: SessionId("s".into()),
            user_id: UserId("u".into()),
            step: 1,
            call_id: "c".into(),
            question: "Which colour?".into(),
            options: options.iter().map(|o| o.to_string()).collect(),
            multiple,
            allow_text,
            status: QuestionStatus::Pending,
            answer: Vec::new(),
            answered_by: None,
            answer_key: None,
            announced: false,
            created_at: 0,
            expires_at: 0,
            answered_at: None,
        }
    }

    fn answer(list: &[&str]) -> Reading {
        Reading::Answer(list.iter().map(|a| a.to_string()).collect())
    }

    #[test]
    fn numbers_and_names_pick_options() {
        let one = question(&["red", "blue"], false, false);
        assert_eq!(read("2", &one), answer(&["blue"]));
        assert_eq!(read(" 1. ", &one), answer(&["red"]));
        assert_eq!(read("Blue", &one), answer(&["blue"]));
        assert_eq!(read("2, 2", &one), answer(&["blue"]));
        let several = question(&["a", "b", "c"], true, false);
        assert_eq!(read("1,3", &several), answer(&["a", "c"]));
        assert_eq!(read("3 1", &several), answer(&["c", "a"]));
        assert_eq!(read("1、3", &several), answer(&["a", "c"]));
        assert_eq!(read("A, c", &several), answer(&["a", "c"]));
        assert_eq!(read("b", &several), answer(&["b"]));
    }

    #[test]
    fn what_an_options_only_question_does_not_take_is_a_problem() {
        let one = question(&["red", "blue"], false, false);
        assert_eq!(read("3", &one), Reading::Problem(Problem::NoSuchOption(3)));
        assert_eq!(read("0", &one), Reading::Problem(Problem::NoSuchOption(0)));
        assert_eq!(read("1,2", &one), Reading::Problem(Problem::OneAnswerOnly));
        assert_eq!(
            read("purple", &one),
            Reading::Problem(Problem::NotAnOption("purple".into()))
        );
        let several = question(&["a", "b"], true, false);
        assert_eq!(
            read("a, z", &several),
            Reading::Problem(Problem::NotAnOption("a, z".into()))
        );
        assert_eq!(
            Problem::NotAnOption("purple".into()).say(Lang::En),
            "“purple” is not one of the options"
        );
        assert_eq!(Problem::NoSuchOption(3).say(Lang::Zh), "没有选项 3");
    }

    #[test]
    fn a_typed_answer_is_taken_where_allowed() {
        let open = question(&["red", "blue"], false, true);
        assert_eq!(read("green, please", &open), answer(&["green, please"]));
        assert_eq!(read("42", &open), answer(&["42"]));
        assert_eq!(read("2", &open), answer(&["blue"]), "a number still picks");
        let free = question(&[], false, true);
        assert_eq!(read(" 2 ", &free), answer(&["2"]));
        assert!(names_option(&open, " RED "));
        assert!(!names_option(&open, "stop"));
    }
}

//! What the bot says, in the languages it speaks: Chinese and English.
//!
//! A chat is answered in the language its people write in. [`Lang::detect`]
//! reads it off a message — any CJK ideograph means Chinese, Latin letters
//! without one mean English — and a message that tells neither (an emoji, a
//! number, a picture) gets the tenant's language, [`Lang::tenant`]: the
//! operator's `[lark] language`, or for `auto` the platform's (Feishu,
//! `open.feishu.cn`, is Chinese; Lark, `open.larksuite.com`, English).
//!
//! Every fixed text is a [`Text`], so a text without its translation does not
//! compile: the `match` in [`Text::get`] has to name both. Texts with values in
//! them are the functions of [`say`]. The card builders of [`crate::card`] and
//! the bot's notices all take their words from here.

pub mod say;
mod table;

pub use table::Text;

/// A language the bot answers in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Lang {
    En,
    Zh,
}

impl Lang {
    /// The language `text` is written in: Chinese when it has a CJK ideograph,
    /// English when it has Latin letters and no ideograph, `None` when it has
    /// neither (emoji, digits, punctuation, nothing).
    pub fn detect(text: &str) -> Option<Lang> {
        let mut latin = false;
        for c in text.chars() {
            if is_cjk_ideograph(c) {
                return Some(Lang::Zh);
            }
            latin |= c.is_ascii_alphabetic();
        }
        latin.then_some(Lang::En)
    }

    /// The language of `text`, else `fallback` (the tenant's).
    pub fn of(text: &str, fallback: Lang) -> Lang {
        Lang::detect(text).unwrap_or(fallback)
    }

    /// The tenant's language: `fixed` when the operator chose one, else the
    /// platform's, read off the API's base URL (Feishu is Chinese, Lark and
    /// anything else English).
    pub fn tenant(fixed: Option<Lang>, base_url: &str) -> Lang {
        fixed.unwrap_or_else(|| {
            let host = base_url
                .split_once("://")
                .map_or(base_url, |(_, rest)| rest)
                .split(['/', ':', '?'])
                .next()
                .unwrap_or_default()
                .to_ascii_lowercase();
            if host == "feishu.cn" || host.ends_with(".feishu.cn") {
                Lang::Zh
            } else {
                Lang::En
            }
        })
    }

    /// `zh` or `en` (as in the `[lark] language` setting).
    pub fn parse(code: &str) -> Option<Lang> {
        match code.trim().to_ascii_lowercase().as_str() {
            "zh" => Some(Lang::Zh),
            "en" => Some(Lang::En),
            _ => None,
        }
    }

    pub fn code(self) -> &'static str {
        match self {
            Lang::En => "en",
            Lang::Zh => "zh",
        }
    }

    /// `en` or `zh`, whichever this language is.
    pub fn pick<'a>(self, en: &'a str, zh: &'a str) -> &'a str {
        match self {
            Lang::En => en,
            Lang::Zh => zh,
        }
    }

    /// The fixed text `text` in this language.
    pub fn text(self, text: Text) -> &'static str {
        text.get(self)
    }
}

/// CJK Unified Ideographs and their extension A, and the compatibility block:
/// what Chinese is written in (kana and hangul alone are not Chinese).
fn is_cjk_ideograph(c: char) -> bool {
    matches!(c, '\u{4e00}'..='\u{9fff}' | '\u{3400}'..='\u{4dbf}' | '\u{f900}'..='\u{faff}')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_language_follows_the_words() {
        assert_eq!(Lang::detect("停"), Some(Lang::Zh));
        assert_eq!(Lang::detect("帮我翻译 hello world"), Some(Lang::Zh));
        assert_eq!(Lang::detect("stop"), Some(Lang::En));
        assert_eq!(Lang::detect("@mock.tokens 40"), Some(Lang::En));
        for neither in ["", "👍", "1 + 1 = ?", "   ", "こんにちは"] {
            assert_eq!(Lang::detect(neither), None, "{neither:?}");
        }
        assert_eq!(Lang::of("👍", Lang::Zh), Lang::Zh);
        assert_eq!(Lang::of("ok 👍", Lang::Zh), Lang::En);
    }

    #[test]
    fn the_tenant_language_is_the_setting_else_the_platform() {
        assert_eq!(Lang::tenant(None, "https://open.feishu.cn"), Lang::Zh);
        assert_eq!(Lang::tenant(None, "https://open.feishu.cn/"), Lang::Zh);
        assert_eq!(Lang::tenant(None, "https://open.larksuite.com"), Lang::En);
        assert_eq!(Lang::tenant(None, "http://127.0.0.1:9999"), Lang::En);
        assert_eq!(Lang::tenant(None, "https://notfeishu.cn"), Lang::En);
        assert_eq!(
            Lang::tenant(Some(Lang::Zh), "https://open.larksuite.com"),
            Lang::Zh
        );
        assert_eq!(Lang::parse(" ZH "), Some(Lang::Zh));
        assert_eq!(Lang::parse("auto"), None);
    }
}

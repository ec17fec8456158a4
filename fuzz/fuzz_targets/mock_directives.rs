//! The `@mock.*` directive parser reads every user message sent to the mock
//! model (the default model of a fresh install): any text parses or is refused
//! with an error, never a panic, and what it accepts stays within the bounds.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = weft_llm::mockscript::parse(text);
        let _ = weft_llm::mockscript::tokens(text);
    }
});

//! `weft_files::detect` on any bytes under any name: it runs in the gateway's
//! own process (on the blocking pool), so it must never panic, hang or blow up.
#![no_main]

use libfuzzer_sys::fuzz_target;

const NAMES: [&str; 6] = ["a.pdf", "a.docx", "a.md", "a.json", "a.png", "a"];

fuzz_target!(|data: &[u8]| {
    let Some((&pick, bytes)) = data.split_first() else {
        return;
    };
    let name = NAMES[usize::from(pick) % NAMES.len()];
    let declared = [None, Some("application/pdf"), Some("image/png"), Some("text/plain")]
        [usize::from(pick >> 4) % 4];
    if let Ok(found) = weft_files::detect(name, declared, bytes) {
        assert!(weft_files::Detected::from_mime(found.mime).is_some());
    }
});

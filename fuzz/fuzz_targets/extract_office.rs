//! The parsers Weft wrote itself (DOCX, PPTX paragraphs and slides; XLSX
//! through calamine under our inflation budget; text): no panic escapes, and
//! output stays under the text cap. PDF and HTML are left out on purpose:
//! pdf-extract and htmd recurse without a bound on hostile input, which is why
//! they only ever run inside a limited `weft extract` child (weft_files::isolate).
#![no_main]

use libfuzzer_sys::fuzz_target;
use weft_files::Job;

fuzz_target!(|data: &[u8]| {
    let Some((&pick, bytes)) = data.split_first() else {
        return;
    };
    let job = [Job::Docx, Job::Pptx, Job::Xlsx, Job::Text][usize::from(pick) % 4];
    if let Ok(text) = job.run(bytes) {
        assert!(text.len() <= weft_files::isolate::TEXT_CAP + (1 << 20));
    }
});

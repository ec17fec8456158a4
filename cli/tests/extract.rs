//! `weft extract`: every hostile file of `weft_files::hostile` is read in a
//! child of the real binary, which dies or refuses — and this process, which
//! plays the server, carries on. Ordinary files read as they always did.

use std::time::{Duration, Instant};

use weft_files::{Detected, Extractor, Failure, Job, Limits, hostile, samples};

fn extractor(timeout_secs: u64, memory_mib: u64) -> Extractor {
    Extractor::child_process(
        env!("CARGO_BIN_EXE_weft"),
        ["extract"],
        Limits {
            timeout: Duration::from_secs(timeout_secs),
            memory_bytes: memory_mib << 20,
        },
    )
}

fn detected(name: &str, bytes: &[u8]) -> Detected {
    weft_files::detect(name, None, bytes).unwrap_or_else(|e| panic!("{name}: {e}"))
}

#[tokio::test]
async fn ordinary_documents_read_as_before() {
    let ex = extractor(20, 1024);
    let pdf = samples::pdf(&["Quarterly report", "Revenue grew"]);
    let text = ex.run(Job::Pdf, pdf.into()).await.unwrap();
    assert!(
        text.contains("Quarterly report") && text.contains("Revenue grew"),
        "{text:?}"
    );
    let docx = samples::docx(&["first paragraph", "second"]);
    let text = ex
        .document(&detected("a.docx", &docx), docx.into())
        .await
        .unwrap();
    assert_eq!(text.trim(), "first paragraph\nsecond");
    let page = "<html><head><title>Hi</title></head><body><h1>Head</h1><p>Body <b>bold</b></p></body></html>";
    let md = ex
        .run(Job::Html, page.as_bytes().to_vec().into())
        .await
        .unwrap();
    assert!(md.contains("# Head") && md.contains("**bold**"), "{md}");
    // What the parser refuses comes back as its reason, not as a crash.
    let err = ex
        .run(Job::Pdf, b"%PDF-1.4 not really".to_vec().into())
        .await;
    assert!(matches!(err, Err(Failure::Unreadable(_))), "{err:?}");
}

#[tokio::test]
async fn a_self_drawing_form_overflows_the_childs_stack_only() {
    let ex = extractor(20, 1024);
    let err = ex.run(Job::Pdf, hostile::self_drawing_pdf().into()).await;
    assert!(
        matches!(err, Err(Failure::TooDeep | Failure::Crashed)),
        "{err:?}"
    );
}

#[tokio::test]
async fn a_fan_out_of_forms_is_stopped_by_the_time_limit() {
    let ex = extractor(2, 1024);
    let started = Instant::now();
    let err = ex.run(Job::Pdf, hostile::fan_out_pdf(48).into()).await;
    assert_eq!(err, Err(Failure::TimedOut(2)));
    // Killed, not waited out: far below the 2^48 draws it asked for.
    assert!(started.elapsed() < Duration::from_secs(30));
}

#[tokio::test]
async fn a_flate_bomb_is_stopped_by_the_memory_limit() {
    let ex = extractor(20, 256);
    let bomb = hostile::flate_bomb_pdf();
    assert!(bomb.len() < 64 << 10, "the bomb is {} bytes", bomb.len());
    let err = ex.run(Job::Pdf, bomb.into()).await;
    assert!(
        matches!(
            err,
            Err(Failure::TooMuchMemory(256) | Failure::Unreadable(_))
        ),
        "{err:?}"
    );
}

#[tokio::test]
async fn deep_html_kills_its_reader_not_the_caller() {
    let ex = extractor(5, 1024);
    let page = hostile::deep_html(300_000).into_bytes();
    let err = ex.run(Job::Html, page.into()).await;
    // htmd either recurses past the stack or grinds: both end in the child.
    assert!(
        matches!(
            err,
            Err(Failure::TooDeep | Failure::Crashed | Failure::TimedOut(_))
        ),
        "{err:?}"
    );
}

#[tokio::test]
async fn huge_office_structures_read_in_linear_time() {
    let ex = extractor(20, 1024);
    let deck = hostile::quadratic_pptx(40_000);
    let det = detected("slides.pptx", &deck);
    let text = ex.document(&det, deck.into()).await.unwrap();
    assert_eq!(text.matches("## Slide").count(), 40_000);
    let docx = hostile::many_entry_docx(60_000);
    let started = Instant::now();
    let det = detected("entries.docx", &docx);
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "detection took {:?}",
        started.elapsed()
    );
    let text = ex.document(&det, docx.into()).await.unwrap();
    assert_eq!(text.trim(), "many entries");
}

#[tokio::test]
async fn zip_bombs_and_entities_are_refused_with_a_reason() {
    let ex = extractor(20, 1024);
    let bomb = hostile::zip_bomb_docx(80 << 20);
    let err = ex
        .document(&detected("bomb.docx", &bomb), bomb.into())
        .await;
    match err {
        Err(Failure::Unreadable(reason)) => assert!(reason.contains("64 MiB"), "{reason}"),
        other => panic!("{other:?}"),
    }
    let laughs = hostile::entity_docx();
    let read = ex
        .document(&detected("laughs.docx", &laughs), laughs.into())
        .await;
    // Either refused or read without expanding: never a billion "lol"s.
    if let Ok(text) = read {
        assert!(text.len() < 1 << 20, "{} bytes", text.len());
    }
}

#[test]
fn the_subcommand_documents_itself() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_weft"))
        .args(["extract", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{help}");
    assert!(
        help.contains("--memory-bytes") && help.contains("weft extract pdf < report.pdf"),
        "{help}"
    );
}

//! The text a model receives from each document type, and what happens with
//! damaged and hostile files.

use weft_files::samples as common;

use weft_files::{Detected, Refused, detect, extract_text, mime, truncate};

fn text_of(name: &str, bytes: &[u8]) -> String {
    let det = detect(name, None, bytes).unwrap_or_else(|e| panic!("{e}"));
    extract_text(&det, name, bytes).unwrap_or_else(|e| panic!("{e}"))
}

fn unreadable(det_mime: &str, name: &str, bytes: &[u8]) -> String {
    let det = Detected::from_mime(det_mime).unwrap();
    match extract_text(&det, name, bytes) {
        Err(Refused::Unreadable { reason, .. }) => reason,
        other => panic!("{name} was not unreadable: {other:?}"),
    }
}

const SENTENCE: &str = "The quick brown fox jumps over the lazy dog.";

#[test]
fn a_pdf_gives_its_sentences() {
    let pdf = common::pdf(&[SENTENCE, "Second line, 42 items."]);
    let text = text_of("report.pdf", &pdf);
    assert!(text.contains(SENTENCE), "{text:?}");
    assert!(text.contains("Second line, 42 items."), "{text:?}");
}

#[test]
fn a_docx_gives_its_paragraphs_in_order() {
    let docx = common::docx(&[SENTENCE, "Fish & chips <3", "Ünïcödé 日本語"]);
    let text = text_of("letter.docx", &docx);
    assert_eq!(
        text,
        format!("{SENTENCE}\nFish & chips <3\nÜnïcödé 日本語\n")
    );
}

#[test]
fn an_xlsx_gives_each_sheet_and_its_rows() {
    let budget = r#"<row r="1"><c r="A1" t="s"><v>0</v></c><c r="C1" t="s"><v>1</v></c></row>
        <row r="2"><c r="A2" t="inlineStr"><is><t>Paper</t></is></c><c r="C2"><v>12.5</v></c></row>
        <row r="4"><c r="A4" t="inlineStr"><is><t>Due</t></is></c><c r="B4" s="1"><v>45292</v></c></row>"#;
    let notes = r#"<row r="1"><c r="B1" t="inlineStr"><is><t>two&#9;words</t></is></c></row>"#;
    let xlsx = common::xlsx(&[("Budget", budget), ("Notes & more", notes)]);
    let text = text_of("q3.xlsx", &xlsx);
    assert_eq!(
        text,
        "## Sheet: Budget\nItem\t\tTotal\nPaper\t\t12.5\nDue\t2024-01-01\n\n\
         ## Sheet: Notes & more\n\ttwo words\n"
    );
}

#[test]
fn a_sparse_sheet_does_not_allocate_its_bounding_box() {
    // A1 and XFD1048576: as a dense range this is 17 billion cells.
    let corners = r#"<row r="1"><c r="A1"><v>1</v></c></row>
        <row r="1048576"><c r="XFD1048576"><v>2</v></c></row>"#;
    let text = text_of("corners.xlsx", &common::xlsx(&[("S", corners)]));
    assert!(
        text.starts_with("## Sheet: S\n1\n\t\t\t"),
        "{:?}",
        &text[..20]
    );
    assert!(text.ends_with("\t2\n"));
}

#[test]
fn a_pptx_gives_each_slide_in_the_order_shown() {
    let slides: [&[&str]; 3] = [
        &["Created first", "shown second"],
        &["Created second"],
        &["Created third, shown first"],
    ];
    let pptx = common::pptx(&slides, &[2, 0, 1]);
    let text = text_of("deck.pptx", &pptx);
    assert_eq!(
        text,
        "## Slide 1\nCreated third, shown first\n\n\
         ## Slide 2\nCreated first\nshown second\n\n\
         ## Slide 3\nCreated second\n"
    );
}

#[test]
fn text_comes_back_as_is_without_its_bom() {
    let text = text_of("notes.md", "\u{FEFF}# Plan\r\n\nnaïve café".as_bytes());
    assert_eq!(text, "# Plan\r\n\nnaïve café");
}

#[test]
fn a_corrupt_pdf_is_unreadable_without_a_panic() {
    let pdf = common::pdf(&[SENTENCE]);
    let damaged: [Vec<u8>; 3] = [
        pdf[..pdf.len() / 2].to_vec(),
        b"%PDF-1.7\nthis is not a PDF body at all\n%%EOF".to_vec(),
        pdf.iter()
            .map(|b| if b.is_ascii_digit() { b'9' } else { *b })
            .collect(),
    ];
    for bytes in damaged {
        let det = detect("broken.pdf", None, &bytes).unwrap();
        assert_eq!(det.mime, mime::PDF);
        let reason = unreadable(mime::PDF, "broken.pdf", &bytes);
        assert!(!reason.is_empty());
    }
}

#[test]
fn a_pdf_that_makes_the_parser_panic_is_unreadable() {
    // The page uses /F1 but its resources define no fonts: pdf-extract panics.
    let mut objects = common::pdf_objects(&format!("BT /F1 14 Tf 72 720 Td ({SENTENCE}) Tj ET"));
    objects[2] = objects[2].replace("/Font << /F1 4 0 R >>", "/Font << >>");
    let reason = unreadable(mime::PDF, "hostile.pdf", &common::pdf_of(&objects));
    assert!(reason.contains("malformed"), "{reason}");
}

#[test]
fn damaged_office_files_are_unreadable() {
    let bad_xml = common::docx_with_body(b"<w:document><w:body><w:p><w:t>open</w:p>");
    let reason = unreadable(mime::DOCX, "bad.docx", &bad_xml);
    assert!(reason.contains("XML"), "{reason}");

    let docx = common::docx(&[SENTENCE]);
    let reason = unreadable(mime::DOCX, "cut.docx", &docx[..docx.len() - 30]);
    assert!(reason.contains("damaged"), "{reason}");

    let xlsx = common::xlsx(&[("S", "<row><c><v>1</v></c></row>")]);
    unreadable(mime::XLSX, "cut.xlsx", &xlsx[..xlsx.len() / 2]);

    let err = extract_text(&Detected::from_mime(mime::PPTX).unwrap(), "x.pptx", b"PK").unwrap_err();
    assert!(matches!(err, Refused::Unreadable { .. }), "{err:?}");
}

/// 65 MiB of XML that deflates to a few dozen KiB.
fn bomb_xml() -> Vec<u8> {
    let mut xml = b"<w:document><w:body><w:p><w:r><w:t>".to_vec();
    xml.resize(65 * 1024 * 1024, b'a');
    xml.extend_from_slice(b"</w:t></w:r></w:p></w:body></w:document>");
    xml
}

#[test]
fn a_zip_bomb_stops_at_64_mib_of_xml() {
    let docx = common::docx_with_body(&bomb_xml());
    assert!(docx.len() < 1024 * 1024, "{} bytes", docx.len());
    let det = detect("bomb.docx", None, &docx).unwrap();
    let reason = unreadable(det.mime, "bomb.docx", &docx);
    assert!(reason.contains("64 MiB"), "{reason}");

    let sheet = format!(
        r#"<row r="1"><c r="A1" t="inlineStr"><is><t>{}</t></is></c></row>"#,
        "a".repeat(65 << 20)
    );
    let xlsx = common::xlsx(&[("S", &sheet)]);
    let reason = unreadable(mime::XLSX, "bomb.xlsx", &xlsx);
    assert!(reason.contains("64 MiB"), "{reason}");
}

#[test]
fn a_zip_bomb_that_lies_about_its_size_is_still_stopped() {
    let mut docx = common::docx_with_body(&bomb_xml());
    // Claim 1 KiB for every entry, in local headers and the central directory.
    let claim = 1024u32.to_le_bytes();
    for at in find_all(&docx, b"PK\x03\x04") {
        docx[at + 22..at + 26].copy_from_slice(&claim);
    }
    for at in find_all(&docx, b"PK\x01\x02") {
        docx[at + 24..at + 28].copy_from_slice(&claim);
    }
    let reason = unreadable(mime::DOCX, "liar.docx", &docx);
    assert!(reason.contains("64 MiB"), "{reason}");
}

fn find_all(haystack: &[u8], needle: &[u8]) -> Vec<usize> {
    let windows = haystack.windows(needle.len()).enumerate();
    windows
        .filter(|(_, w)| *w == needle)
        .map(|(i, _)| i)
        .collect()
}

#[test]
fn truncation_counts_characters_not_bytes() {
    let text = "日本語のテキスト\n".repeat(100);
    let (cut, truncated) = truncate(&text, 50);
    assert!(truncated);
    assert!(cut.chars().count() <= 50);
    // It ends on the last whole line that fits (5 lines of 9 characters).
    assert_eq!(cut, "日本語のテキスト\n".repeat(5).trim_end());

    let emoji = "👍🏽".repeat(10);
    let (cut, truncated) = truncate(&emoji, 3);
    assert_eq!((cut.as_str(), truncated), ("👍🏽👍", true));
    assert_eq!(truncate(&emoji, 20), (emoji.clone(), false));
}

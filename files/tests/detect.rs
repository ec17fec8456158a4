//! Each type detected from real files made here, whatever they are called or
//! declared as.

use weft_files::samples as common;

use image::ImageFormat;
use weft_files::{Detected, Kind, Refused, detect, mime};

fn detected(name: &str, declared: Option<&str>, bytes: &[u8]) -> Detected {
    detect(name, declared, bytes).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn refused_reason(name: &str, bytes: &[u8]) -> String {
    match detect(name, None, bytes) {
        Err(Refused::Unsupported { reason, .. }) => reason,
        other => panic!("{name} was not refused as unsupported: {other:?}"),
    }
}

#[test]
fn each_image_format_is_detected_by_its_bytes() {
    let formats = [
        (ImageFormat::Png, mime::PNG),
        (ImageFormat::Jpeg, mime::JPEG),
        (ImageFormat::Gif, mime::GIF),
        (ImageFormat::WebP, mime::WEBP),
    ];
    for (format, expected) in formats {
        let det = detected("picture", None, &common::image(format));
        assert_eq!(
            det,
            Detected {
                kind: Kind::Image,
                mime: expected
            },
            "{format:?}"
        );
    }
}

#[test]
fn each_document_format_is_detected_by_its_bytes_not_its_name() {
    let documents = [
        ("notes.txt", common::pdf(&["Hello"]), mime::PDF),
        ("picture.png", common::docx(&["Hello"]), mime::DOCX),
        ("deck.zip", common::pptx(&[&["Hello"]], &[0]), mime::PPTX),
        ("sheet", common::xlsx(&[("S", "")]), mime::XLSX),
    ];
    for (name, bytes, expected) in documents {
        let det = detected(name, None, &bytes);
        assert_eq!(
            det,
            Detected {
                kind: Kind::Document,
                mime: expected
            },
            "{name}"
        );
    }
}

#[test]
fn a_png_named_report_pdf_is_a_png() {
    let det = detected("report.pdf", None, &common::png());
    assert_eq!(det.kind, Kind::Image);
    assert_eq!(det.mime, mime::PNG);
}

#[test]
fn a_declared_image_type_on_another_image_is_corrected() {
    let det = detected("shot.jpg", Some("image/jpeg"), &common::png());
    assert_eq!(det.mime, mime::PNG);
}

#[test]
fn a_declared_document_type_on_an_image_is_refused() {
    let err = detect("shot.png", Some("application/pdf"), &common::png()).unwrap_err();
    assert_eq!(
        err,
        Refused::Mismatch {
            name: "shot.png".into(),
            declared: "application/pdf".into(),
            actual: mime::PNG.into(),
        }
    );
    assert_eq!(
        err.to_string(),
        "shot.png was sent as application/pdf, but its content is image/png"
    );
}

#[test]
fn a_declared_image_type_on_a_document_is_refused() {
    let err = detect("scan.png", Some("image/png"), &common::pdf(&["x"])).unwrap_err();
    assert!(matches!(err, Refused::Mismatch { .. }), "{err:?}");
    let err = detect("a.pdf", Some("application/pdf"), &common::docx(&["x"])).unwrap_err();
    assert!(matches!(err, Refused::Mismatch { .. }), "{err:?}");
}

#[test]
fn an_unknown_declared_type_never_conflicts() {
    for declared in [None, Some("application/octet-stream"), Some("")] {
        assert_eq!(detected("x", declared, &common::png()).mime, mime::PNG);
        assert_eq!(
            detected("x", declared, &common::pdf(&["x"])).mime,
            mime::PDF
        );
    }
    // Text is declared in too many ways to hold a client to one.
    let det = detected("run.sh", Some("application/x-sh"), b"echo hi\n");
    assert_eq!(det.mime, "text/x-shellscript");
}

#[test]
fn text_is_utf8_and_the_extension_only_refines_it() {
    let cases: [(&str, &[u8], &str); 7] = [
        ("notes", b"plain words", mime::TEXT),
        ("README.md", b"# Title\n\n- item", mime::MARKDOWN),
        ("data.csv", b"a,b\n1,2\n", mime::CSV),
        ("data.json", b"{\"ok\": true}", mime::JSON),
        ("broken.json", b"{\"ok\": tru", mime::TEXT),
        ("main.rs", b"fn main() {}\n", "text/x-rust"),
        ("bom.txt", b"\xEF\xBB\xBFwith a BOM", mime::TEXT),
    ];
    for (name, bytes, expected) in cases {
        let det = detected(name, None, bytes);
        assert_eq!(
            det,
            Detected {
                kind: Kind::Document,
                mime: expected
            },
            "{name}"
        );
    }
    // An extension never makes binary data text.
    refused_reason("photo.md", b"\x00\x01\x02 not text \xFF");
}

#[test]
fn binary_data_that_is_not_utf8_is_refused() {
    let reason = refused_reason("blob.txt", &[0x80, 0x81, 0xFE, 0x00, 0x13, 0x37]);
    assert!(reason.contains("UTF-8"), "{reason}");
    let mut elf = b"\x7FELF\x02\x01\x01\x00".to_vec();
    elf.resize(64, 0);
    let reason = refused_reason("tool.txt", &elf);
    assert!(reason.contains("executable"), "{reason}");
    let mut mp3 = b"ID3\x04\x00\x00\x00\x00\x00\x00".to_vec();
    mp3.extend_from_slice(&[0xFF; 32]);
    let reason = refused_reason("song.pdf", &mp3);
    assert!(reason.contains("audio"), "{reason}");
}

#[test]
fn a_zip_that_is_not_office_is_refused() {
    let plain = common::zip(&[("notes.txt", b"hello"), ("word/document.xml", b"<x/>")]);
    let reason = refused_reason("archive.docx", &plain);
    assert!(reason.contains("zip archive"), "{reason}");

    // Content types that name no Word, Excel or PowerPoint main part.
    let types = common::content_types(&[("/word/document.xml", "application/xml")]);
    let other = common::zip(&[
        ("[Content_Types].xml", types.as_bytes()),
        ("word/document.xml", b"<x/>"),
    ]);
    let reason = refused_reason("fake.docx", &other);
    assert!(
        reason.contains("not a Word, Excel or PowerPoint"),
        "{reason}"
    );

    // The main part is named but missing.
    let types = common::content_types(&[("/word/document.xml", common::DOCX_MAIN)]);
    let hollow = common::zip(&[("[Content_Types].xml", types.as_bytes())]);
    refused_reason("hollow.docx", &hollow);
}

#[test]
fn macro_enabled_office_files_are_refused_with_advice() {
    let types = common::content_types(&[(
        "/word/document.xml",
        "application/vnd.ms-word.document.macroEnabled.main+xml",
    )]);
    let docm = common::zip(&[
        ("[Content_Types].xml", types.as_bytes()),
        (
            "word/document.xml",
            common::document_xml(&["hi"]).as_bytes(),
        ),
    ]);
    let reason = refused_reason("invoice.docx", &docm);
    assert!(reason.contains("macro"), "{reason}");
}

#[test]
fn refusals_read_as_sentences_for_the_person_attaching() {
    let err = detect("song.mp3", None, &[0x80, 0x81, 0x00]).unwrap_err();
    let message = err.to_string();
    assert!(
        message.starts_with("song.mp3 is not a supported file: "),
        "{message}"
    );
    assert!(message.contains("PNG, JPEG, GIF or WebP"), "{message}");
    assert_eq!(err.name(), "song.mp3");
}

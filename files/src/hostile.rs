//! Hostile files, generated in code: each one took a parser (and, before
//! `isolate`, the whole server) down in a different way. Every entry point —
//! JSON and multipart uploads, Lark files, `web_fetch` — is tested with them.
//!
//! Small on the wire, ruinous to read:
//! - [`self_drawing_pdf`]: a form XObject whose content draws itself
//!   (`/Fm0 Do`): pdf-extract recurses until the stack overflows (636 bytes).
//! - [`fan_out_pdf`]: forms that each draw the next one twice, 2^N draws in
//!   all: a runaway loop without any recursion depth to speak of.
//! - [`flate_bomb_pdf`]: a content stream under two chained FlateDecode
//!   filters that inflates to 4 GiB of zeros from a few KiB.
//! - [`deep_html`]: 300,000 nested `<div>`s (htmd recurses over the DOM).
//! - [`quadratic_pptx`]: a deck listing 40,000 slides and relationships
//!   (a search per slide was 1.6 × 10⁹ comparisons).
//! - [`many_entry_docx`]: a Word file of 60,000 entries whose content types
//!   name parts in another case (a linear scan per lookup, during detection).
//! - [`zip_bomb_docx`]: `word/document.xml` inflating past the 64 MiB budget.
//! - [`entity_docx`]: "billion laughs" entities in the main part's DOCTYPE.

use std::io::Write;

use flate2::Compression;
use flate2::write::{DeflateEncoder, ZlibEncoder};

use crate::samples::{content_types, docx_with_body, pdf_of, zip};

/// A PDF page whose form XObject draws itself.
pub fn self_drawing_pdf() -> Vec<u8> {
    let form = "/Fm0 Do";
    pdf_of(&[
        "<< /Type /Catalog /Pages 2 0 R >>".to_owned(),
        "<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_owned(),
        "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] \
         /Resources << /XObject << /Fm0 5 0 R >> >> /Contents 4 0 R >>"
            .to_owned(),
        format!("<< /Length {} >>\nstream\n{form}\nendstream", form.len()),
        format!(
            "<< /Type /XObject /Subtype /Form /BBox [0 0 10 10] \
             /Resources << /XObject << /Fm0 5 0 R >> >> /Length {} >>\nstream\n{form}\nendstream",
            form.len()
        ),
    ])
}

/// A PDF page drawing form 0, where form k draws form k+1 twice: 2^`depth`
/// draws of the last one.
pub fn fan_out_pdf(depth: usize) -> Vec<u8> {
    let mut objects = vec![
        "<< /Type /Catalog /Pages 2 0 R >>".to_owned(),
        "<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_owned(),
        "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] \
         /Resources << /XObject << /F 5 0 R >> >> /Contents 4 0 R >>"
            .to_owned(),
        "<< /Length 5 >>\nstream\n/F Do\nendstream".to_owned(),
    ];
    for k in 0..depth {
        let (content, resources) = if k + 1 < depth {
            (
                "/F Do /F Do".to_owned(),
                format!("<< /XObject << /F {} 0 R >> >>", 6 + k),
            )
        } else {
            ("0 0 m 1 1 l S".to_owned(), "<< >>".to_owned())
        };
        objects.push(format!(
            "<< /Type /XObject /Subtype /Form /BBox [0 0 10 10] /Resources {resources} \
             /Length {} >>\nstream\n{content}\nendstream",
            content.len()
        ));
    }
    pdf_of(&objects)
}

/// A PDF page whose content stream, under `[/FlateDecode /FlateDecode]`,
/// inflates to 4 GiB of zeros.
pub fn flate_bomb_pdf() -> Vec<u8> {
    let inner = zlib_of_zeros(4096, 1 << 20);
    let mut outer = ZlibEncoder::new(Vec::new(), Compression::best());
    outer.write_all(&inner).unwrap();
    let outer = outer.finish().unwrap();
    let mut objects: Vec<Vec<u8>> = vec![
        b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_vec(),
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>".to_vec(),
    ];
    let mut stream = format!(
        "<< /Filter [/FlateDecode /FlateDecode] /Length {} >>\nstream\n",
        outer.len()
    )
    .into_bytes();
    stream.extend_from_slice(&outer);
    stream.extend_from_slice(b"\nendstream");
    objects.push(stream);
    let objects: Vec<&[u8]> = objects.iter().map(Vec::as_slice).collect();
    crate::samples::pdf_of_bytes(&objects)
}

/// A zlib stream of `chunks` × `chunk` zero bytes, built without compressing
/// all of them: one chunk is deflated once (ending on a byte boundary, its
/// back-references only into zeros) and repeated, then the stream is closed
/// with a final empty block and the Adler-32 of that many zeros.
fn zlib_of_zeros(chunks: usize, chunk: usize) -> Vec<u8> {
    let mut piece = DeflateEncoder::new(Vec::new(), Compression::best());
    piece.write_all(&vec![0u8; chunk]).unwrap();
    piece.flush().unwrap(); // a sync flush: byte-aligned, not final
    let piece = piece.get_ref().clone();
    let mut out = vec![0x78, 0xda];
    for _ in 0..chunks {
        out.extend_from_slice(&piece);
    }
    // A final, empty fixed-Huffman block: BFINAL=1, BTYPE=01, end-of-block.
    out.extend_from_slice(&[0x03, 0x00]);
    let total = (chunks as u64) * (chunk as u64);
    let (a, b) = (1u64, total % 65_521);
    out.extend_from_slice(&(((b << 16) | a) as u32).to_be_bytes());
    out
}

/// An HTML page of `depth` nested `<div>`s around one word.
pub fn deep_html(depth: usize) -> String {
    let mut html = String::with_capacity(depth * 11 + 64);
    html.push_str("<!doctype html><html><body>");
    html.push_str(&"<div>".repeat(depth));
    html.push_str("deep");
    html.push_str(&"</div>".repeat(depth));
    html.push_str("</body></html>");
    html
}

const PPTX_MAIN: &str =
    "application/vnd.openxmlformats-officedocument.presentationml.presentation.main+xml";
const DOCX_MAIN: &str =
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml";

/// A deck whose main part lists `slides` slides, each resolved through its own
/// relationship, the relationships in reverse order of the list.
pub fn quadratic_pptx(slides: usize) -> Vec<u8> {
    let mut list = String::with_capacity(slides * 40);
    let mut rels = String::with_capacity(slides * 100);
    for i in 0..slides {
        list.push_str(&format!("<p:sldId id=\"{}\" r:id=\"rId{i}\"/>", 256 + i));
    }
    for i in (0..slides).rev() {
        rels.push_str(&format!(
            "<Relationship Id=\"rId{i}\" Type=\"slide\" Target=\"slides/slide1.xml\"/>"
        ));
    }
    let presentation = format!(
        "<p:presentation xmlns:p=\"p\" xmlns:r=\"r\"><p:sldIdLst>{list}</p:sldIdLst></p:presentation>"
    );
    let rels = format!("<Relationships>{rels}</Relationships>");
    let slide = "<p:sld xmlns:p=\"p\" xmlns:a=\"a\"><a:t>slide</a:t></p:sld>";
    zip(&[
        (
            "[Content_Types].xml",
            content_types(&[("/ppt/presentation.xml", PPTX_MAIN)]).as_bytes(),
        ),
        ("ppt/presentation.xml", presentation.as_bytes()),
        ("ppt/_rels/presentation.xml.rels", rels.as_bytes()),
        ("ppt/slides/slide1.xml", slide.as_bytes()),
    ])
}

/// A Word file of `entries` empty parts, the first 10,000 named in
/// `[Content_Types].xml` in upper case (so every lookup misses the exact name;
/// more would pass its 1 MiB cap), the main part last.
pub fn many_entry_docx(entries: usize) -> Vec<u8> {
    let names: Vec<String> = (0..entries).map(|i| format!("p/{i}.xml")).collect();
    let mut overrides: Vec<(String, &str)> = names
        .iter()
        .take(10_000)
        .map(|n| (format!("/{}", n.to_uppercase()), "application/xml"))
        .collect();
    overrides.push(("/WORD/DOCUMENT.XML".to_owned(), DOCX_MAIN));
    let overrides: Vec<(&str, &str)> = overrides.iter().map(|(n, t)| (n.as_str(), *t)).collect();
    let types = content_types(&overrides);
    let document = crate::samples::document_xml(&["many entries"]);
    let mut parts: Vec<(&str, &[u8])> = vec![
        ("[Content_Types].xml", types.as_bytes()),
        ("word/document.xml", document.as_bytes()),
    ];
    parts.extend(names.iter().map(|n| (n.as_str(), &b""[..])));
    zip(&parts)
}

/// A Word file whose main part inflates to `bytes` of one repeated paragraph.
pub fn zip_bomb_docx(bytes: usize) -> Vec<u8> {
    let para = "<w:p><w:r><w:t>aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa</w:t></w:r></w:p>";
    let mut body = String::with_capacity(bytes + 256);
    body.push_str("<w:document xmlns:w=\"w\"><w:body>");
    while body.len() < bytes {
        body.push_str(para);
    }
    body.push_str("</w:body></w:document>");
    docx_with_body(body.as_bytes())
}

/// A Word file whose main part declares entities that expand 10^9-fold.
pub fn entity_docx() -> Vec<u8> {
    let mut dtd = String::from("<!DOCTYPE w:document [<!ENTITY a0 \"lol\">");
    for i in 1..10 {
        let prev = format!("&a{};", i - 1);
        dtd.push_str(&format!("<!ENTITY a{i} \"{}\">", prev.repeat(10)));
    }
    dtd.push_str("]>");
    let body = format!(
        "<?xml version=\"1.0\"?>{dtd}<w:document xmlns:w=\"w\"><w:body><w:p><w:r><w:t>&a9;</w:t></w:r></w:p></w:body></w:document>"
    );
    docx_with_body(body.as_bytes())
}

/// Every hostile document with the name it is sent under.
pub fn documents() -> Vec<(&'static str, Vec<u8>)> {
    vec![
        ("self-drawing.pdf", self_drawing_pdf()),
        ("fan-out.pdf", fan_out_pdf(48)),
        ("flate-bomb.pdf", flate_bomb_pdf()),
        ("slides.pptx", quadratic_pptx(40_000)),
        ("entries.docx", many_entry_docx(60_000)),
        ("bomb.docx", zip_bomb_docx(80 << 20)),
        ("laughs.docx", entity_docx()),
    ]
}

//! Real sample files for tests (this crate's and the conformance suite's, with
//! the `samples` feature): images by the `image` crate's encoders, a PDF written object by object with a correct xref table,
//! and Office documents as zip archives of minimal but valid OOXML parts.

use std::io::{Cursor, Write};

pub use image::ImageFormat;
use image::{Rgb, RgbImage};
use zip::write::SimpleFileOptions;

/// An 8×8 gradient in `format`.
pub fn image(format: ImageFormat) -> Vec<u8> {
    let picture = RgbImage::from_fn(8, 8, |x, y| Rgb([x as u8 * 30, y as u8 * 30, 200]));
    let mut out = Cursor::new(Vec::new());
    picture.write_to(&mut out, format).unwrap();
    out.into_inner()
}

/// A `side`×`side` image of noise in `format`: it does not compress, so its size
/// grows with `side` (about 3·side² bytes as PNG).
pub fn image_sized(format: ImageFormat, side: u32) -> Vec<u8> {
    let mut seed = 0x2545_f491_u32;
    let picture = RgbImage::from_fn(side, side, |_, _| {
        seed ^= seed << 13;
        seed ^= seed >> 17;
        seed ^= seed << 5;
        let [a, b, c, _] = seed.to_le_bytes();
        Rgb([a, b, c])
    });
    let mut out = Cursor::new(Vec::new());
    picture.write_to(&mut out, format).unwrap();
    out.into_inner()
}

pub fn png() -> Vec<u8> {
    image(ImageFormat::Png)
}

/// A one-page PDF that shows `lines` in Helvetica, one under the other.
pub fn pdf(lines: &[&str]) -> Vec<u8> {
    let mut content = String::from("BT /F1 14 Tf 72 720 Td 18 TL\n");
    for line in lines {
        content.push_str(&format!("({line}) Tj T*\n"));
    }
    content.push_str("ET");
    pdf_of(&pdf_objects(&content))
}

/// A PDF of several pages, each with its lines of text.
pub fn pdf_pages(pages: &[&[&str]]) -> Vec<u8> {
    let kids: Vec<String> = (0..pages.len())
        .map(|i| format!("{} 0 R", 4 + 2 * i))
        .collect();
    let mut objects = vec![
        "<< /Type /Catalog /Pages 2 0 R >>".to_owned(),
        format!(
            "<< /Type /Pages /Kids [{}] /Count {} >>",
            kids.join(" "),
            pages.len()
        ),
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>"
            .to_owned(),
    ];
    for (i, lines) in pages.iter().enumerate() {
        let mut content = String::from("BT /F1 14 Tf 72 720 Td 18 TL\n");
        for line in *lines {
            content.push_str(&format!("({line}) Tj T*\n"));
        }
        content.push_str("ET");
        objects.push(format!(
            "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] \
             /Resources << /Font << /F1 3 0 R >> >> /Contents {} 0 R >>",
            5 + 2 * i
        ));
        objects.push(format!(
            "<< /Length {} >>\nstream\n{content}\nendstream",
            content.len()
        ));
    }
    pdf_of(&objects)
}

/// The objects of a one-page PDF with one Helvetica font and `content` as the
/// page's content stream; numbered from 1.
pub fn pdf_objects(content: &str) -> Vec<String> {
    vec![
        "<< /Type /Catalog /Pages 2 0 R >>".to_owned(),
        "<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_owned(),
        "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] \
         /Resources << /Font << /F1 4 0 R >> >> /Contents 5 0 R >>"
            .to_owned(),
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>"
            .to_owned(),
        format!(
            "<< /Length {} >>\nstream\n{content}\nendstream",
            content.len()
        ),
    ]
}

/// A PDF of `objects` (numbered from 1, the first the catalog) with a correct
/// xref table.
pub fn pdf_of(objects: &[String]) -> Vec<u8> {
    let objects: Vec<&[u8]> = objects.iter().map(|o| o.as_bytes()).collect();
    pdf_of_bytes(&objects)
}

/// [`pdf_of`] for objects that need not be text (a compressed stream).
pub fn pdf_of_bytes(objects: &[&[u8]]) -> Vec<u8> {
    let mut out = b"%PDF-1.4\n%\xE2\xE3\xCF\xD3\n".to_vec();
    let mut offsets = Vec::new();
    for (i, object) in objects.iter().enumerate() {
        offsets.push(out.len());
        writeln!(out, "{} 0 obj", i + 1).unwrap();
        out.extend_from_slice(object);
        out.extend_from_slice(b"\nendobj\n");
    }
    let xref = out.len();
    write!(out, "xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1).unwrap();
    for offset in offsets {
        writeln!(out, "{offset:010} 00000 n ").unwrap();
    }
    write!(
        out,
        "trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n",
        objects.len() + 1
    )
    .unwrap();
    out
}

/// A zip of `(name, content)` entries, deflated.
pub fn zip(entries: &[(&str, &[u8])]) -> Vec<u8> {
    let mut writer = zip::ZipWriter::new(Cursor::new(Vec::new()));
    let options = SimpleFileOptions::default().compression_level(Some(1));
    for (name, content) in entries {
        writer.start_file(*name, options).unwrap();
        writer.write_all(content).unwrap();
    }
    writer.finish().unwrap().into_inner()
}

const PKG_RELS: &str = "application/vnd.openxmlformats-package.relationships+xml";

/// `[Content_Types].xml` with `overrides` as `(part name, content type)`.
pub fn content_types(overrides: &[(&str, &str)]) -> String {
    let mut xml = format!(
        r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="{PKG_RELS}"/><Default Extension="xml" ContentType="application/xml"/>"#
    );
    for (part, content_type) in overrides {
        xml.push_str(&format!(
            r#"<Override PartName="{part}" ContentType="{content_type}"/>"#
        ));
    }
    xml + "</Types>"
}

/// A `.rels` part with `(id, type tail, target)` relationships.
pub fn rels(relationships: &[(&str, &str, &str)]) -> String {
    let mut xml = String::from(
        r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">"#,
    );
    for (id, kind, target) in relationships {
        xml.push_str(&format!(
            r#"<Relationship Id="{id}" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/{kind}" Target="{target}"/>"#
        ));
    }
    xml + "</Relationships>"
}

fn root_rels(main: &str) -> String {
    rels(&[("rId1", "officeDocument", main)])
}

pub const DOCX_MAIN: &str =
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml";

/// The `word/document.xml` of `paragraphs`, XML-escaped.
pub fn document_xml(paragraphs: &[&str]) -> String {
    let mut body = String::new();
    for p in paragraphs {
        let p = escape(p);
        body.push_str(&format!(
            r#"<w:p><w:r><w:t xml:space="preserve">{p}</w:t></w:r></w:p>"#
        ));
    }
    format!(
        r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>{body}<w:sectPr/></w:body></w:document>"#
    )
}

pub fn docx_with_body(document: &[u8]) -> Vec<u8> {
    let types = content_types(&[("/word/document.xml", DOCX_MAIN)]);
    zip(&[
        ("[Content_Types].xml", types.as_bytes()),
        ("_rels/.rels", root_rels("word/document.xml").as_bytes()),
        ("word/document.xml", document),
    ])
}

pub fn docx(paragraphs: &[&str]) -> Vec<u8> {
    docx_with_body(document_xml(paragraphs).as_bytes())
}

const SHEET_NS: &str = "http://schemas.openxmlformats.org/spreadsheetml/2006/main";
const REL_NS: &str = "http://schemas.openxmlformats.org/officeDocument/2006/relationships";

/// A workbook of `(sheet name, worksheet <sheetData> inner XML)`; cells may use
/// shared string 0 = "Item", 1 = "Total", and style 1 = a date.
pub fn xlsx(sheets: &[(&str, &str)]) -> Vec<u8> {
    let mut overrides = vec![
        (
            "/xl/workbook.xml".to_owned(),
            "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml",
        ),
        (
            "/xl/sharedStrings.xml".to_owned(),
            "application/vnd.openxmlformats-officedocument.spreadsheetml.sharedStrings+xml",
        ),
        (
            "/xl/styles.xml".to_owned(),
            "application/vnd.openxmlformats-officedocument.spreadsheetml.styles+xml",
        ),
    ];
    let mut sheet_list = String::new();
    let mut relationships = vec![
        (
            "rIdS".to_owned(),
            "sharedStrings",
            "sharedStrings.xml".to_owned(),
        ),
        ("rIdY".to_owned(), "styles", "styles.xml".to_owned()),
    ];
    let mut parts = Vec::new();
    for (i, (name, data)) in sheets.iter().enumerate() {
        let n = i + 1;
        overrides.push((
            format!("/xl/worksheets/sheet{n}.xml"),
            "application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml",
        ));
        sheet_list.push_str(&format!(
            r#"<sheet name="{}" sheetId="{n}" r:id="rId{n}"/>"#,
            escape(name)
        ));
        relationships.push((
            format!("rId{n}"),
            "worksheet",
            format!("worksheets/sheet{n}.xml"),
        ));
        parts.push((
            format!("xl/worksheets/sheet{n}.xml"),
            format!(r#"<worksheet xmlns="{SHEET_NS}"><sheetData>{data}</sheetData></worksheet>"#),
        ));
    }
    let overrides: Vec<(&str, &str)> = overrides.iter().map(|(p, c)| (p.as_str(), *c)).collect();
    let relationships: Vec<(&str, &str, &str)> = relationships
        .iter()
        .map(|(id, kind, target)| (id.as_str(), *kind, target.as_str()))
        .collect();
    let workbook = format!(
        r#"<workbook xmlns="{SHEET_NS}" xmlns:r="{REL_NS}"><sheets>{sheet_list}</sheets></workbook>"#
    );
    let strings = format!(
        r#"<sst xmlns="{SHEET_NS}" count="2" uniqueCount="2"><si><t>Item</t></si><si><t>Total</t></si></sst>"#
    );
    let styles = format!(
        r#"<styleSheet xmlns="{SHEET_NS}"><cellXfs count="2"><xf numFmtId="0"/><xf numFmtId="14" applyNumberFormat="1"/></cellXfs></styleSheet>"#
    );
    let types = content_types(&overrides);
    let root = root_rels("xl/workbook.xml");
    let workbook_rels = rels(&relationships);
    let mut entries: Vec<(&str, &[u8])> = vec![
        ("[Content_Types].xml", types.as_bytes()),
        ("_rels/.rels", root.as_bytes()),
        ("xl/workbook.xml", workbook.as_bytes()),
        ("xl/_rels/workbook.xml.rels", workbook_rels.as_bytes()),
        ("xl/sharedStrings.xml", strings.as_bytes()),
        ("xl/styles.xml", styles.as_bytes()),
    ];
    for (name, xml) in &parts {
        entries.push((name.as_str(), xml.as_bytes()));
    }
    zip(&entries)
}

const PPTX_MAIN: &str =
    "application/vnd.openxmlformats-officedocument.presentationml.presentation.main+xml";
const PML_NS: &str = "http://schemas.openxmlformats.org/presentationml/2006/main";
const DML_NS: &str = "http://schemas.openxmlformats.org/drawingml/2006/main";

/// A deck whose slide *files* are `slides` in order, shown in `shown` order
/// (indexes into `slides`); each slide is a list of paragraphs.
pub fn pptx(slides: &[&[&str]], shown: &[usize]) -> Vec<u8> {
    let mut overrides = vec![("/ppt/presentation.xml".to_owned(), PPTX_MAIN)];
    let mut relationships = Vec::new();
    let mut parts = Vec::new();
    for (i, paragraphs) in slides.iter().enumerate() {
        let n = i + 1;
        overrides.push((
            format!("/ppt/slides/slide{n}.xml"),
            "application/vnd.openxmlformats-officedocument.presentationml.slide+xml",
        ));
        relationships.push((format!("rId{}", n + 1), format!("slides/slide{n}.xml")));
        let body: String = paragraphs
            .iter()
            .map(|p| format!("<a:p><a:r><a:t>{}</a:t></a:r></a:p>", escape(p)))
            .collect();
        parts.push((
            format!("ppt/slides/slide{n}.xml"),
            format!(
                r#"<p:sld xmlns:p="{PML_NS}" xmlns:a="{DML_NS}"><p:cSld><p:spTree><p:sp><p:txBody><a:bodyPr/>{body}</p:txBody></p:sp></p:spTree></p:cSld></p:sld>"#
            ),
        ));
    }
    let ids: String = shown
        .iter()
        .enumerate()
        .map(|(k, &i)| format!(r#"<p:sldId id="{}" r:id="rId{}"/>"#, 256 + k, i + 2))
        .collect();
    let presentation = format!(
        r#"<p:presentation xmlns:p="{PML_NS}" xmlns:r="{REL_NS}"><p:sldIdLst>{ids}</p:sldIdLst></p:presentation>"#
    );
    let overrides: Vec<(&str, &str)> = overrides.iter().map(|(p, c)| (p.as_str(), *c)).collect();
    let relationships: Vec<(&str, &str, &str)> = relationships
        .iter()
        .map(|(id, target)| (id.as_str(), "slide", target.as_str()))
        .collect();
    let types = content_types(&overrides);
    let root = root_rels("ppt/presentation.xml");
    let presentation_rels = rels(&relationships);
    let mut entries: Vec<(&str, &[u8])> = vec![
        ("[Content_Types].xml", types.as_bytes()),
        ("_rels/.rels", root.as_bytes()),
        ("ppt/presentation.xml", presentation.as_bytes()),
        (
            "ppt/_rels/presentation.xml.rels",
            presentation_rels.as_bytes(),
        ),
    ];
    for (name, xml) in &parts {
        entries.push((name.as_str(), xml.as_bytes()));
    }
    zip(&entries)
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

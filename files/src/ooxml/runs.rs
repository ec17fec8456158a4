//! The visible text of a WordprocessingML or DrawingML part.
//!
//! Both keep text in runs (`w:t`, `a:t`) inside paragraphs (`w:p`, `a:p`), and
//! tables as rows (`tr`) of cells (`tc`), so one walk over local names serves
//! Word bodies and PowerPoint slides alike. Deleted text (`w:delText`) and
//! field codes (`w:instrText`) are other elements and so stay out; tab *stops*
//! (`w:tabs`, `a:tabLst`) hold `tab` elements that are not tabs in the text.

use quick_xml::Reader;
use quick_xml::escape::resolve_predefined_entity;
use quick_xml::events::Event;

use crate::extract::TEXT_CAP;

/// Appends the text of `xml` to `out`: a line per paragraph, a table row per
/// line with tab-separated cells. Stops quietly once `out` reaches `TEXT_CAP`.
pub(crate) fn append_text(xml: &str, out: &mut String) -> Result<(), String> {
    let mut reader = Reader::from_str(xml);
    let mut in_run = false;
    let mut cell_depth = 0usize;
    let mut tab_stops_depth = 0usize;
    while out.len() < TEXT_CAP {
        let event = reader
            .read_event()
            .map_err(|e| format!("its XML is malformed ({e})"))?;
        match event {
            Event::Start(e) => match e.local_name().as_ref() {
                b"t" => in_run = true,
                b"tc" => cell_depth += 1,
                b"tabs" | b"tabLst" => tab_stops_depth += 1,
                _ => {}
            },
            Event::Empty(e) => match e.local_name().as_ref() {
                b"tab" if tab_stops_depth == 0 => out.push('\t'),
                b"br" | b"cr" => out.push('\n'),
                b"p" => end_paragraph(out, cell_depth),
                _ => {}
            },
            Event::End(e) => match e.local_name().as_ref() {
                b"t" => in_run = false,
                b"p" => end_paragraph(out, cell_depth),
                b"tc" => {
                    cell_depth = cell_depth.saturating_sub(1);
                    out.truncate(out.trim_end_matches(' ').len());
                    out.push('\t');
                }
                b"tr" => {
                    if out.ends_with('\t') {
                        out.pop();
                    }
                    out.push('\n');
                }
                b"tabs" | b"tabLst" => tab_stops_depth = tab_stops_depth.saturating_sub(1),
                _ => {}
            },
            Event::Text(t) if in_run => out.push_str(&t.xml10_content().map_err(encoding)?),
            Event::CData(t) if in_run => out.push_str(&t.xml10_content().map_err(encoding)?),
            Event::GeneralRef(r) if in_run => {
                if let Ok(Some(c)) = r.resolve_char_ref() {
                    out.push(c);
                } else if let Some(s) = resolve_predefined_entity(&r.decode().map_err(encoding)?) {
                    out.push_str(s);
                }
            }
            Event::Eof => break,
            _ => {}
        }
    }
    Ok(())
}

fn encoding(e: quick_xml::encoding::EncodingError) -> String {
    format!("its text is not properly encoded ({e})")
}

/// Paragraphs inside a table cell are joined by spaces so the row stays on one line.
fn end_paragraph(out: &mut String, cell_depth: usize) {
    out.push(if cell_depth > 0 { ' ' } else { '\n' });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(xml: &str) -> String {
        let mut out = String::new();
        append_text(xml, &mut out).unwrap();
        out
    }

    #[test]
    fn runs_paragraphs_and_entities() {
        let xml = r#"<w:document xmlns:w="w"><w:body>
            <w:p><w:pPr><w:tabs><w:tab w:val="left" w:pos="720"/></w:tabs></w:pPr>
              <w:r><w:t xml:space="preserve">Fish &amp; </w:t></w:r><w:r><w:tab/><w:t>chips &#x263A;</w:t></w:r></w:p>
            <w:p><w:r><w:delText>gone</w:delText><w:t>kept</w:t></w:r></w:p>
        </w:body></w:document>"#;
        assert_eq!(text(xml), "Fish & \tchips \u{263A}\nkept\n");
    }

    #[test]
    fn tables_become_tab_separated_rows() {
        let cell = |s: &str| format!("<w:tc><w:p><w:r><w:t>{s}</w:t></w:r></w:p></w:tc>");
        let xml = format!(
            "<w:tbl><w:tr>{}{}</w:tr><w:tr>{}{}</w:tr></w:tbl>",
            cell("name"),
            cell("qty"),
            cell("apples"),
            cell("3")
        );
        assert_eq!(text(&xml), "name\tqty\napples\t3\n");
    }

    #[test]
    fn malformed_xml_is_an_error_not_a_panic() {
        let mut out = String::new();
        assert!(append_text("<w:p><w:t>open</w:p>", &mut out).is_err());
    }
}

//! PowerPoint: the text of each slide, in the order the deck shows them.
//!
//! Slide *files* are numbered in creation order (`slide7.xml` may be shown
//! first after a reorder); the order shown is `p:sldIdLst` in the main part,
//! each `r:id` resolved through the main part's relationships. Decks whose list
//! cannot be resolved fall back to the file numbers.

use std::collections::HashMap;
use std::fmt::Write;

use quick_xml::Reader;
use quick_xml::events::Event;

use super::{Package, append_text, elements_with};
use crate::extract::TEXT_CAP;

/// Each slide's text under `## Slide N`, N counting from 1 in show order.
pub(crate) fn pptx_text(bytes: &[u8]) -> Result<String, String> {
    let mut package = Package::open(bytes)?;
    let main = package.main_part()?;
    let slides = match shown_order(&mut package, &main.part)? {
        order if !order.is_empty() => order,
        _ => numbered_slides(&package),
    };
    let mut out = String::new();
    let mut number = 0;
    for part in slides {
        if out.len() >= TEXT_CAP {
            break;
        }
        let Some(xml) = package.read(&part)? else {
            continue;
        };
        number += 1;
        if !out.is_empty() {
            out.push('\n');
        }
        let _ = writeln!(out, "## Slide {number}");
        append_text(&xml, &mut out)?;
    }
    Ok(out)
}

/// Slide part names in show order, or empty when the deck does not say.
fn shown_order(package: &mut Package, main: &str) -> Result<Vec<String>, String> {
    let Some(presentation) = package.read(main)? else {
        return Ok(Vec::new());
    };
    let (dir, file) = main.rsplit_once('/').unwrap_or(("", main));
    let rels_part = format!("{dir}/_rels/{file}.rels");
    let Some(rels) = package.read(rels_part.trim_start_matches('/'))? else {
        return Ok(Vec::new());
    };
    // One map, not a search per slide: a deck can list 100,000 relationships.
    let mut targets = HashMap::new();
    for [id, target] in elements_with(&rels, "Relationship", ["Id", "Target"])? {
        targets.entry(id).or_insert(target);
    }
    let order = slide_rel_ids(&presentation)?
        .iter()
        .filter_map(|id| targets.get(id))
        .map(|target| resolve(dir, target))
        .collect();
    Ok(order)
}

/// The `r:id` of each `p:sldId`, in document order. The prefix is whatever the
/// file binds the relationships namespace to; the unprefixed `id` is a number.
fn slide_rel_ids(presentation: &str) -> Result<Vec<String>, String> {
    let mut reader = Reader::from_str(presentation);
    let mut ids = Vec::new();
    loop {
        let event = reader
            .read_event()
            .map_err(|e| format!("its XML is malformed ({e})"))?;
        let element = match event {
            Event::Start(e) | Event::Empty(e) => e,
            Event::Eof => return Ok(ids),
            _ => continue,
        };
        if element.local_name().as_ref() != b"sldId" {
            continue;
        }
        let rel = element
            .attributes()
            .flatten()
            .find(|a| a.key.prefix().is_some() && a.key.local_name().as_ref() == b"id");
        if let Some(rel) = rel {
            ids.push(String::from_utf8_lossy(&rel.value).into_owned());
        }
    }
}

/// A relationship target relative to the directory of its source part.
fn resolve(dir: &str, target: &str) -> String {
    if let Some(absolute) = target.strip_prefix('/') {
        return absolute.to_owned();
    }
    let mut segments: Vec<&str> = dir.split('/').filter(|s| !s.is_empty()).collect();
    for segment in target.split('/') {
        match segment {
            "" | "." => {}
            ".." => {
                segments.pop();
            }
            s => segments.push(s),
        }
    }
    segments.join("/")
}

/// `ppt/slides/slideN.xml` sorted by N.
fn numbered_slides(package: &Package) -> Vec<String> {
    let mut slides: Vec<(u32, String)> = package
        .zip
        .file_names()
        .filter_map(|name| {
            let n = name
                .strip_prefix("ppt/slides/slide")?
                .strip_suffix(".xml")?
                .parse()
                .ok()?;
            Some((n, name.to_owned()))
        })
        .collect();
    slides.sort();
    slides.into_iter().map(|(_, name)| name).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_resolve_against_the_source_directory() {
        assert_eq!(resolve("ppt", "slides/slide1.xml"), "ppt/slides/slide1.xml");
        assert_eq!(resolve("ppt", "/ppt/slides/s.xml"), "ppt/slides/s.xml");
        assert_eq!(resolve("ppt/x", "../slides/./s.xml"), "ppt/slides/s.xml");
    }

    #[test]
    fn slide_ids_use_the_prefixed_attribute() {
        let xml = r#"<p:presentation xmlns:p="p" xmlns:rel="r"><p:sldIdLst>
            <p:sldId id="257" rel:id="rId9"/><p:sldId id="256" rel:id="rId2"/>
        </p:sldIdLst></p:presentation>"#;
        assert_eq!(slide_rel_ids(xml).unwrap(), ["rId9", "rId2"]);
    }
}

//! Office Open XML packages (DOCX, XLSX, PPTX): recognising them, and reading
//! their parts without letting a zip bomb through.
//!
//! A package is a zip whose `[Content_Types].xml` gives each part a content
//! type; the "main" part's type says what the document is. Every part is read
//! through [`Package::read`], which charges its *inflated* size to one budget
//! per document ([`XML_BUDGET`]) and stops the moment it is spent — the sizes
//! an archive claims for its entries are only used to fail early, never trusted.

mod runs;
mod slides;

use std::cell::OnceCell;
use std::collections::HashMap;
use std::io::{Cursor, Read};

use quick_xml::Reader;
use quick_xml::events::Event;
use zip::ZipArchive;
use zip::result::ZipError;

use crate::{Refused, mime};

pub(crate) use runs::append_text;
pub(crate) use slides::pptx_text;

/// Decompressed XML one document may expand to, over all the parts read.
pub(crate) const XML_BUDGET: u64 = 64 * 1024 * 1024;
/// `[Content_Types].xml` is a few KiB in real files.
const CONTENT_TYPES_CAP: u64 = 1024 * 1024;
const CONTENT_TYPES: &str = "[Content_Types].xml";

/// Main-part content type → the document's type.
const MAIN_PARTS: [(&str, &str); 3] = [
    (
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml",
        mime::DOCX,
    ),
    (
        "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml",
        mime::XLSX,
    ),
    (
        "application/vnd.openxmlformats-officedocument.presentationml.presentation.main+xml",
        mime::PPTX,
    ),
];

/// A zip archive read under a decompression budget.
pub(crate) struct Package<'a> {
    zip: ZipArchive<Cursor<&'a [u8]>>,
    xml_left: u64,
    /// Lowercased entry name → index, built on the first lookup whose exact
    /// name misses: one pass over the names, however many parts are looked up
    /// (a hostile `[Content_Types].xml` can name 100,000 of them).
    folded: OnceCell<HashMap<String, usize>>,
}

impl<'a> Package<'a> {
    pub(crate) fn open(bytes: &'a [u8]) -> Result<Self, String> {
        let zip = ZipArchive::new(Cursor::new(bytes))
            .map_err(|e| format!("the zip archive is damaged ({e})"))?;
        Ok(Package {
            zip,
            xml_left: XML_BUDGET,
            folded: OnceCell::new(),
        })
    }

    /// The text of `part` (a part name without the leading `/`, matched without
    /// regard to case as OOXML requires), or `None` if the package lacks it.
    pub(crate) fn read(&mut self, part: &str) -> Result<Option<String>, String> {
        let Some(data) = self.read_capped(part, self.xml_left)? else {
            return Ok(None);
        };
        self.xml_left -= data.len() as u64;
        Ok(Some(String::from_utf8_lossy(&data).into_owned()))
    }

    fn read_capped(&mut self, part: &str, cap: u64) -> Result<Option<Vec<u8>>, String> {
        let Some(index) = self.index_of(part) else {
            return Ok(None);
        };
        let mut entry = match self.zip.by_index(index) {
            Ok(entry) => entry,
            Err(ZipError::FileNotFound) => return Ok(None),
            Err(e) => return Err(format!("its part {part} cannot be opened ({e})")),
        };
        if entry.size() > cap {
            return Err(too_big());
        }
        let mut data = Vec::with_capacity(entry.size() as usize);
        entry
            .by_ref()
            .take(cap + 1)
            .read_to_end(&mut data)
            .map_err(|e| format!("its part {part} is damaged ({e})"))?;
        if data.len() as u64 > cap {
            return Err(too_big());
        }
        Ok(Some(data))
    }

    fn index_of(&self, part: &str) -> Option<usize> {
        self.zip.index_for_name(part).or_else(|| {
            let folded = self.folded.get_or_init(|| {
                let mut map = HashMap::with_capacity(self.zip.len());
                for i in 0..self.zip.len() {
                    if let Some(name) = self.zip.name_for_index(i) {
                        // The first of names equal but for case wins, as a scan would.
                        map.entry(name.to_ascii_lowercase()).or_insert(i);
                    }
                }
                map
            });
            folded.get(&part.to_ascii_lowercase()).copied()
        })
    }

    /// Inflates every entry, counting without keeping, and fails if the whole
    /// archive expands past the budget. For readers (calamine) that take the
    /// archive whole and cannot be stopped part-way.
    pub(crate) fn check_inflated_size(&mut self) -> Result<(), String> {
        for index in 0..self.zip.len() {
            let mut entry = self
                .zip
                .by_index(index)
                .map_err(|e| format!("the zip archive is damaged ({e})"))?;
            if entry.size() > self.xml_left {
                return Err(too_big());
            }
            let inflated = std::io::copy(
                &mut entry.by_ref().take(self.xml_left + 1),
                &mut std::io::sink(),
            )
            .map_err(|e| format!("the zip archive is damaged ({e})"))?;
            if inflated > self.xml_left {
                return Err(too_big());
            }
            self.xml_left -= inflated;
        }
        Ok(())
    }

    /// The document's type and main part, from `[Content_Types].xml`.
    pub(crate) fn main_part(&mut self) -> Result<MainPart, String> {
        let Some(types) = self.read_capped(CONTENT_TYPES, CONTENT_TYPES_CAP)? else {
            return Err(NOT_OFFICE.to_owned());
        };
        let types = String::from_utf8_lossy(&types);
        let mut macros = false;
        for (part, content_type) in overrides(&types)? {
            let part = part.trim_start_matches('/');
            macros |= content_type.contains("macroEnabled");
            let main = MAIN_PARTS.iter().find(|(ct, _)| *ct == content_type);
            if let Some(&(_, mime)) = main
                && self.index_of(part).is_some()
            {
                let part = part.to_owned();
                return Ok(MainPart { mime, part });
            }
        }
        Err(if macros { MACROS } else { NOT_OFFICE }.to_owned())
    }
}

pub(crate) struct MainPart {
    pub(crate) mime: &'static str,
    pub(crate) part: String,
}

const NOT_OFFICE: &str = "it is a zip archive, not a Word, Excel or PowerPoint document";
const MACROS: &str = "it is a macro-enabled Office file (.docm, .xlsm or .pptm); \
                      save it without macros as .docx, .xlsx or .pptx";

fn too_big() -> String {
    format!(
        "it expands to more than {} MiB when unpacked, more than a document can hold",
        XML_BUDGET >> 20
    )
}

/// DOCX, XLSX or PPTX — or why the zip in `bytes` is none of them.
pub(crate) fn classify(name: &str, bytes: &[u8]) -> Result<&'static str, Refused> {
    let mut package = Package::open(bytes).map_err(|r| Refused::unreadable(name, r))?;
    match package.main_part() {
        Ok(main) => Ok(main.mime),
        Err(reason) if reason == NOT_OFFICE => Err(Refused::unsupported(name, other_zip(bytes))),
        Err(reason) => Err(Refused::unsupported(name, reason)),
    }
}

/// A zip that is not OOXML, named where `infer` knows it.
fn other_zip(bytes: &[u8]) -> String {
    match infer::get(bytes).map(|t| t.mime_type()) {
        Some(m) if m.starts_with("application/vnd.oasis.opendocument") => {
            "it is an OpenDocument file; save it as .docx, .xlsx or .pptx, or as PDF".to_owned()
        }
        Some("application/epub+zip") => "it is an EPUB book; attach it as PDF".to_owned(),
        _ => NOT_OFFICE.to_owned(),
    }
}

/// `(PartName, ContentType)` of every `<Override>` in `[Content_Types].xml`.
fn overrides(xml: &str) -> Result<Vec<(String, String)>, String> {
    elements_with(xml, "Override", ["PartName", "ContentType"])
        .map(|found| found.into_iter().map(|[a, b]| (a, b)).collect())
}

/// The values of `attrs` on every element named `local` (any prefix); elements
/// lacking one of them are skipped.
pub(crate) fn elements_with<const N: usize>(
    xml: &str,
    local: &str,
    attrs: [&str; N],
) -> Result<Vec<[String; N]>, String> {
    let mut reader = Reader::from_str(xml);
    let mut found = Vec::new();
    loop {
        let event = reader
            .read_event()
            .map_err(|e| format!("its XML is malformed ({e})"))?;
        let element = match event {
            Event::Start(e) | Event::Empty(e) => e,
            Event::Eof => return Ok(found),
            _ => continue,
        };
        if element.local_name().as_ref() != local.as_bytes() {
            continue;
        }
        let mut values: [Option<String>; N] = std::array::from_fn(|_| None);
        for attr in element.attributes().flatten() {
            let key = attr.key.as_ref();
            if let Some(i) = attrs.iter().position(|a| a.as_bytes() == key) {
                let value = attr.normalized_value(quick_xml::XmlVersion::Implicit1_0);
                values[i] = value.ok().map(|v| v.into_owned());
            }
        }
        if values.iter().all(Option::is_some) {
            found.push(values.map(Option::unwrap_or_default));
        }
    }
}

/// The text of a Word document's main part: one line per paragraph.
pub(crate) fn docx_text(bytes: &[u8]) -> Result<String, String> {
    let mut package = Package::open(bytes)?;
    let main = package.main_part()?;
    let xml = package
        .read(&main.part)?
        .ok_or("the document's main part is missing")?;
    let mut out = String::new();
    append_text(&xml, &mut out)?;
    Ok(out)
}

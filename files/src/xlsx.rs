//! Excel: each sheet as `## Sheet: name` and its rows as tab-separated lines.
//!
//! calamine reads shared strings and styles whole when it opens a workbook and
//! cannot be stopped part-way, so the archive's total inflated size is checked
//! against the XML budget first. Cells are then read one at a time
//! (`worksheet_cells_reader`), never as a `Range`, whose dense rows × columns
//! grid a two-cell sheet spanning `A1:XFD1048576` would blow up.

use std::fmt::Write;
use std::io::Cursor;

use calamine::{DataRef, Reader, Xlsx, XlsxError};

use crate::extract::TEXT_CAP;
use crate::ooxml::Package;

pub(crate) fn xlsx_text(bytes: &[u8]) -> Result<String, String> {
    Package::open(bytes)?.check_inflated_size()?;
    let mut book: Xlsx<_> = Xlsx::new(Cursor::new(bytes)).map_err(damaged)?;
    let mut out = String::new();
    for sheet in book.sheet_names() {
        if out.len() >= TEXT_CAP {
            break;
        }
        // Chart and dialog sheets have no cells.
        let mut cells = match book.worksheet_cells_reader(&sheet) {
            Ok(cells) => cells,
            Err(XlsxError::WorksheetNotFound(_)) => continue,
            Err(e) => return Err(damaged(e)),
        };
        if !out.is_empty() {
            out.push('\n');
        }
        let _ = writeln!(out, "## Sheet: {sheet}");
        let mut last: Option<(u32, u32)> = None;
        while out.len() < TEXT_CAP {
            let Some(cell) = cells.next_cell().map_err(damaged)? else {
                break;
            };
            let value = cell_text(cell.get_value());
            if value.is_empty() {
                continue;
            }
            let (row, col) = cell.get_position();
            // Empty cells keep their columns, so values stay under their headers.
            let tabs = match last {
                Some((r, c)) if r == row => col.saturating_sub(c).max(1),
                Some(_) => {
                    out.push('\n');
                    col
                }
                None => col,
            };
            out.extend(std::iter::repeat_n('\t', tabs as usize));
            out.push_str(&value);
            last = Some((row, col));
        }
        if last.is_some() {
            out.push('\n');
        }
    }
    Ok(out)
}

/// A cell as a person reads it; tabs and line breaks inside become spaces so
/// each row stays one line.
fn cell_text(value: &DataRef) -> String {
    let text = match value {
        DataRef::Empty => return String::new(),
        DataRef::String(s) => s.clone(),
        DataRef::SharedString(s) => (*s).to_owned(),
        DataRef::Int(i) => i.to_string(),
        DataRef::Float(f) => f.to_string(),
        DataRef::Bool(b) => if *b { "TRUE" } else { "FALSE" }.to_owned(),
        DataRef::DateTime(dt) => match dt.as_datetime().filter(|_| dt.is_datetime()) {
            Some(at) if at.and_utc().timestamp() % 86_400 == 0 => at.date().to_string(),
            Some(at) => at.to_string(),
            None => dt.to_string(),
        },
        DataRef::DateTimeIso(s) | DataRef::DurationIso(s) => s.clone(),
        DataRef::Error(e) => e.to_string(),
    };
    text.replace(['\t', '\n', '\r'], " ")
}

fn damaged(e: XlsxError) -> String {
    format!("the workbook is damaged ({e})")
}

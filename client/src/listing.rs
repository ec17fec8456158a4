//! What `weft schedules` and `weft channels` share: finding one of a person's
//! things by what they typed, and the plain tables both print.
//!
//! A thing is named the way sessions are: by its full id, its (unique) name,
//! or a unique suffix of its id — the short id the lists show. Ids are UUID v7
//! (`chn_0198…`), whose first characters are a timestamp, so a suffix tells
//! things made in the same minute apart where a prefix would not.

use weft_wire::api::{ChannelDto, ScheduleDto};

use crate::error::{ClientError, Result};
use crate::render::visible_width;

/// Something listed with an id and a name.
pub(crate) trait Named {
    /// What one is called in messages: `schedule`.
    const KIND: &'static str;
    /// The command that lists them: `weft schedules`.
    const LISTED_BY: &'static str;
    fn id(&self) -> &str;
    fn name(&self) -> &str;
}

impl Named for ScheduleDto {
    const KIND: &'static str = "schedule";
    const LISTED_BY: &'static str = "weft schedules";
    fn id(&self) -> &str {
        &self.id
    }
    fn name(&self) -> &str {
        &self.name
    }
}

impl Named for ChannelDto {
    const KIND: &'static str = "channel";
    const LISTED_BY: &'static str = "weft channels";
    fn id(&self) -> &str {
        &self.id
    }
    fn name(&self) -> &str {
        &self.name
    }
}

/// The one of `all` that `typed` means: a full id, else a unique name, else a
/// unique suffix of an id. Nothing or several: a usage error saying which.
pub(crate) fn pick<'a, T: Named>(all: &'a [T], typed: &str) -> Result<&'a T> {
    let typed = typed.trim();
    if typed.is_empty() {
        return Err(ClientError::Usage(format!("a {} id is needed", T::KIND)));
    }
    let suffix = typed.to_ascii_lowercase();
    let by = |hit: &dyn Fn(&T) -> bool| -> Vec<&'a T> { all.iter().filter(|t| hit(t)).collect() };
    for hits in [
        by(&|t| t.id() == typed),
        by(&|t| t.name() == typed),
        by(&|t| t.id().ends_with(&suffix)),
    ] {
        match hits.as_slice() {
            [one] => return Ok(one),
            [] => continue,
            many => {
                return Err(ClientError::Usage(format!(
                    "{} {}s match {typed:?}; give more of the id (`{}` lists them)",
                    many.len(),
                    T::KIND,
                    T::LISTED_BY
                )));
            }
        }
    }
    Err(ClientError::Usage(format!(
        "no {} {typed:?}; `{}` lists yours",
        T::KIND,
        T::LISTED_BY
    )))
}

/// Rows padded to their widest cell by display width (CJK names line up);
/// the last column is left ragged. One string a row, no newlines.
pub(crate) fn table_lines(rows: &[Vec<String>]) -> Vec<String> {
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let mut widths = vec![0; cols];
    for row in rows {
        for (i, cell) in row.iter().enumerate() {
            widths[i] = widths[i].max(visible_width(cell));
        }
    }
    rows.iter()
        .map(|row| {
            let mut line = String::new();
            for (i, cell) in row.iter().enumerate() {
                line.push_str(cell);
                if i + 1 < row.len() {
                    line.push_str(&" ".repeat(widths[i] - visible_width(cell) + 2));
                }
            }
            line.trim_end().to_string()
        })
        .collect()
}

/// [`table_lines`], each ended by a newline.
pub(crate) fn table(rows: &[Vec<String>]) -> String {
    table_lines(rows).into_iter().map(|l| l + "\n").collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Thing(&'static str, &'static str);

    impl Named for Thing {
        const KIND: &'static str = "thing";
        const LISTED_BY: &'static str = "weft things";
        fn id(&self) -> &str {
            self.0
        }
        fn name(&self) -> &str {
            self.1
        }
    }

    #[test]
    fn ids_then_names_then_suffixes() {
        let all = [
            Thing("chn_01aa", "ops"),
            Thing("chn_02bb", "chn_01aa"),
            Thing("chn_03ab", "mail"),
        ];
        // A full id wins over a name that spells it.
        assert_eq!(pick(&all, "chn_01aa").unwrap().1, "ops");
        assert_eq!(pick(&all, " mail ").unwrap().0, "chn_03ab");
        assert_eq!(pick(&all, "2BB").unwrap().1, "chn_01aa");
        let many = pick(&all, "b").unwrap_err().to_string();
        assert!(many.starts_with("2 things match \"b\""), "{many}");
        let none = pick(&all, "zz").unwrap_err().to_string();
        assert_eq!(none, "no thing \"zz\"; `weft things` lists yours");
        assert!(matches!(pick(&all, " "), Err(ClientError::Usage(_))));
    }

    #[test]
    fn tables_line_up_by_display_width() {
        let rows = vec![
            vec!["ID".to_string(), "NAME".into(), "X".into()],
            vec!["1".to_string(), "早会".into(), "y".into()],
        ];
        assert_eq!(table(&rows), "ID  NAME  X\n1   早会  y\n");
    }
}

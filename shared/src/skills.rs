//! Skills: a folder with a `SKILL.md` (front matter `name` and `description`, then
//! the instructions) and optional text files beside it. Only names and
//! descriptions go into the system prompt; the model loads a body (or one of its
//! files) with the `use_skill` tool when a task needs it. Skills come from
//! `skills_dir` on disk and from admins' uploads (stored in the database; an
//! upload wins over a folder of the same name).

use std::collections::BTreeMap;
use std::path::Path;

/// The most bytes of one skill file (SKILL.md or a file beside it).
pub const MAX_FILE_BYTES: usize = 256 << 10;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skill {
    pub name: String,
    pub description: String,
    pub body: String,
    /// Files beside SKILL.md: name → text.
    pub files: BTreeMap<String, String>,
}

pub fn valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
}

/// `SKILL.md` → (name, description, body). The front matter is `---` lines
/// with `name:` and `description:`.
pub fn parse_skill_md(text: &str) -> Result<(String, String, String), String> {
    let rest = text
        .trim_start_matches('\u{feff}')
        .strip_prefix("---")
        .ok_or("SKILL.md must start with front matter (---, name:, description:, ---)")?;
    let (front, body) = rest
        .split_once("\n---")
        .ok_or("the front matter of SKILL.md has no closing ---")?;
    let mut name = None;
    let mut description = None;
    for line in front.lines() {
        if let Some((k, v)) = line.split_once(':') {
            let v = v.trim().trim_matches('"').to_string();
            match k.trim() {
                "name" => name = Some(v),
                "description" => description = Some(v),
                _ => {}
            }
        }
    }
    let name = name.ok_or("SKILL.md front matter needs name:")?;
    if !valid_name(&name) {
        return Err(format!(
            "skill name {name:?} must be 1 to 64 of a-z, 0-9, - and _"
        ));
    }
    let description = description
        .filter(|d| !d.is_empty())
        .ok_or("SKILL.md front matter needs description:")?;
    let body = body
        .trim_start_matches(['-', '\r', '\n'])
        .trim()
        .to_string();
    Ok((name, description, body))
}

/// Every `<dir>/<folder>/SKILL.md`, with the text files beside it. A folder
/// that does not parse is skipped with a warning (one bad skill does not take
/// the others down).
pub fn load_dir(dir: &Path) -> Vec<Skill> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for entry in entries.flatten() {
        let folder = entry.path();
        let md = folder.join("SKILL.md");
        let Ok(text) = std::fs::read_to_string(&md) else {
            continue;
        };
        match parse_skill_md(&text) {
            Ok((name, description, body)) => {
                let mut files = BTreeMap::new();
                if let Ok(list) = std::fs::read_dir(&folder) {
                    for f in list.flatten() {
                        let fname = f.file_name().to_string_lossy().to_string();
                        if fname == "SKILL.md" || !f.path().is_file() {
                            continue;
                        }
                        match std::fs::read_to_string(f.path()) {
                            Ok(t) if t.len() <= MAX_FILE_BYTES => {
                                files.insert(fname, t);
                            }
                            _ => {
                                tracing::warn!(file = %f.path().display(), "skill file skipped (not text, or over 256 KiB)")
                            }
                        }
                    }
                }
                out.push(Skill {
                    name,
                    description,
                    body,
                    files,
                });
            }
            Err(e) => tracing::warn!(skill = %md.display(), error = %e, "skill skipped"),
        }
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

/// Each file of a skills folder: path, size, modification time.
pub type DirFingerprint = Vec<(std::path::PathBuf, u64, Option<std::time::SystemTime>)>;

/// What [`load_dir`] would read, by name, size and modification time, without
/// reading it: equal fingerprints mean the folder's skills did not change (a
/// file rewritten with the same size within the file system's time resolution
/// aside). A worker compares it instead of reading every skill for every run.
pub fn dir_fingerprint(dir: &Path) -> DirFingerprint {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for entry in entries.flatten() {
        let Ok(list) = std::fs::read_dir(entry.path()) else {
            continue;
        };
        for f in list.flatten() {
            if let Ok(meta) = f.metadata() {
                out.push((f.path(), meta.len(), meta.modified().ok()));
            }
        }
    }
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn front_matter_names_and_describes_the_skill() {
        let (n, d, b) = parse_skill_md(
            "---\nname: pdf-forms\ndescription: \"Fill PDF forms\"\n---\n\n# Steps\n1. x\n",
        )
        .unwrap();
        assert_eq!(
            (n.as_str(), d.as_str(), b.as_str()),
            ("pdf-forms", "Fill PDF forms", "# Steps\n1. x")
        );
        assert!(parse_skill_md("no front matter").is_err());
        assert!(parse_skill_md("---\nname: Bad Name\ndescription: x\n---\n").is_err());
        assert!(
            parse_skill_md("---\nname: ok\n---\nbody")
                .unwrap_err()
                .contains("description")
        );
    }

    #[test]
    fn folders_load_with_their_files_and_bad_ones_are_skipped() {
        let dir = std::env::temp_dir().join(format!("weft-skills-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("good")).unwrap();
        std::fs::create_dir_all(dir.join("bad")).unwrap();
        std::fs::write(
            dir.join("good/SKILL.md"),
            "---\nname: good\ndescription: d\n---\nbody",
        )
        .unwrap();
        std::fs::write(dir.join("good/notes.txt"), "extra").unwrap();
        std::fs::write(dir.join("bad/SKILL.md"), "nothing").unwrap();
        let skills = load_dir(&dir);
        assert_eq!(skills.len(), 1);
        assert_eq!(
            skills[0].files.get("notes.txt").map(String::as_str),
            Some("extra")
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

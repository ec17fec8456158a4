//! Files that go with a message (`weft -f PATH`, `/attach PATH` in the REPL).
//!
//! A file is checked when it is named — it exists, is a regular file, is not
//! empty and can be opened — so a typo is reported before anything is sent. Its
//! bytes are read only when the message goes: after the gateway refused a file
//! (too large, a type it does not take) the person fixes it and sends again, and
//! the file goes as it is now. The gateway types each file by its bytes and
//! enforces the limits; the client does not guess types from names. The bytes go
//! as `multipart/form-data` parts, not base64 in JSON, so nothing grows by a third.
//!
//! Text, not files, is what stdin carries: [`stdin_text`] refuses binary input and
//! points at `-f`.

use std::path::{Path, PathBuf};

use crate::error::{ClientError, Result};
use crate::render::human_bytes;

/// A readable regular file, checked when it was named.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalFile {
    path: PathBuf,
    name: String,
    /// The size when it was checked (for listings; the send reads it again).
    bytes: u64,
}

/// A file's bytes as they go out with a message.
#[derive(Debug, Clone)]
pub struct Upload {
    pub name: String,
    pub bytes: Vec<u8>,
}

impl LocalFile {
    /// Check that `path` is a file that can be sent: it exists, is a regular
    /// file (not a directory), is not empty and can be opened for reading.
    pub fn open(path: &Path) -> Result<LocalFile> {
        let shown = path.display();
        let meta = std::fs::metadata(path).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => ClientError::Usage(format!("no such file: {shown}")),
            std::io::ErrorKind::PermissionDenied => {
                ClientError::Usage(format!("cannot read {shown}: permission denied"))
            }
            _ => ClientError::Usage(format!("cannot read {shown}: {e}")),
        })?;
        if meta.is_dir() {
            return Err(ClientError::Usage(format!(
                "{shown} is a directory; attach the files in it one by one"
            )));
        }
        if !meta.is_file() {
            return Err(ClientError::Usage(format!(
                "{shown} is not a regular file; save it to a file and attach that"
            )));
        }
        if meta.len() == 0 {
            return Err(ClientError::Usage(format!(
                "{shown} is empty; there is nothing to attach"
            )));
        }
        std::fs::File::open(path).map_err(|e| match e.kind() {
            std::io::ErrorKind::PermissionDenied => {
                ClientError::Usage(format!("cannot read {shown}: permission denied"))
            }
            _ => ClientError::Usage(format!("cannot read {shown}: {e}")),
        })?;
        let name = path
            .file_name()
            .map_or_else(|| "attachment".into(), |n| n.to_string_lossy().into_owned());
        Ok(LocalFile {
            path: path.to_path_buf(),
            name,
            bytes: meta.len(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The name the gateway stores and shows (the last path component).
    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// `shot.png (12.3 KiB)`.
    pub fn label(&self) -> String {
        format!("{} ({})", self.name, human_bytes(self.bytes))
    }

    /// The bytes as they are now.
    pub async fn read(&self) -> Result<Upload> {
        let bytes = tokio::fs::read(&self.path)
            .await
            .map_err(|e| ClientError::Usage(format!("cannot read {}: {e}", self.path.display())))?;
        if bytes.is_empty() {
            return Err(ClientError::Usage(format!(
                "{} is empty now; there is nothing to attach",
                self.path.display()
            )));
        }
        Ok(Upload {
            name: self.name.clone(),
            bytes,
        })
    }
}

/// Read every file, in order; the first that fails stops the send.
pub async fn read_all(files: &[LocalFile]) -> Result<Vec<Upload>> {
    let mut out = Vec::with_capacity(files.len());
    for f in files {
        out.push(f.read().await?);
    }
    Ok(out)
}

/// `1 file`, `3 files`.
pub fn count(n: usize) -> String {
    if n == 1 {
        "1 file".into()
    } else {
        format!("{n} files")
    }
}

/// Piped stdin as message text, unless it is binary (not UTF-8, or NUL bytes):
/// an image piped in (`weft -p "x" < shot.png`) must go as a file, typed by the
/// gateway, not as mangled text.
pub fn stdin_text(bytes: Vec<u8>) -> Result<String> {
    let refuse = || {
        ClientError::Usage(
            "stdin holds binary data, not text; to send a file, attach it with -f PATH \
             (e.g. weft -p \"what is this?\" -f image.png)"
                .into(),
        )
    };
    if bytes.contains(&0) {
        return Err(refuse());
    }
    String::from_utf8(bytes).map_err(|_| refuse())
}

/// `~` and `~/…` with the home directory; other paths as they are.
pub fn expand_tilde(path: &str) -> PathBuf {
    let home = || std::env::var_os("HOME").filter(|h| !h.is_empty());
    if path == "~" {
        if let Some(h) = home() {
            return PathBuf::from(h);
        }
    } else if let Some(rest) = path.strip_prefix("~/")
        && let Some(h) = home()
    {
        return PathBuf::from(h).join(rest);
    }
    PathBuf::from(path)
}

/// The paths of an `/attach` argument: words as a shell splits them (`"…"` and
/// `'…'` quote, `\` escapes, which is also how Tab completion writes spaces),
/// each with `~` expanded. An unquoted argument that names an existing file as a
/// whole (`/attach my notes.md`) is that one file.
pub fn parse_paths(arg: &str) -> Result<Vec<PathBuf>> {
    let arg = arg.trim();
    if arg.is_empty() {
        return Ok(vec![]);
    }
    let whole = expand_tilde(arg);
    if whole.exists() {
        return Ok(vec![whole]);
    }
    Ok(split_words(arg)?
        .into_iter()
        .map(|(word, quoted)| {
            if quoted {
                PathBuf::from(word)
            } else {
                expand_tilde(&word)
            }
        })
        .collect())
}

/// Shell-like words; the flag says whether a word began with a quote (then `~`
/// is literal, as in a shell).
fn split_words(s: &str) -> Result<Vec<(String, bool)>> {
    let mut words = Vec::new();
    let mut chars = s.chars().peekable();
    loop {
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        let Some(&first) = chars.peek() else { break };
        let quoted = first == '"' || first == '\'';
        let mut word = String::new();
        while let Some(c) = chars.next() {
            match c {
                c if c.is_whitespace() => break,
                '\\' => word.push(chars.next().unwrap_or('\\')),
                '\'' => loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => word.push(c),
                        None => return Err(unclosed('\'')),
                    }
                },
                '"' => loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c @ ('"' | '\\' | '$' | '`')) => word.push(c),
                            Some(c) => {
                                word.push('\\');
                                word.push(c);
                            }
                            None => return Err(unclosed('"')),
                        },
                        Some(c) => word.push(c),
                        None => return Err(unclosed('"')),
                    }
                },
                c => word.push(c),
            }
        }
        words.push((word, quoted));
    }
    Ok(words)
}

fn unclosed(q: char) -> ClientError {
    ClientError::Usage(format!("unclosed {q} in the path"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        split_words(s)
            .unwrap()
            .into_iter()
            .map(|(w, _)| w)
            .collect()
    }

    #[test]
    fn paths_split_like_a_shell() {
        assert_eq!(words("a.png  b.pdf"), ["a.png", "b.pdf"]);
        assert_eq!(
            words(r#""my shot.png" 'it''s.md'"#),
            ["my shot.png", "its.md"]
        );
        assert_eq!(words(r"my\ shot.png x"), ["my shot.png", "x"]);
        assert_eq!(words(r#""a \"q\" \n.txt""#), [r#"a "q" \n.txt"#]);
        assert!(split_words("\"open").is_err());
    }

    #[test]
    fn tilde_is_the_home_directory_unless_quoted() {
        let Some(home) = std::env::var_os("HOME").filter(|h| !h.is_empty()) else {
            return;
        };
        let home = PathBuf::from(home);
        assert_eq!(
            parse_paths("~/a.png ~").unwrap(),
            [home.join("a.png"), home.clone()]
        );
        assert_eq!(
            parse_paths("'~/a.png'").unwrap(),
            [PathBuf::from("~/a.png")]
        );
        assert_eq!(expand_tilde("a~/b"), PathBuf::from("a~/b"));
    }

    #[test]
    fn a_whole_argument_naming_a_file_is_one_path() {
        let dir = std::env::temp_dir().join(format!("weft-attach-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let spaced = dir.join("my notes.md");
        std::fs::write(&spaced, "hi").unwrap();
        let arg = spaced.display().to_string();
        assert_eq!(parse_paths(&arg).unwrap(), std::slice::from_ref(&spaced));
        let f = LocalFile::open(&spaced).unwrap();
        assert_eq!((f.name(), f.bytes()), ("my notes.md", 2));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn unusable_files_are_refused_with_the_reason() {
        let dir = std::env::temp_dir().join(format!("weft-refuse-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let msg = |p: &Path| LocalFile::open(p).unwrap_err().to_string();
        assert!(msg(&dir.join("nope.png")).starts_with("no such file: "));
        assert!(msg(&dir).contains("is a directory"));
        std::fs::write(dir.join("empty.txt"), "").unwrap();
        assert!(msg(&dir.join("empty.txt")).contains("is empty"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn binary_stdin_is_refused_and_points_at_dash_f() {
        assert_eq!(stdin_text(b"hello\n".to_vec()).unwrap(), "hello\n");
        assert_eq!(stdin_text("你好".as_bytes().to_vec()).unwrap(), "你好");
        for bad in [b"a\0b".to_vec(), vec![0x89, b'P', b'N', b'G', 0xff]] {
            let e = stdin_text(bad).unwrap_err();
            assert!(e.to_string().contains("-f PATH"), "{e}");
            assert_eq!(e.exit_code(), crate::exit::USAGE);
        }
    }
}

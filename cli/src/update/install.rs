//! Replacing the running binary without ever leaving a broken one.
//!
//! The new binary is written next to the old one (same folder, so the same
//! filesystem: `rename` is atomic), fsynced, and run once (`--version`) before
//! anything else changes. Then the old one is kept as `<name>.old` (a hard link,
//! or a copy where links are not allowed) and the new one is renamed over it, and
//! the folder is fsynced. At every instant `weft` is either the old or the new
//! binary, whole; an error before the last rename leaves the old one in place and
//! the staged file removed (its `Drop`). Linux lets a running executable be
//! renamed over, so the process doing this keeps running the old code.

use std::fs::File;
use std::path::{Path, PathBuf};

use super::UpdateError;

/// The binary this process runs, through any symlink (`~/.local/bin/weft` → …):
/// the file that is replaced is the real one.
pub fn running_binary() -> Result<PathBuf, UpdateError> {
    std::env::current_exe()
        .and_then(|p| p.canonicalize())
        .map_err(|e| UpdateError::Local(format!("cannot find this weft's binary: {e}")))
}

/// `/usr/local/bin/weft` → `/usr/local/bin/weft.old`.
pub fn backup_of(binary: &Path) -> PathBuf {
    let mut name = binary.file_name().unwrap_or_default().to_os_string();
    name.push(".old");
    binary.with_file_name(name)
}

/// A new binary being written beside the one it will replace; removed on drop
/// unless installed.
pub struct Staged {
    path: PathBuf,
    file: Option<File>,
}

impl Staged {
    /// Creates `.<name>.update.<pid>` beside `binary`, with `binary`'s mode.
    pub fn beside(binary: &Path) -> Result<Staged, UpdateError> {
        let folder = binary.parent().unwrap_or(Path::new("."));
        let name = binary.file_name().unwrap_or_default().to_string_lossy();
        let path = folder.join(format!(".{name}.update.{}", std::process::id()));
        let file = File::options()
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(|e| not_writable(folder, &e))?;
        let staged = Staged {
            path,
            file: Some(file),
        };
        copy_mode(binary, &staged.path)?;
        Ok(staged)
    }

    pub fn writer(&mut self) -> &mut File {
        self.file.as_mut().expect("written before it is closed")
    }

    /// fsync and close, then run it once: a binary that cannot start here (wrong
    /// platform, truncated in a way the checksum could not know) stops here.
    pub fn seal(&mut self) -> Result<String, UpdateError> {
        if let Some(file) = self.file.take() {
            file.sync_all()
                .map_err(|e| UpdateError::Local(format!("fsync {}: {e}", self.path.display())))?;
        }
        runs(&self.path).map_err(|why| {
            UpdateError::Refused(format!("the downloaded binary does not run here: {why}"))
        })
    }

    /// Keeps `binary` as its backup, then renames this over it.
    pub fn install(mut self, binary: &Path) -> Result<PathBuf, UpdateError> {
        let backup = backup_of(binary);
        keep_copy(binary, &backup)?;
        std::fs::rename(&self.path, binary).map_err(|e| {
            UpdateError::Local(format!(
                "replacing {}: {e}; it was not changed",
                binary.display()
            ))
        })?;
        self.path = PathBuf::new();
        sync_folder(binary);
        Ok(backup)
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        if !self.path.as_os_str().is_empty() {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// Puts the backup back in place of `binary` (one rename); what it replaces is
/// gone. Returns what the restored binary says it is.
pub fn roll_back(binary: &Path) -> Result<String, UpdateError> {
    let backup = backup_of(binary);
    if !backup.exists() {
        return Err(UpdateError::Usage(format!(
            "nothing to roll back to: {} does not exist (`weft update` keeps the binary it replaces there)",
            backup.display()
        )));
    }
    let version = runs(&backup).map_err(|why| {
        UpdateError::Refused(format!(
            "{} does not run: {why}; nothing changed",
            backup.display()
        ))
    })?;
    std::fs::rename(&backup, binary)
        .map_err(|e| not_writable(binary.parent().unwrap_or(Path::new(".")), &e))?;
    sync_folder(binary);
    Ok(version)
}

/// `binary --version`'s line, if it runs and says it is weft.
fn runs(binary: &Path) -> Result<String, String> {
    let out = std::process::Command::new(binary)
        .arg("--version")
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| e.to_string())?;
    let said = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    if out.status.success() && said.starts_with("weft ") {
        Ok(said)
    } else {
        Err(format!(
            "`--version` exited with {} and printed {said:?}",
            out.status
        ))
    }
}

/// `binary` as `backup`, atomically: a link (or copy) under a temporary name,
/// then one rename over any earlier backup.
fn keep_copy(binary: &Path, backup: &Path) -> Result<(), UpdateError> {
    let folder = binary.parent().unwrap_or(Path::new("."));
    let temp = folder.join(format!(
        ".{}.{}",
        backup.file_name().unwrap_or_default().to_string_lossy(),
        std::process::id()
    ));
    let _ = std::fs::remove_file(&temp);
    let kept = std::fs::hard_link(binary, &temp).or_else(|_| {
        std::fs::copy(binary, &temp)?;
        File::open(&temp)?.sync_all()
    });
    let kept = kept.and_then(|()| std::fs::rename(&temp, backup));
    kept.map_err(|e| {
        let _ = std::fs::remove_file(&temp);
        UpdateError::Local(format!(
            "keeping the current binary as {}: {e}; nothing was replaced",
            backup.display()
        ))
    })
}

#[cfg(unix)]
fn copy_mode(from: &Path, to: &Path) -> Result<(), UpdateError> {
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(from)
        .map(|m| m.permissions().mode() & 0o7777)
        .unwrap_or(0o755)
        | 0o500;
    std::fs::set_permissions(to, std::fs::Permissions::from_mode(mode))
        .map_err(|e| UpdateError::Local(format!("chmod {}: {e}", to.display())))
}

#[cfg(not(unix))]
fn copy_mode(_from: &Path, _to: &Path) -> Result<(), UpdateError> {
    Ok(())
}

/// Makes the renames durable. A failure here changes nothing already done.
fn sync_folder(binary: &Path) {
    if let Some(folder) = binary.parent()
        && let Ok(dir) = File::open(folder)
    {
        let _ = dir.sync_all();
    }
}

fn not_writable(folder: &Path, e: &std::io::Error) -> UpdateError {
    let hint = if e.kind() == std::io::ErrorKind::PermissionDenied {
        " (run it as the user that owns the binary, e.g. with sudo, or install weft in a folder you own)"
    } else {
        ""
    };
    UpdateError::Local(format!(
        "cannot write in {}: {e}{hint}; nothing was replaced",
        folder.display()
    ))
}

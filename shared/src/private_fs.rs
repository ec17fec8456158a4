//! Files only their owner may read. Embedded mode keeps password hashes, token
//! hashes and every conversation in a SQLite file under the data dir; created with
//! the default umask it was world-readable (`0644` in a `0755` folder), so any
//! local account could copy it. Folders we create are `0700`, our files `0600`.
//!
//! A folder that already exists is left as it is (an operator may have chosen its
//! mode); the database files are tightened at every start. SQLite creates its
//! `-wal` and `-shm` files with the mode of the database file, so creating that
//! file `0600` before SQLite opens it covers them too.

use std::io;
use std::path::Path;

/// Create `dir` and any missing parents with mode `0700`.
pub fn create_private_dir(dir: &Path) -> io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
    }
    #[cfg(not(unix))]
    std::fs::create_dir_all(dir)
}

/// Create `path` empty with mode `0600` unless it exists; an existing file is
/// narrowed to `0600`. Its contents are never touched.
pub fn ensure_private_file(path: &Path) -> io::Result<()> {
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create(true).truncate(false);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    opts.open(path)?;
    restrict_to_owner(path)
}

/// Narrow an existing file to `0600`; a missing file is fine.
pub fn restrict_to_owner(path: &Path) -> io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        match std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            other => other,
        }
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        Ok(())
    }
}

#[cfg(all(test, unix))]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    fn mode(p: &Path) -> u32 {
        std::fs::metadata(p).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn folders_and_files_are_private_and_contents_kept() {
        let root = std::env::temp_dir().join(format!("weft-private-{}", uuid::Uuid::new_v4()));
        let dir = root.join("a").join("b");
        create_private_dir(&dir).unwrap();
        assert_eq!((mode(&root), mode(&dir)), (0o700, 0o700));
        let file = dir.join("db");
        std::fs::write(&file, "kept").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        ensure_private_file(&file).unwrap();
        assert_eq!(mode(&file), 0o600);
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "kept");
        ensure_private_file(&dir.join("new")).unwrap();
        assert_eq!(mode(&dir.join("new")), 0o600);
        restrict_to_owner(&dir.join("missing")).unwrap();
        std::fs::remove_dir_all(root).unwrap();
    }
}

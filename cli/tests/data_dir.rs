//! `weft up` keeps its data private: the SQLite database holds password hashes,
//! token hashes and every conversation, so other local users must not read it.

mod client_support;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use client_support::{Server, assert_code, run, stderr};

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .permissions()
        .mode()
        & 0o777
}

#[test]
fn the_data_dir_is_0700_and_its_files_0600() {
    let s = Server::start_with(false);
    // A reply means the database has been written to (WAL and all).
    let mut cmd = s.weft_bare();
    cmd.args(["-p", "hello"]);
    assert_code(&run(cmd, None), 0);

    // …and an attachment stored (folders and files under data/files).
    let notes = s.dir.path().join("notes.md");
    std::fs::write(&notes, "# private notes").unwrap();
    let mut cmd = s.weft_bare();
    cmd.args(["-p", "read this", "-f", notes.to_str().unwrap()]);
    assert_code(&run(cmd, None), 0);

    let data = s.dir.path().join("data");
    let mut files = 0;
    let mut pending = vec![data.clone()];
    while let Some(dir) = pending.pop() {
        assert_eq!(mode(&dir), 0o700, "{}", dir.display());
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else {
                assert_eq!(mode(&path), 0o600, "{}", path.display());
                files += 1;
            }
        }
    }
    for name in ["weft.db", "initial-admin-password"] {
        assert!(data.join(name).exists(), "{name} in {}", data.display());
    }
    // weft.db, the password, the note's bytes and its text
    assert!(files >= 4, "{files}");
}

/// The first start's generated admin password goes to a 0600 file, never to a
/// stderr that is not a terminal (a container's, a service manager's: collected
/// into logs others read); stderr says where the file is.
#[test]
fn the_initial_password_stays_out_of_collected_logs() {
    let s = Server::start_with(false);
    let file = s.dir.path().join("data").join("initial-admin-password");
    assert_eq!(mode(&file), 0o600);
    let password = std::fs::read_to_string(&file).unwrap().trim().to_string();
    assert!(password.len() >= 16, "{password:?}");
    let logs = s.logs();
    assert!(
        !logs.contains(&password),
        "the password is in the logs:\n{logs}"
    );
    assert!(
        logs.contains(&file.display().to_string()),
        "the logs say where it is:\n{logs}"
    );
    // The password in the file is the admin's.
    let mut cmd = s.weft_bare();
    cmd.args([
        "login",
        "--gateway",
        &s.url,
        "--username",
        "admin",
        "--password-stdin",
    ]);
    let out = run(cmd, Some(&format!("{password}\n")));
    assert_code(&out, 0);
    assert!(!stderr(&out).contains(&password));
}

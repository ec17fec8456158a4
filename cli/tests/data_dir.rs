//! `weft up` keeps its data private: the SQLite database holds password hashes,
//! token hashes and every conversation, so other local users must not read it.

mod client_support;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use client_support::{Server, assert_code, run};

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

    let data = s.dir.path().join("data");
    assert_eq!(mode(&data), 0o700, "{}", data.display());
    let mut files = 0;
    for entry in std::fs::read_dir(&data).unwrap() {
        let path = entry.unwrap().path();
        assert_eq!(mode(&path), 0o600, "{}", path.display());
        files += 1;
    }
    for name in ["weft.db", "initial-admin-password"] {
        assert!(data.join(name).exists(), "{name} in {}", data.display());
    }
    assert!(files >= 2);
}

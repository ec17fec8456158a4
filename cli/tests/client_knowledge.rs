//! `weft knowledge …` against a live `weft up`: create a base, add a folder
//! (files walked, hidden ones skipped, a refused file reported while the rest
//! go on), wait for the indexing, search, list documents, remove.

mod client_support;

use client_support::{Server, assert_code, run, stderr, stdout};

#[test]
fn a_folder_becomes_a_searchable_base_from_the_terminal() {
    let s = Server::start();
    let docs = tempfile::tempdir().unwrap();
    std::fs::create_dir(docs.path().join("guides")).unwrap();
    std::fs::write(
        docs.path().join("guides/vpn.md"),
        "# VPN\n\n## Setup\n\nInstall the client, then sign in with your badge number.\n",
    )
    .unwrap();
    std::fs::write(
        docs.path().join("policy.pdf"),
        weft_files::samples::pdf_pages(&[
            &["Expenses are approved by managers"],
            &["Travel needs a ticket number"],
        ]),
    )
    .unwrap();
    std::fs::write(docs.path().join(".hidden.md"), "not uploaded").unwrap();
    std::fs::write(docs.path().join("photo.png"), weft_files::samples::png()).unwrap();

    let mut cmd = s.weft();
    cmd.args([
        "knowledge",
        "create",
        "handbook",
        "--description",
        "team docs",
    ]);
    let out = run(cmd, None);
    assert_code(&out, 0);
    assert!(stdout(&out).contains("created knowledge base handbook (private)"));

    let mut cmd = s.weft();
    cmd.args(["knowledge", "add", "handbook"]).arg(docs.path());
    let out = run(cmd, None);
    // The image is refused (exit 1) and named; the others are indexed.
    assert_code(&out, 1);
    let err = stderr(&out);
    assert!(err.contains("uploaded 2 of 3 files to handbook"), "{err}");
    assert!(
        err.contains("refused") && err.contains("photo.png"),
        "{err}"
    );
    assert!(
        err.contains("indexing: 2 ready, 0 processing, 0 queued, 0 failed of 2"),
        "{err}"
    );

    let mut cmd = s.weft();
    cmd.args([
        "knowledge",
        "search",
        "handbook",
        "ticket number for travel",
    ]);
    let out = run(cmd, None);
    assert_code(&out, 0);
    let found = stdout(&out);
    assert!(found.starts_with("[1] policy.pdf — page 2\n"), "{found}");

    let mut cmd = s.weft();
    cmd.args(["knowledge", "search", "handbook", "badge"]);
    let found = stdout(&run(cmd, None));
    assert!(found.starts_with("[1] vpn.md — VPN > Setup\n"), "{found}");

    let mut cmd = s.weft();
    cmd.args(["knowledge", "list"]);
    let listed = stdout(&run(cmd, None));
    assert!(listed.starts_with("handbook"), "{listed}");
    assert!(
        listed.contains("private") && listed.contains("2 docs"),
        "{listed}"
    );

    let mut cmd = s.weft();
    cmd.args(["knowledge", "docs", "handbook"]);
    let listed = stdout(&run(cmd, None));
    assert!(
        listed.contains("ready") && listed.contains("vpn.md"),
        "{listed}"
    );
    assert!(!listed.contains(".hidden.md"), "{listed}");

    let mut cmd = s.weft();
    cmd.args(["knowledge", "rm", "handbook", "vpn.md"]);
    let out = run(cmd, None);
    assert_code(&out, 0);
    let mut cmd = s.weft();
    cmd.args(["knowledge", "search", "handbook", "badge"]);
    assert_eq!(
        stdout(&run(cmd, None)),
        "nothing in handbook matches \"badge\"\n"
    );

    let mut cmd = s.weft();
    cmd.args(["knowledge", "search", "nope", "x"]);
    let out = run(cmd, None);
    assert_code(&out, 2);
    assert!(stderr(&out).contains("no knowledge base \"nope\""));

    let mut cmd = s.weft();
    cmd.args(["knowledge", "rm", "handbook"]);
    let out = run(cmd, None);
    assert_code(&out, 0);
    assert!(stdout(&out).contains("deleted knowledge base handbook and its 1 documents"));
}

//! `weft update` against a release server on this machine (axum on port 0, real
//! HTTP), always on a copy of the test's `weft` in a temp dir, never on the
//! binary cargo built.
//!
//! The "newer build" is the test's own `weft` with bytes appended (an ELF runs
//! the same with a trailer, and the trailer makes its SHA-256 its own), served
//! under a manifest that says it is version 999.0.0. What `weft update` trusts
//! for the version is the signed manifest, by design: the binary it installs
//! still prints the version it was compiled with, so the tests tell old from new
//! by the bytes on disk, not by `--version`.

mod client_support;

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Arc, Mutex};

use axum::response::IntoResponse;
use client_support::{BIN, assert_code, run, stderr, stdout};
use sha2::{Digest, Sha256};

const CURRENT: &str = env!("CARGO_PKG_VERSION");

/// What the release server answers for one path.
#[derive(Clone)]
enum Served {
    Bytes(Vec<u8>),
    /// The test's `weft`, then `trailer`.
    Build {
        trailer: Vec<u8>,
    },
}

#[derive(Clone, Default)]
struct Files {
    served: Arc<Mutex<HashMap<String, Served>>>,
    requested: Arc<Mutex<Vec<String>>>,
}

/// A static file server for release folders, on its own runtime.
struct ReleaseServer {
    url: String,
    files: Files,
    _runtime: tokio::runtime::Runtime,
}

impl ReleaseServer {
    fn start() -> ReleaseServer {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let files = Files::default();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let url = format!("http://{}/releases", listener.local_addr().unwrap());
        let app = axum::Router::new()
            .fallback(serve)
            .with_state(files.clone());
        runtime.spawn(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            axum::serve(listener, app).await.unwrap();
        });
        ReleaseServer {
            url,
            files,
            _runtime: runtime,
        }
    }

    fn put(&self, path: &str, body: Served) {
        self.files
            .served
            .lock()
            .unwrap()
            .insert(format!("releases/{path}"), body);
    }

    fn requested(&self) -> Vec<String> {
        self.files.requested.lock().unwrap().clone()
    }
}

async fn serve(
    axum::extract::State(files): axum::extract::State<Files>,
    uri: axum::http::Uri,
) -> axum::response::Response {
    let path = uri.path().trim_start_matches('/').to_owned();
    files.requested.lock().unwrap().push(path.clone());
    let served = files.served.lock().unwrap().get(&path).cloned();
    match served {
        None => axum::http::StatusCode::NOT_FOUND.into_response(),
        Some(Served::Bytes(bytes)) => bytes.into_response(),
        Some(Served::Build { trailer }) => {
            let file = tokio::fs::File::open(BIN).await.unwrap();
            let chunks =
                futures::stream::unfold((file, Some(trailer)), |(mut file, trailer)| async move {
                    use tokio::io::AsyncReadExt;
                    let mut buf = vec![0; 256 * 1024];
                    let n = file.read(&mut buf).await.unwrap();
                    if n > 0 {
                        buf.truncate(n);
                        Some((Ok::<_, std::io::Error>(buf), (file, trailer)))
                    } else {
                        trailer.map(|t| (Ok(t), (file, None)))
                    }
                });
            axum::body::Body::from_stream(chunks).into_response()
        }
    }
}

/// The release key pair of one test, made now (never stored anywhere).
struct Signer(minisign::KeyPair);

impl Signer {
    fn new() -> Signer {
        Signer(minisign::KeyPair::generate_unencrypted_keypair().unwrap())
    }

    fn public_key(&self) -> String {
        self.0.pk.to_base64()
    }

    fn sign(&self, bytes: &[u8]) -> Vec<u8> {
        minisign::sign(
            Some(&self.0.pk),
            &self.0.sk,
            bytes,
            Some("weft test release"),
            None,
        )
        .unwrap()
        .into_string()
        .into_bytes()
    }
}

/// The SHA-256 and size of the test's `weft` followed by `trailer`.
fn build_digest(trailer: &[u8]) -> (String, u64) {
    static BINARY: std::sync::OnceLock<(Sha256, u64)> = std::sync::OnceLock::new();
    let (prefix, size) = BINARY.get_or_init(|| {
        let mut hash = Sha256::new();
        let mut file = std::fs::File::open(BIN).unwrap();
        let mut buf = vec![0; 1 << 20];
        let mut size = 0;
        loop {
            let n = file.read(&mut buf).unwrap();
            if n == 0 {
                break (hash, size);
            }
            size += n as u64;
            hash.update(&buf[..n]);
        }
    });
    let mut hash = prefix.clone();
    hash.update(trailer);
    (hex::encode(hash.finalize()), size + trailer.len() as u64)
}

fn manifest(version: &str, file: &str, sha256: &str, size: u64) -> Vec<u8> {
    let platform = format!("{}-{}", std::env::consts::ARCH, std::env::consts::OS);
    serde_json::to_vec_pretty(&serde_json::json!({
        "format": 1,
        "version": version,
        "artifacts": {platform: {"file": file, "size": size, "sha256": sha256}},
    }))
    .unwrap()
}

/// Publishes `version` in `folder` ("" is the latest): a build with `trailer`,
/// and a manifest signed by `signer`.
fn publish(server: &ReleaseServer, signer: &Signer, folder: &str, version: &str, trailer: &[u8]) {
    let file = format!("weft-{version}-test");
    let (sha256, size) = build_digest(trailer);
    let manifest = manifest(version, &file, &sha256, size);
    server.put(
        &format!("{folder}weft-manifest.json.minisig"),
        Served::Bytes(signer.sign(&manifest)),
    );
    server.put(
        &format!("{folder}weft-manifest.json"),
        Served::Bytes(manifest),
    );
    server.put(
        &format!("{folder}{file}"),
        Served::Build {
            trailer: trailer.to_vec(),
        },
    );
}

/// A copy of `weft` in a temp folder, with its own HOME, that updates from `server`.
struct Installed {
    dir: tempfile::TempDir,
    env: Vec<(&'static str, String)>,
}

impl Installed {
    fn new(server: &ReleaseServer, signer: &Signer) -> Installed {
        let installed = Installed::bare();
        Installed {
            env: vec![
                ("WEFT_UPDATE_URL", server.url.clone()),
                ("WEFT_UPDATE_PUBLIC_KEY", signer.public_key()),
            ],
            ..installed
        }
    }

    /// With no release settings but its config file.
    fn bare() -> Installed {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("bin")).unwrap();
        std::fs::copy(BIN, dir.path().join("bin").join("weft")).unwrap();
        Installed {
            dir,
            env: Vec::new(),
        }
    }

    fn binary(&self) -> PathBuf {
        self.dir.path().join("bin").join("weft")
    }

    fn write_config(&self, text: &str) {
        let folder = self.dir.path().join("config").join("weft");
        std::fs::create_dir_all(&folder).unwrap();
        std::fs::write(folder.join("config.toml"), text).unwrap();
    }

    fn weft(&self, args: &[&str]) -> Output {
        let mut cmd = Command::new(self.binary());
        for (k, _) in std::env::vars() {
            if k.starts_with("WEFT_") || k.ends_with("_PROXY") || k.ends_with("_proxy") {
                cmd.env_remove(k);
            }
        }
        cmd.env("HOME", self.dir.path().join("home"))
            .env("XDG_CONFIG_HOME", self.dir.path().join("config"))
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .args(args);
        run(cmd, None)
    }

    /// The files in the binary's folder: no leftovers from a refused update.
    fn folder(&self) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(self.dir.path().join("bin"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }
}

fn digest(path: &Path) -> String {
    hex::encode(Sha256::digest(std::fs::read(path).unwrap()))
}

#[test]
fn a_newer_signed_build_is_installed_and_rollback_restores_the_old_one() {
    let (server, signer) = (ReleaseServer::start(), Signer::new());
    publish(&server, &signer, "", "999.0.0", b"\nnewer build\n");
    let weft = Installed::new(&server, &signer);
    let original = digest(&weft.binary());

    let out = weft.weft(&["update", "--check"]);
    assert_code(&out, 0);
    assert!(
        stdout(&out).contains("weft 999.0.0 is available"),
        "{}",
        stdout(&out)
    );
    assert_eq!(
        (digest(&weft.binary()), weft.folder()),
        (original.clone(), vec!["weft".to_owned()])
    );
    assert!(
        !server
            .requested()
            .iter()
            .any(|p| p.ends_with("weft-999.0.0-test")),
        "--check downloads no binary"
    );

    let out = weft.weft(&["update"]);
    assert_code(&out, 0);
    assert!(
        stdout(&out).contains("weft 999.0.0 installed"),
        "{}",
        stdout(&out)
    );
    assert!(
        stderr(&out).contains("checksum verified"),
        "{}",
        stderr(&out)
    );
    assert_eq!(digest(&weft.binary()), build_digest(b"\nnewer build\n").0);
    assert_eq!(digest(&weft.dir.path().join("bin/weft.old")), original);
    assert_eq!(weft.folder(), ["weft", "weft.old"]);
    let out = weft.weft(&["--version"]);
    assert_code(&out, 0);

    // The updated binary itself puts the old one back.
    let out = weft.weft(&["update", "--rollback"]);
    assert_code(&out, 0);
    assert!(
        stdout(&out).contains(&format!("is weft {CURRENT} again")),
        "{}",
        stdout(&out)
    );
    assert_eq!(
        (digest(&weft.binary()), weft.folder()),
        (original, vec!["weft".to_owned()])
    );

    let out = weft.weft(&["update", "--rollback"]);
    assert_code(&out, 2);
    assert!(
        stderr(&out).contains("nothing to roll back to"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_corrupted_build_is_refused_and_nothing_is_replaced() {
    let (server, signer) = (ReleaseServer::start(), Signer::new());
    publish(&server, &signer, "", "999.0.0", b"\nas signed\n");
    let weft = Installed::new(&server, &signer);
    let original = digest(&weft.binary());

    // Same length, other bytes: only the checksum can tell.
    server.put(
        "weft-999.0.0-test",
        Served::Build {
            trailer: b"\ntampered!\n".to_vec(),
        },
    );
    let out = weft.weft(&["update"]);
    assert_code(&out, 1);
    assert!(
        stderr(&out).contains("does not match the signed manifest"),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        (digest(&weft.binary()), weft.folder()),
        (original.clone(), vec!["weft".to_owned()])
    );

    // Cut short by a byte.
    server.put(
        "weft-999.0.0-test",
        Served::Build {
            trailer: b"\nas signed".to_vec(),
        },
    );
    let out = weft.weft(&["update"]);
    assert_code(&out, 1);
    assert!(
        stderr(&out).contains("bytes the manifest says: refused"),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        (digest(&weft.binary()), weft.folder()),
        (original, vec!["weft".to_owned()])
    );
}

#[test]
fn a_manifest_without_a_good_signature_is_refused_before_any_download() {
    let (server, signer) = (ReleaseServer::start(), Signer::new());
    let weft = Installed::new(&server, &signer);
    let original = digest(&weft.binary());

    // Signed, then changed to point at another build.
    publish(&server, &signer, "", "999.0.0", b"\nsigned\n");
    let (sha256, size) = build_digest(b"\nswapped\n");
    server.put(
        "weft-manifest.json",
        Served::Bytes(manifest("999.0.0", "weft-999.0.0-test", &sha256, size)),
    );
    server.put(
        "weft-999.0.0-test",
        Served::Build {
            trailer: b"\nswapped\n".to_vec(),
        },
    );
    let out = weft.weft(&["update"]);
    assert_code(&out, 1);
    assert!(
        stderr(&out).contains("does not match its contents"),
        "{}",
        stderr(&out)
    );

    // Genuinely signed, by someone else's key.
    publish(&server, &Signer::new(), "", "999.0.0", b"\nsigned\n");
    let out = weft.weft(&["update", "--check"]);
    assert_code(&out, 1);
    assert!(
        stderr(&out).contains("signed with another key"),
        "{}",
        stderr(&out)
    );

    assert!(
        !server
            .requested()
            .iter()
            .any(|p| p.ends_with("weft-999.0.0-test")),
        "{:?}",
        server.requested()
    );
    assert_eq!(
        (digest(&weft.binary()), weft.folder()),
        (original, vec!["weft".to_owned()])
    );
}

#[test]
fn an_older_release_is_installed_only_when_asked_for_by_version() {
    let (server, signer) = (ReleaseServer::start(), Signer::new());
    publish(&server, &signer, "", "0.0.1", b"\nold\n");
    publish(&server, &signer, "0.0.1/", "0.0.1", b"\nold\n");
    // A signed manifest of 0.0.1 served where 0.0.2 should be (a replay).
    publish(&server, &signer, "0.0.2/", "0.0.1", b"\nold\n");
    // The settings from the config file this time.
    let weft = Installed::bare();
    weft.write_config(&format!(
        "[update]\nurl = \"{}\"\npublic_key = \"{}\"\n",
        server.url,
        signer.public_key()
    ));
    let original = digest(&weft.binary());

    let out = weft.weft(&["update"]);
    assert_code(&out, 0);
    assert!(stdout(&out).contains("not downgrading"), "{}", stdout(&out));
    assert_eq!(weft.folder(), ["weft"]);

    let out = weft.weft(&["update", "--to", "0.0.2"]);
    assert_code(&out, 1);
    assert!(
        stderr(&out).contains("describes version 0.0.1, not 0.0.2"),
        "{}",
        stderr(&out)
    );
    let out = weft.weft(&["update", "--to", "0.0.3"]);
    assert_code(&out, 1);
    assert!(
        stderr(&out).contains("there is no release 0.0.3"),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        (digest(&weft.binary()), weft.folder()),
        (original.clone(), vec!["weft".to_owned()])
    );

    let out = weft.weft(&["update", "--to", "0.0.1"]);
    assert_code(&out, 0);
    assert_eq!(digest(&weft.binary()), build_digest(b"\nold\n").0);
    assert_eq!(digest(&weft.dir.path().join("bin/weft.old")), original);
}

#[test]
fn missing_or_wrong_release_settings_are_usage_errors() {
    let weft = Installed::bare();
    weft.write_config(
        "[update]\nurl = \"http://downloads.example/weft\"\npublic_key = \"RWQ-not-a-key\"\n",
    );
    let out = weft.weft(&["update", "--check"]);
    assert_code(&out, 2);
    assert!(stderr(&out).contains("https://"), "{}", stderr(&out));
    weft.write_config(
        "[update]\nurl = \"https://downloads.example/weft\"\npublic_key = \"RWQ-not-a-key\"\n",
    );
    let out = weft.weft(&["update", "--check"]);
    assert_code(&out, 2);
    assert!(
        stderr(&out).contains("not a minisign public key"),
        "{}",
        stderr(&out)
    );
}

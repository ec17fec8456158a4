//! A cluster whose gateway and worker share no disk: attachments go through an
//! S3-compatible store (moto's server), checked with boto3, the official SDK.

use super::{image_and_pdf_reach_the_model, stored_files};
use crate::harness::*;

/// moto's S3 server in a child process (see `s3/s3.py`), stopped when dropped.
struct LocalS3 {
    child: std::process::Child,
    endpoint: String,
}

const S3_SCRIPT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/conformance/attachments/s3.py"
);

impl LocalS3 {
    fn start(bucket: &str) -> LocalS3 {
        use std::io::BufRead;
        let mut child = std::process::Command::new(python())
            .args([S3_SCRIPT, "serve", bucket])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("start moto");
        // moto says a few things first; our script's line is `port N`.
        let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
        let port = lines
            .by_ref()
            .map_while(Result::ok)
            .find_map(|l| l.trim().strip_prefix("port ").map(str::to_string))
            .expect("moto did not start (is moto[server] installed in WEFT_PYTHON?)");
        // Keep reading, so the server never writes into a closed pipe.
        std::thread::spawn(move || lines.for_each(drop));
        LocalS3 {
            child,
            endpoint: format!("http://127.0.0.1:{port}"),
        }
    }

    /// `(key, size, sha256)` of every object, read back with boto3.
    fn objects(&self, bucket: &str) -> Vec<(String, usize, String)> {
        let out = std::process::Command::new(python())
            .args([S3_SCRIPT, "list", &self.endpoint, bucket])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(|l| {
                let mut parts = l.split(' ');
                let (k, n, h) = (parts.next(), parts.next(), parts.next());
                (
                    k.unwrap().into(),
                    n.unwrap().parse().unwrap(),
                    h.unwrap().into(),
                )
            })
            .collect()
    }
}

impl Drop for LocalS3 {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A cluster whose gateway and worker share no disk: the worker reads what the
/// gateway received from an S3-compatible store, checked with the AWS SDK.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s3_store_serves_a_cluster_without_a_shared_disk() {
    let s3 = LocalS3::start("weft-files");
    let store = [
        ("WEFT_ATTACHMENTS__STORE", "s3://weft-files/tenant-a"),
        ("AWS_ACCESS_KEY_ID", "test"),
        ("AWS_SECRET_ACCESS_KEY", "test"),
        ("AWS_REGION", "us-east-1"),
        ("AWS_ENDPOINT_URL", s3.endpoint.as_str()),
        ("AWS_ALLOW_HTTP", "true"),
    ];
    let env = Env::new(Backend::Distributed, &store).await;
    let worker_home = tempfile::tempdir().unwrap();
    let mut worker = env.command(&["worker"]);
    worker.env("HOME", worker_home.path());
    let mut app = App::start_in(env, false);
    app.workers.push(Proc::spawn(worker, "worker started"));

    let alice = app.user("alice").await;
    let s = app.session(&alice).await;
    let (png, pdf) = image_and_pdf_reach_the_model(&app, &alice, &s).await;

    let (png_sha, pdf_sha) = (weft_files::sha256_hex(&png), weft_files::sha256_hex(&pdf));
    let mut objects = s3.objects("weft-files");
    objects.sort();
    let keys: Vec<&str> = objects.iter().map(|o| o.0.as_str()).collect();
    assert_eq!(
        keys,
        [
            format!("tenant-a/blobs/{}/{png_sha}", &png_sha[..2]),
            format!("tenant-a/blobs/{}/{pdf_sha}", &pdf_sha[..2]),
            format!("tenant-a/text/{}/{pdf_sha}", &pdf_sha[..2]),
        ]
        .iter()
        .map(String::as_str)
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect::<Vec<_>>()
    );
    let png_object = objects.iter().find(|o| o.0.ends_with(&png_sha)).unwrap();
    assert_eq!((png_object.1, &png_object.2), (png.len(), &png_sha));
    // Neither process kept a copy on its own disk.
    assert_eq!(stored_files(&app), 0);
    assert!(!worker_home.path().join(".local/share/weft/files").exists());

    let (st, _) = app
        .call(
            reqwest::Method::DELETE,
            &format!("/v1/sessions/{s}"),
            &alice,
            None,
        )
        .await;
    assert_eq!(st, 204);
    assert_eq!(
        s3.objects("weft-files"),
        Vec::new(),
        "deleted with the session"
    );
}

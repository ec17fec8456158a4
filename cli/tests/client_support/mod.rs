//! Shared harness of the `client_*` tests: a live `weft up` on port 0 in a temp
//! data dir with HOME/XDG dirs in the same temp dir (the real ~/.config is never
//! touched), and the real `weft` binary pointed at it. Every wait has a timeout.

#![allow(dead_code)]

pub mod proxy;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

pub const BIN: &str = env!("CARGO_BIN_EXE_weft");
pub const WAIT: Duration = Duration::from_secs(60);

/// Asks `probe` every 100 ms until it answers `Ok`, failing the test after
/// [`WAIT`] with `what` it waited for and the probe's last answer: the blocking
/// twin of the conformance suite's `eventually` (these tests drive the `weft`
/// binary synchronously).
pub fn eventually<T>(what: &str, mut probe: impl FnMut() -> Result<T, String>) -> T {
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        match probe() {
            Ok(found) => return found,
            Err(last) if std::time::Instant::now() >= deadline => {
                panic!("{what}: not within {WAIT:?}; last seen: {last}")
            }
            Err(_) => std::thread::sleep(Duration::from_millis(100)),
        }
    }
}

pub struct Server {
    pub url: String,
    pub token: String,
    pub dir: tempfile::TempDir,
    /// What `weft up` wrote to stderr (a pipe, as a container's log collector sees it).
    log: Arc<Mutex<Vec<String>>>,
    child: Child,
}

impl Server {
    /// `weft up` with a bootstrap admin token.
    pub fn start() -> Server {
        Server::start_with(true)
    }

    /// `weft up` with or without `WEFT_ADMIN_TOKEN` (without it, first boot writes
    /// the client config into our temp HOME).
    pub fn start_with(admin_token: bool) -> Server {
        Server::start_env(admin_token, &[])
    }

    /// `weft up` with extra environment (settings such as tool policies).
    pub fn start_env(admin_token: bool, env: &[(&str, &str)]) -> Server {
        let dir = tempfile::tempdir().expect("temp dir");
        let token = format!("weft_test_{}", uuid::Uuid::new_v4().simple());
        let mut cmd = Command::new(BIN);
        cmd.args(["up", "--listen", "127.0.0.1:0", "--data-dir"])
            .arg(dir.path().join("data"));
        isolate(&mut cmd, dir.path());
        cmd.envs(env.iter().copied());
        if admin_token {
            cmd.env("WEFT_ADMIN_TOKEN", &token);
        }
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn weft up");
        let stderr = child.stderr.take().expect("stderr");
        let (tx, rx) = mpsc::channel();
        let log = Arc::new(Mutex::new(Vec::new()));
        let sink = log.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                sink.lock().unwrap().push(line.clone());
                if let Some(i) = line.find("listening on ") {
                    let _ = tx.send(line[i + "listening on ".len()..].trim().to_string());
                }
            }
        });
        let url = rx
            .recv_timeout(WAIT)
            .expect("weft up did not report its address");
        Server {
            url,
            token,
            dir,
            log,
            child,
        }
    }

    /// Its stderr so far (everything up to the ready line, at least).
    pub fn logs(&self) -> String {
        self.log.lock().unwrap().join("\n")
    }

    /// The client binary, isolated, pointed at this server with its token.
    pub fn weft(&self) -> Command {
        let mut cmd = self.weft_bare();
        cmd.env("WEFT_GATEWAY", &self.url)
            .env("WEFT_TOKEN", &self.token);
        cmd
    }

    /// The client binary with only the isolated HOME (config file, if any).
    pub fn weft_bare(&self) -> Command {
        let mut cmd = Command::new(BIN);
        isolate(&mut cmd, self.dir.path());
        cmd
    }

    pub fn config_path(&self) -> std::path::PathBuf {
        self.dir
            .path()
            .join("config")
            .join("weft")
            .join("config.toml")
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn isolate(cmd: &mut Command, dir: &std::path::Path) {
    for (k, _) in std::env::vars() {
        if k.starts_with("WEFT_") || k.ends_with("_PROXY") || k.ends_with("_proxy") {
            cmd.env_remove(k);
        }
    }
    cmd.env("HOME", dir.join("home"))
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .env("XDG_STATE_HOME", dir.join("state"))
        .env("RUST_LOG", "warn");
}

/// Run to completion with `stdin` as input, failing the test after [`WAIT`].
pub fn run(cmd: Command, stdin: Option<&str>) -> Output {
    run_bytes(cmd, stdin.map(str::as_bytes))
}

/// [`run`] with any bytes on stdin (binary input).
pub fn run_bytes(mut cmd: Command, stdin: Option<&[u8]>) -> Output {
    cmd.stdin(if stdin.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn weft");
    if let Some(input) = stdin {
        use std::io::Write;
        let mut pipe = child.stdin.take().expect("stdin");
        pipe.write_all(input).expect("write stdin");
    }
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    rx.recv_timeout(WAIT)
        .expect("weft did not finish in time")
        .expect("wait for weft")
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Exit code, with stderr in the panic message when it is not the expected one.
pub fn assert_code(o: &Output, code: i32) {
    assert_eq!(
        o.status.code(),
        Some(code),
        "stdout: {}\nstderr: {}",
        stdout(o),
        stderr(o)
    );
}

/// Run `weft --output json …` and parse its one JSON line.
pub fn json(server: &Server, args: &[&str]) -> serde_json::Value {
    let mut cmd = server.weft();
    cmd.args(["--output", "json"]).args(args);
    let out = run(cmd, None);
    assert_code(&out, 0);
    serde_json::from_str(stdout(&out).trim()).unwrap_or_else(|e| panic!("{e}: {}", stdout(&out)))
}

/// An API call with the server's token (to set up what a test then looks at
/// through the client): its status and JSON body (null when none).
pub fn api(
    server: &Server,
    method: reqwest::Method,
    path: &str,
    body: Option<serde_json::Value>,
) -> (u16, serde_json::Value) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    rt.block_on(async {
        let mut req = reqwest::Client::new()
            .request(method, format!("{}{path}", server.url))
            .bearer_auth(&server.token)
            .timeout(WAIT);
        if let Some(body) = body {
            req = req.json(&body);
        }
        let resp = req.send().await.expect("the gateway answers");
        let status = resp.status().as_u16();
        (status, resp.json().await.unwrap_or(serde_json::Value::Null))
    })
}

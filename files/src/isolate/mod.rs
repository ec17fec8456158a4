//! Where untrusted documents are parsed: a short-lived child process per file,
//! killed when it takes too long, and limited in CPU time and memory.
//!
//! Parsers of PDF, Office and HTML read bytes a stranger chose. Some of the ones
//! Weft uses (they read ordinary files well) have no bound where it matters:
//! `pdf-extract` recurses through form XObjects without a cycle check (a
//! 636-byte PDF whose form draws itself overflows the stack), `lopdf` inflates
//! chained FlateDecode filters without a limit (9 KB becomes 4 GiB), `htmd`
//! recurses over the DOM (300,000 nested `<div>`s). Inside a server, a stack
//! overflow aborts the *whole process* — every user offline — and a timeout
//! around a thread only stops waiting for it: the thread keeps burning a core.
//!
//! So no server thread parses a document. [`Extractor::child_process`] runs
//! `weft extract <kind>` (the same binary; [`serve_child`] is its body) with the
//! bytes on stdin and reads the text from stdout:
//!
//! - the child sets its own `RLIMIT_AS` (`files.extract_memory_bytes`, default
//!   1 GiB of address space), `RLIMIT_CPU` (`files.extract_timeout_secs`, default
//!   20 s; the kernel sends SIGXCPU, then SIGKILL a second later), no core
//!   dumps, no file writes, a handful of descriptors — before it reads a byte;
//! - the parent kills it at the same number of wall-clock seconds (a child
//!   blocked rather than computing), and reads at most [`TEXT_CAP`] of output;
//! - it starts with an empty environment in `/`, in its own process group;
//! - at most `max(2, cores)` run at once, so a burst of hostile uploads costs a
//!   bounded number of cores and gigabytes however many arrive.
//!
//! A child that dies — a stack overflow, an allocation refused by the limit, a
//! CPU limit, the wall clock — is a [`Failure`] naming why, which callers turn
//! into "could not be read (reason)": never a 5xx, never a lost message. What it
//! costs: one `fork`+`exec` of the binary per document (measured in
//! BENCHMARKS.md "Extraction in a child process").
//!
//! [`Extractor::in_thread`] runs the same code on the blocking pool with no
//! isolation, for library tests that have no `weft` binary to start; servers
//! never use it.

mod child;

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::Semaphore;

pub use child::{EXIT_UNREADABLE, serve_child};

pub use crate::extract::Job;
use crate::{Detected, Refused};

/// Text a child may return; the rest is dropped (far above any model budget).
pub const TEXT_CAP: usize = crate::extract::TEXT_CAP;
/// What a child may say on stderr before the parent stops keeping it.
const STDERR_CAP: usize = 16 * 1024;

/// How much one extraction may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Wall-clock and CPU seconds.
    pub timeout: Duration,
    /// Address space of the child, in bytes.
    pub memory_bytes: u64,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            timeout: Duration::from_secs(20),
            memory_bytes: 1 << 30,
        }
    }
}

/// Why a document could not be read, for the person who sent it and the model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Failure {
    /// The parser understood enough to say what is wrong.
    #[error("{0}")]
    Unreadable(String),
    #[error("reading it took longer than {0} s")]
    TimedOut(u64),
    #[error("reading it needs more than {0} MiB of memory")]
    TooMuchMemory(u64),
    #[error("it is nested too deeply to read")]
    TooDeep,
    #[error("the reader failed on it (a damaged or hostile file)")]
    Crashed,
    /// The child could not be started at all: a server problem, not the file's.
    #[error("the document reader could not be started ({0})")]
    NotStarted(String),
}

impl Failure {
    /// The same failure as the [`Refused::Unreadable`] of a named file.
    pub fn refused(&self, name: &str) -> Refused {
        Refused::Unreadable {
            name: name.to_owned(),
            reason: self.to_string(),
        }
    }
}

/// Runs document parsers where they cannot take the caller down. Cheap to
/// clone; all clones share one concurrency bound.
#[derive(Clone)]
pub struct Extractor {
    runner: Arc<Runner>,
    limits: Limits,
    slots: Arc<Semaphore>,
}

enum Runner {
    Child {
        program: PathBuf,
        args: Vec<OsString>,
    },
    InThread,
}

impl std::fmt::Debug for Extractor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let runner = match &*self.runner {
            Runner::Child { program, .. } => format!("child {}", program.display()),
            Runner::InThread => "in thread".to_owned(),
        };
        f.debug_struct("Extractor")
            .field("runner", &runner)
            .field("limits", &self.limits)
            .finish()
    }
}

impl Extractor {
    /// Each job runs as `program args… <kind> --cpu-secs N --memory-bytes M`;
    /// for Weft that is `weft extract`.
    pub fn child_process(
        program: impl Into<PathBuf>,
        args: impl IntoIterator<Item = impl Into<OsString>>,
        limits: Limits,
    ) -> Extractor {
        Extractor::with_runner(
            Runner::Child {
                program: program.into(),
                args: args.into_iter().map(Into::into).collect(),
            },
            limits,
        )
    }

    /// `weft extract` of the running binary: what a server uses.
    pub fn this_binary(limits: Limits) -> std::io::Result<Extractor> {
        Ok(Extractor::child_process(
            std::env::current_exe()?,
            ["extract"],
            limits,
        ))
    }

    /// No isolation: the parsers run on the blocking pool of this process, and
    /// a hostile file can still abort it. For library tests only.
    pub fn in_thread(limits: Limits) -> Extractor {
        Extractor::with_runner(Runner::InThread, limits)
    }

    fn with_runner(runner: Runner, limits: Limits) -> Extractor {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        Extractor {
            runner: Arc::new(runner),
            limits,
            slots: Arc::new(Semaphore::new(cores.max(2))),
        }
    }

    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// The text of a detected document (never an image).
    pub async fn document(&self, det: &Detected, bytes: Bytes) -> Result<String, Failure> {
        let job = Job::for_document(det)
            .ok_or_else(|| Failure::Unreadable("an image has no text to extract".into()))?;
        self.run(job, bytes).await
    }

    /// [`Extractor::document`], with a PDF's pages separated by form feeds.
    pub async fn document_paged(&self, det: &Detected, bytes: Bytes) -> Result<String, Failure> {
        match Job::for_document(det) {
            Some(Job::Pdf) => self.run(Job::PdfPages, bytes).await,
            _ => self.document(det, bytes).await,
        }
    }

    /// The text `job` makes of `bytes`.
    pub async fn run(&self, job: Job, bytes: Bytes) -> Result<String, Failure> {
        let _slot = self
            .slots
            .acquire()
            .await
            .map_err(|_| Failure::NotStarted("closed".into()))?;
        let started = std::time::Instant::now();
        let result = match &*self.runner {
            Runner::Child { program, args } => self.in_child(program, args, job, bytes).await,
            Runner::InThread => self.on_blocking_pool(job, bytes).await,
        };
        metrics::histogram!("weft_extract_duration_seconds", "kind" => job.as_arg())
            .record(started.elapsed().as_secs_f64());
        if let Err(failure) = &result {
            metrics::counter!("weft_extract_failures_total", "reason" => failure.label())
                .increment(1);
        }
        result
    }

    async fn on_blocking_pool(&self, job: Job, bytes: Bytes) -> Result<String, Failure> {
        let task = tokio::task::spawn_blocking(move || job.run(&bytes));
        match tokio::time::timeout(self.limits.timeout, task).await {
            Ok(Ok(result)) => result.map_err(Failure::Unreadable),
            Ok(Err(_)) => Err(Failure::Crashed),
            Err(_) => Err(Failure::TimedOut(self.limits.timeout.as_secs())),
        }
    }

    async fn in_child(
        &self,
        program: &PathBuf,
        args: &[OsString],
        job: Job,
        bytes: Bytes,
    ) -> Result<String, Failure> {
        let secs = self.limits.timeout.as_secs().max(1);
        let mut child = tokio::process::Command::new(program)
            .args(args)
            .arg(job.as_arg())
            .arg("--cpu-secs")
            .arg(secs.to_string())
            .arg("--memory-bytes")
            .arg(self.limits.memory_bytes.to_string())
            .env_clear()
            // `weft` allocates with mimalloc, which reserves address space 1 GiB
            // at a time by default: under the child's `RLIMIT_AS` that
            // reservation fails and small allocations with it. 8 MiB steps keep
            // the limit what it says (glibc's malloc ignores the variable).
            .env("MIMALLOC_ARENA_RESERVE", "8M")
            .current_dir("/")
            .process_group(0)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| Failure::NotStarted(format!("{}: {e}", program.display())))?;
        let (Some(mut stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(Failure::NotStarted("no pipes".into()));
        };
        // Feed and drain at once: a child blocked writing a full pipe must not
        // wait for a parent blocked writing its stdin.
        let feed = async move {
            // A child that dies early closes the pipe; what it says is in its status.
            let _ = stdin.write_all(&bytes).await;
            drop(stdin);
        };
        let read_out = read_capped(stdout, TEXT_CAP);
        let read_err = read_capped(stderr, STDERR_CAP);
        let work = async {
            let ((), out, err, status) = tokio::join!(feed, read_out, read_err, child.wait());
            (out, err, status)
        };
        let Ok((out, err, status)) = tokio::time::timeout(self.limits.timeout, work).await else {
            let _ = child.start_kill();
            let _ = child.wait().await;
            return Err(Failure::TimedOut(secs));
        };
        let status = status.map_err(|e| Failure::NotStarted(format!("waiting for it: {e}")))?;
        interpret(status, out, &err, self.limits)
    }
}

impl Failure {
    fn label(&self) -> &'static str {
        match self {
            Failure::Unreadable(_) => "unreadable",
            Failure::TimedOut(_) => "timeout",
            Failure::TooMuchMemory(_) => "memory",
            Failure::TooDeep => "depth",
            Failure::Crashed => "crashed",
            Failure::NotStarted(_) => "not_started",
        }
    }
}

/// Up to `cap` bytes of `from`; the rest is read and dropped, so the child is
/// never left blocked on a full pipe.
async fn read_capped(mut from: impl tokio::io::AsyncRead + Unpin, cap: usize) -> Vec<u8> {
    let mut kept = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match from.read(&mut buf).await {
            Ok(0) | Err(_) => return kept,
            Ok(n) => {
                let room = cap.saturating_sub(kept.len());
                kept.extend_from_slice(&buf[..n.min(room)]);
            }
        }
    }
}

/// What a finished child's status and output mean.
fn interpret(
    status: ExitStatus,
    out: Vec<u8>,
    err: &[u8],
    limits: Limits,
) -> Result<String, Failure> {
    use std::os::unix::process::ExitStatusExt;
    let text = |bytes: Vec<u8>| match String::from_utf8(bytes) {
        Ok(s) => s,
        // Cut at the cap mid-character: keep the whole characters.
        Err(e) => {
            let valid = e.utf8_error().valid_up_to();
            let mut bytes = e.into_bytes();
            bytes.truncate(valid);
            String::from_utf8(bytes).unwrap_or_default()
        }
    };
    if status.success() {
        return Ok(text(out));
    }
    if status.code() == Some(EXIT_UNREADABLE) {
        return Err(Failure::Unreadable(text(out)));
    }
    let said = String::from_utf8_lossy(err);
    if said.contains("memory allocation of") || said.contains("capacity overflow") {
        return Err(Failure::TooMuchMemory(limits.memory_bytes >> 20));
    }
    if said.contains("overflowed its stack") {
        return Err(Failure::TooDeep);
    }
    const SIGKILL: i32 = 9;
    const SIGXCPU: i32 = 24;
    if matches!(status.signal(), Some(SIGXCPU | SIGKILL)) {
        return Err(Failure::TimedOut(limits.timeout.as_secs().max(1)));
    }
    tracing::debug!(?status, stderr = %said.trim(), "document reader failed");
    Err(Failure::Crashed)
}

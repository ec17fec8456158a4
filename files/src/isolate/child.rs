//! The child's side: `weft extract <kind>` limits itself, reads the document
//! from stdin, writes its text to stdout and exits.
//!
//! Exit 0: stdout is the text. Exit [`EXIT_UNREADABLE`]: stdout says why the
//! file cannot be read. Anything else (a signal, an abort) is the parent's to
//! interpret from the status and stderr.

use std::io::{Read, Write};
use std::process::ExitCode;

use nix::sys::resource::{Resource, setrlimit};

use super::{Job, Limits};

/// The exit status of a file the parser refused (`EX_DATAERR`).
pub const EXIT_UNREADABLE: i32 = 65;

/// Descriptors a parser needs: stdin, stdout, stderr and a few spare.
const MAX_OPEN_FILES: u64 = 16;

/// Run `job` on stdin under `limits`; the whole body of `weft extract`.
pub fn serve_child(job: Job, limits: Limits) -> ExitCode {
    if let Err(e) = limit_self(limits) {
        eprintln!("weft extract: could not set its limits: {e}");
        return ExitCode::from(70);
    }
    // Quiet: a parser's panic is caught and reported as the reason.
    std::panic::set_hook(Box::new(|_| {}));
    let mut bytes = Vec::new();
    if let Err(e) = std::io::stdin().lock().read_to_end(&mut bytes) {
        eprintln!("weft extract: reading stdin failed: {e}");
        return ExitCode::from(74);
    }
    let (out, code) = match job.run(&bytes) {
        Ok(text) => (text, ExitCode::SUCCESS),
        Err(reason) => (reason, ExitCode::from(EXIT_UNREADABLE as u8)),
    };
    let mut stdout = std::io::stdout().lock();
    if stdout
        .write_all(out.as_bytes())
        .and_then(|()| stdout.flush())
        .is_err()
    {
        return ExitCode::from(74);
    }
    code
}

/// Limits applied to this process before any untrusted byte is read.
fn limit_self(limits: Limits) -> nix::Result<()> {
    let cpu = limits.timeout.as_secs().max(1);
    // SIGXCPU at the soft limit, SIGKILL a second later if it is ignored.
    setrlimit(Resource::RLIMIT_CPU, cpu, cpu + 1)?;
    setrlimit(
        Resource::RLIMIT_AS,
        limits.memory_bytes,
        limits.memory_bytes,
    )?;
    setrlimit(Resource::RLIMIT_CORE, 0, 0)?;
    setrlimit(Resource::RLIMIT_NOFILE, MAX_OPEN_FILES, MAX_OPEN_FILES)?;
    Ok(())
}

//! The bubblewrap sandbox of a stdio MCP server.
//!
//! A server runs as Weft's own OS user, so without a sandbox it could read the
//! worker's `/proc/<pid>/environ`, `/run/secrets/*`, `~/.config/weft` and the
//! data dir. In the sandbox (`bwrap`) it has:
//!
//! * its own user, PID, IPC, UTS and cgroup namespaces (it sees only its own
//!   processes, in a fresh `/proc`), no capabilities, and no way to create
//!   further user namespaces;
//! * `/usr` read-only, `/bin`, `/sbin`, `/lib*` as on the host (symlinks into
//!   `/usr`, or read-only binds), and of `/etc` only [`ETC`] read-only;
//! * a minimal `/dev`, an empty `/tmp` and an empty home (`$HOME`) of its own;
//! * the `paths` its config grants, at the same paths, read-only unless `write`;
//! * the host's network only with `network = true` (else a network namespace
//!   with just a loopback interface);
//! * a new session (no access to a controlling terminal), and it dies with
//!   Weft: killing `bwrap` kills the namespace's init, and with it every
//!   process in the namespace.
//!
//! Nothing else of the machine exists inside: not `/run`, `/var`, `/home`,
//! `/root`, `/srv`, `/opt`, `/mnt` or `/sys`. The environment is the one
//! `connect` gives the server (bwrap passes its own on), with `TMPDIR=/tmp`.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use weft_config::McpServerConfig;

/// The program that builds the sandbox, looked up on `PATH`.
pub(crate) const BWRAP: &str = "bwrap";

/// Top-level directories that hold programs and libraries: symlinks on a
/// merged-`/usr` system, directories elsewhere; missing ones are skipped.
const SYSTEM_DIRS: &[&str] = &["/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"];

/// What of `/etc` a server sees: CA certificates, name resolution, users and
/// groups (no passwords: not `shadow`), time zone, the dynamic linker's cache
/// and the alternatives symlinks. Not `/etc/ssl/private`, not `/etc/weft` or
/// any other service's config.
pub(crate) const ETC: &[&str] = &[
    "/etc/ssl/certs",
    "/etc/ssl/openssl.cnf",
    "/etc/ca-certificates",
    "/etc/ca-certificates.conf",
    "/etc/pki/tls/certs",
    "/etc/pki/ca-trust/extracted",
    "/etc/crypto-policies",
    "/etc/resolv.conf",
    "/etc/hosts",
    "/etc/host.conf",
    "/etc/nsswitch.conf",
    "/etc/gai.conf",
    "/etc/services",
    "/etc/protocols",
    "/etc/passwd",
    "/etc/group",
    "/etc/localtime",
    "/etc/timezone",
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/alternatives",
    "/etc/mime.types",
    "/etc/os-release",
];

/// bwrap's arguments up to (and including) the `--` before the server's
/// command. `home` is the server's `HOME`, which becomes an empty directory.
pub(crate) fn bwrap_args(config: &McpServerConfig, home: Option<&Path>) -> Vec<OsString> {
    let mut args: Vec<OsString> = Vec::new();
    let mut push = |parts: &[&dyn AsRef<std::ffi::OsStr>]| {
        args.extend(parts.iter().map(|p| p.as_ref().to_os_string()));
    };
    push(&[
        &"--die-with-parent",
        &"--new-session",
        &"--unshare-user",
        &"--disable-userns",
        &"--unshare-pid",
        &"--unshare-ipc",
        &"--unshare-uts",
        &"--unshare-cgroup-try",
        &"--cap-drop",
        &"ALL",
    ]);
    if !config.network_allowed() {
        push(&[&"--unshare-net"]);
    }
    push(&[&"--ro-bind", &"/usr", &"/usr"]);
    for dir in SYSTEM_DIRS {
        match std::fs::symlink_metadata(dir) {
            Ok(meta) if meta.file_type().is_symlink() => {
                if let Ok(target) = std::fs::read_link(dir) {
                    push(&[&"--symlink", &target, dir]);
                }
            }
            Ok(meta) if meta.is_dir() => push(&[&"--ro-bind", dir, dir]),
            _ => {}
        }
    }
    for path in ETC {
        push(&[&"--ro-bind-try", path, path]);
    }
    push(&[&"--proc", &"/proc", &"--dev", &"/dev", &"--tmpfs", &"/tmp"]);

    // The home, then the grants, parents before children so that a grant
    // inside another (or inside the home) is mounted over it.
    let mut mounts: Vec<(PathBuf, Mount)> = Vec::new();
    if let Some(home) = home.filter(|h| h.is_absolute() && *h != Path::new("/tmp")) {
        let home: PathBuf = home.components().collect();
        if home.parent().is_some() {
            mounts.push((home, Mount::EmptyDir));
        }
    }
    for grant in &config.paths {
        let path: PathBuf = Path::new(&grant.path).components().collect();
        let mount = if grant.write {
            Mount::ReadWrite
        } else {
            Mount::ReadOnly
        };
        mounts.push((path, mount));
    }
    mounts.sort_by_key(|(path, _)| path.components().count());
    for (path, mount) in &mounts {
        let flag = match mount {
            Mount::EmptyDir => "--tmpfs",
            Mount::ReadOnly => "--ro-bind",
            Mount::ReadWrite => "--bind",
        };
        if *mount == Mount::EmptyDir {
            push(&[&flag, path]);
        } else {
            push(&[&flag, path, path]);
        }
    }
    let cwd = home.filter(|h| h.is_absolute()).unwrap_or(Path::new("/"));
    push(&[&"--chdir", &cwd, &"--"]);
    args
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mount {
    EmptyDir,
    ReadOnly,
    ReadWrite,
}

/// An error text for a server whose sandbox could not start (bwrap missing),
/// naming what to do about it.
pub(crate) fn spawn_error(program: &str, error: &std::io::Error) -> String {
    if error.kind() == std::io::ErrorKind::NotFound {
        format!(
            "the sandbox program {program} (bubblewrap) is not installed, so the server was not started: \
             install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap), or set sandbox = \"none\" \
             for this server to run it unsandboxed"
        )
    } else {
        format!(
            "could not start the sandbox program {program} (bubblewrap): {error}; the server was not started"
        )
    }
}

/// When a sandboxed server never answered, what bwrap itself said (its lines
/// start with `bwrap: `), as an error naming the cause; `None` when bwrap said
/// nothing, so the server itself failed.
pub(crate) fn explain_failure(stderr_tail: &str) -> Option<String> {
    let said = stderr_tail
        .split(" | ")
        .find_map(|line| line.trim().strip_prefix("bwrap: "))?;
    let lower = said.to_ascii_lowercase();
    let namespaces = [
        "namespace",
        "uid map",
        "gid map",
        "setgroups",
        "operation not permitted",
        "permission denied",
        "mount proc",
        "loopback",
        "make / slave",
        "pivot_root",
    ]
    .iter()
    .any(|k| lower.contains(k));
    Some(if namespaces {
        format!(
            "the sandbox could not be created: bubblewrap (bwrap) failed to set up its namespaces \
             ({said}), so the server was not started. Allow unprivileged user namespaces for Weft's \
             user (sysctl kernel.unprivileged_userns_clone=1 / user.max_user_namespaces; in a container \
             see deploy/README.md), or set sandbox = \"none\" for this server to run it unsandboxed"
        )
    } else if lower.starts_with("execvp") {
        format!(
            "the sandbox could not start the server's command ({said}): inside the sandbox it must be \
             under /usr or a granted path (grant an interpreter's directories in paths, read-only)"
        )
    } else {
        format!("the sandbox (bwrap) refused to start the server: {said}")
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use weft_config::McpPathGrant;

    fn strings(args: &[OsString]) -> Vec<String> {
        args.iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    }

    fn config(paths: &[(&str, bool)], network: Option<bool>) -> McpServerConfig {
        McpServerConfig {
            name: "s".into(),
            command: Some("python3".into()),
            paths: paths
                .iter()
                .map(|(p, w)| McpPathGrant {
                    path: p.to_string(),
                    write: *w,
                })
                .collect(),
            network,
            ..McpServerConfig::default()
        }
    }

    fn position(args: &[String], window: &[&str]) -> usize {
        args.windows(window.len())
            .position(|w| w == window)
            .unwrap_or_else(|| panic!("{window:?} not in {args:?}"))
    }

    #[test]
    fn grants_are_mounted_parents_first_over_the_empty_home() {
        let c = config(
            &[
                ("/home/w/.venv/lib", false),
                ("/srv/out/", true),
                ("/home/w/.venv", false),
            ],
            None,
        );
        let args = strings(&bwrap_args(&c, Some(Path::new("/home/w"))));
        let home = position(&args, &["--tmpfs", "/home/w"]);
        let venv = position(&args, &["--ro-bind", "/home/w/.venv", "/home/w/.venv"]);
        let lib = position(
            &args,
            &["--ro-bind", "/home/w/.venv/lib", "/home/w/.venv/lib"],
        );
        let out = position(&args, &["--bind", "/srv/out", "/srv/out"]);
        assert!(home < venv && venv < lib && out < lib, "{args:?}");
        assert!(position(&args, &["--tmpfs", "/tmp"]) < home);
        assert_eq!(args.last().unwrap(), "--");
        assert!(
            args.contains(&"--unshare-net".to_string()),
            "no network by default"
        );
        assert!(args.contains(&"--unshare-pid".to_string()));
        assert!(args.contains(&"--die-with-parent".to_string()));
        assert!(args.contains(&"--new-session".to_string()));
        assert!(!args.iter().any(|a| a == "/run" || a.starts_with("/run/")));
        assert!(
            !args
                .iter()
                .any(|a| a == "/etc" || a == "/etc/shadow" || a == "/etc/ssl")
        );
    }

    #[test]
    fn network_true_keeps_the_hosts_network() {
        let args = strings(&bwrap_args(&config(&[], Some(true)), None));
        assert!(!args.contains(&"--unshare-net".to_string()), "{args:?}");
        position(&args, &["--chdir", "/", "--"]);
    }

    #[test]
    fn bwrap_failures_are_explained() {
        let e = explain_failure(
            "bwrap: Creating new namespace failed: nesting depth or /proc/sys/user/max_*_namespaces exceeded (ENOSPC)",
        )
        .unwrap();
        assert!(
            e.contains("namespaces") && e.contains("sandbox = \"none\""),
            "{e}"
        );
        let e = explain_failure("bwrap: execvp node: No such file or directory").unwrap();
        assert!(e.contains("granted path"), "{e}");
        assert_eq!(explain_failure("Traceback … | boom"), None);
        let e = spawn_error("bwrap", &std::io::Error::from(std::io::ErrorKind::NotFound));
        assert!(
            e.contains("install bubblewrap") && e.contains("sandbox = \"none\""),
            "{e}"
        );
    }
}

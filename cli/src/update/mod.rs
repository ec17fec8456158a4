//! `weft update`: replace this binary with a newer signed release, or put the
//! previous one back.
//!
//! Order of trust: the manifest's minisign signature is verified with the key
//! this binary trusts (built in, or configured), then the manifest names the
//! version and, for this platform, a file with its size and SHA-256; the file is
//! downloaded beside the binary and must match both before it is run once and
//! renamed into place. Any failure before that rename leaves the installed
//! binary as it was. Going to an older version needs `--to`: a release server
//! (or someone replaying an old signed manifest) cannot downgrade anyone.

mod install;
mod manifest;
mod source;

use clap::Args;
use weft_client::exit;

use self::install::Staged;
use self::manifest::this_platform;
use self::source::{ReleaseSource, Wanted};

#[derive(Debug, Args)]
pub struct UpdateArgs {
    /// Only report whether a newer release exists (its signature checked); change nothing.
    #[arg(long, conflicts_with = "rollback")]
    check: bool,
    /// Install this version instead of the latest: the only way to go to an older one.
    #[arg(long, value_name = "VERSION", conflicts_with = "rollback")]
    to: Option<semver::Version>,
    /// Put back the binary the last update replaced (kept beside it as `weft.old`).
    #[arg(long)]
    rollback: bool,
    /// The release folder: `URL/weft-manifest.json` is the latest release and
    /// `URL/VERSION/weft-manifest.json` each one (default: `[update] url` in
    /// ~/.config/weft/config.toml, else the one this weft was built with).
    #[arg(long, env = "WEFT_UPDATE_URL", value_name = "URL")]
    url: Option<String>,
    /// The minisign public key (`RW…`) release manifests must be signed with
    /// (default: `[update] public_key` in the config file, else the built-in one).
    #[arg(long, env = "WEFT_UPDATE_PUBLIC_KEY", value_name = "KEY")]
    public_key: Option<String>,
}

/// Why an update did not happen; each has its exit code.
#[derive(Debug, thiserror::Error)]
pub enum UpdateError {
    /// Missing or wrong settings (exit 2).
    #[error("{0}")]
    Usage(String),
    /// The release server could not be reached or answered an error (exit 3).
    #[error("{0}")]
    Connection(String),
    /// What was served is not a genuine, usable release (exit 1).
    #[error("{0}")]
    Refused(String),
    /// This machine's side: files, permissions (exit 1).
    #[error("{0}")]
    Local(String),
}

impl UpdateError {
    fn exit_code(&self) -> u8 {
        match self {
            UpdateError::Usage(_) => exit::USAGE,
            UpdateError::Connection(_) => exit::CONNECTION,
            UpdateError::Refused(_) | UpdateError::Local(_) => exit::RUN_FAILED,
        }
    }
}

/// `weft update --help`'s epilogue: examples, exit codes, and what this build
/// trusts and where it looks unless told otherwise.
pub fn after_help() -> String {
    let built_in = |v: Option<&str>| {
        v.map(str::trim)
            .filter(|v| !v.is_empty())
            .map(str::to_owned)
    };
    let url = built_in(source::BUILT_IN_URL).unwrap_or_else(|| "none (set [update] url)".into());
    let key =
        built_in(source::BUILT_IN_KEY).unwrap_or_else(|| "none (set [update] public_key)".into());
    format!(
        "Examples:
  weft update --check          is there a newer release? (changes nothing)
  weft update                  install it: signature and checksum verified, the old binary kept as weft.old
  weft update --to 0.1.0       install exactly this version (also to go back to an older one)
  weft update --rollback       put the previous binary back

Exit codes: 0 done (or nothing to do), 1 refused or failed (nothing was replaced),
2 settings missing or wrong, 3 the release server could not be reached.

Built in: release folder {url}
          public key     {key}"
    )
}

/// Runs `weft update`; the answer is the exit code.
pub fn run(args: UpdateArgs) -> u8 {
    match update(args) {
        Ok(()) => exit::OK,
        Err(e) => {
            eprintln!("weft update: {e}");
            e.exit_code()
        }
    }
}

fn update(args: UpdateArgs) -> Result<(), UpdateError> {
    let binary = install::running_binary()?;
    if args.rollback {
        let restored = install::roll_back(&binary)?;
        println!("rolled back: {} is {restored} again", binary.display());
        return Ok(());
    }
    let wanted = args.to.clone().map_or(Wanted::Latest, Wanted::Version);
    let file = match weft_client::config::config_path() {
        Some(path) => {
            weft_client::config::load(&path).map_err(|e| UpdateError::Usage(e.to_string()))?
        }
        None => Default::default(),
    };
    let source = ReleaseSource::resolve(
        args.url.as_deref(),
        args.public_key.as_deref(),
        file.update.as_ref(),
    )?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| UpdateError::Local(format!("tokio runtime: {e}")))?;
    let offer = runtime.block_on(offer(&source, &wanted))?;
    match offer {
        Offer::Nothing(ref reason) => println!("{reason}"),
        Offer::Available(ref release) if args.check => println!(
            "weft {} is available (this is {}; signature verified): run `weft update{}`",
            release.version,
            release.current,
            match &wanted {
                Wanted::Latest => String::new(),
                Wanted::Version(v) => format!(" --to {v}"),
            }
        ),
        Offer::Available(release) => {
            runtime.block_on(install_release(&source, release, &binary))?
        }
    }
    Ok(())
}

/// What the release folder offers against this binary.
enum Offer {
    /// Up to date, or the latest is older than this binary: why, for the user.
    Nothing(String),
    Available(Release),
}

/// A verified release with this platform's binary.
struct Release {
    current: semver::Version,
    version: semver::Version,
    artifact: manifest::Artifact,
    manifest_url: reqwest::Url,
}

async fn offer(source: &ReleaseSource, wanted: &Wanted) -> Result<Offer, UpdateError> {
    let current =
        semver::Version::parse(env!("CARGO_PKG_VERSION")).expect("the package version is semver");
    let (manifest, manifest_url) = source.manifest(wanted).await?;
    let offered = manifest.version.clone();
    if offered == current {
        return Ok(Offer::Nothing(format!(
            "weft {current} is up to date (the release at {manifest_url} is {offered}, signature verified)"
        )));
    }
    if matches!(wanted, Wanted::Latest) && offered < current {
        return Ok(Offer::Nothing(format!(
            "weft {current} is newer than the latest release ({offered}); not downgrading (to go back to it: weft update --to {offered})"
        )));
    }
    let artifact = manifest.artifact(&this_platform())?.clone();
    Ok(Offer::Available(Release {
        current,
        version: offered,
        artifact,
        manifest_url,
    }))
}

async fn install_release(
    source: &ReleaseSource,
    release: Release,
    binary: &std::path::Path,
) -> Result<(), UpdateError> {
    let Release {
        current,
        version,
        artifact,
        manifest_url,
    } = release;
    eprintln!(
        "updating {} from {current} to {version} ({}, signature verified)",
        binary.display(),
        this_platform()
    );
    let mut staged = Staged::beside(binary)?;
    source
        .download(&manifest_url, &artifact, staged.writer())
        .await?;
    eprintln!("checksum verified (sha256 {})", artifact.sha256);
    staged.seal()?;
    let backup = staged.install(binary)?;
    println!(
        "weft {version} installed at {}; the previous {current} is kept as {} (undo: weft update --rollback)",
        binary.display(),
        backup.display()
    );
    Ok(())
}

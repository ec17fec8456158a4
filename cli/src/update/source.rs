//! Where releases come from and how they are fetched.
//!
//! The release folder and the trusted key each come from, first to last: the
//! flag (`--url`, `--public-key`) or its environment variable (`WEFT_UPDATE_URL`,
//! `WEFT_UPDATE_PUBLIC_KEY`), `[update]` in `~/.config/weft/config.toml`, and what
//! the binary was built with (`WEFT_RELEASE_URL`, `WEFT_RELEASE_PUBKEY` at build
//! time; `scripts/release` sets both). A binary built without them updates only
//! once they are configured: there is no key to fall back on.

use std::io::Write;

use reqwest::Url;
use sha2::{Digest, Sha256};
use weft_client::config::UpdateSection;

use super::UpdateError;
use super::manifest::{Artifact, MANIFEST_FILE, Manifest, SIGNATURE_FILE, TrustedKey};

pub(super) const BUILT_IN_URL: Option<&str> = option_env!("WEFT_RELEASE_URL");
pub(super) const BUILT_IN_KEY: Option<&str> = option_env!("WEFT_RELEASE_PUBKEY");
const MAX_MANIFEST_BYTES: usize = 256 * 1024;

/// Which release to look at.
#[derive(Debug, Clone)]
pub enum Wanted {
    Latest,
    Version(semver::Version),
}

/// A release folder and the key its manifests must be signed with.
pub struct ReleaseSource {
    folder: Url,
    key: TrustedKey,
    http: reqwest::Client,
}

impl ReleaseSource {
    /// `url`/`key` are the flags (or their environment variables), merged by clap.
    pub fn resolve(
        url: Option<&str>,
        key: Option<&str>,
        file: Option<&UpdateSection>,
    ) -> Result<ReleaseSource, UpdateError> {
        let pick = |flag: Option<&str>, from_file: Option<&str>, built_in: Option<&'static str>| {
            [flag, from_file, built_in]
                .into_iter()
                .flatten()
                .map(str::trim)
                .find(|v| !v.is_empty())
                .map(str::to_owned)
        };
        let url = pick(url, file.and_then(|f| f.url.as_deref()), BUILT_IN_URL).ok_or_else(|| {
            UpdateError::Usage(
                "no release URL: this weft was built without one; pass --url URL, set WEFT_UPDATE_URL, or `url` under [update] in ~/.config/weft/config.toml".into(),
            )
        })?;
        let key = pick(key, file.and_then(|f| f.public_key.as_deref()), BUILT_IN_KEY).ok_or_else(|| {
            UpdateError::Usage(
                "no release public key: this weft was built without one; pass --public-key KEY, set WEFT_UPDATE_PUBLIC_KEY, or `public_key` under [update] in ~/.config/weft/config.toml".into(),
            )
        })?;
        Ok(ReleaseSource {
            folder: release_folder(&url)?,
            key: TrustedKey::parse(&key)?,
            http: reqwest::Client::builder()
                .connect_timeout(std::time::Duration::from_secs(15))
                .read_timeout(std::time::Duration::from_secs(60))
                .user_agent(concat!("weft/", env!("CARGO_PKG_VERSION")))
                .build()
                .map_err(|e| UpdateError::Local(format!("HTTP client: {e}")))?,
        })
    }

    /// The manifest of `wanted`, its signature verified (and, for a version asked
    /// for by name, that it is that version: an older signed manifest served in
    /// its place is refused).
    pub async fn manifest(&self, wanted: &Wanted) -> Result<(Manifest, Url), UpdateError> {
        let folder = match wanted {
            Wanted::Latest => self.folder.clone(),
            Wanted::Version(v) => self
                .folder
                .join(&format!("{v}/"))
                .expect("a version is a valid path segment"),
        };
        let url = folder.join(MANIFEST_FILE).expect("a file name joins");
        let bytes = self.small(&url, wanted).await?;
        let signature = self
            .small(
                &folder.join(SIGNATURE_FILE).expect("a file name joins"),
                wanted,
            )
            .await?;
        let manifest = Manifest::verified(&bytes, &signature, &self.key)?;
        if let Wanted::Version(v) = wanted
            && manifest.version != *v
        {
            return Err(UpdateError::Refused(format!(
                "{url} is signed but describes version {}, not {v}",
                manifest.version
            )));
        }
        Ok((manifest, url))
    }

    /// Streams `artifact` (relative to `manifest_url`) into `out`, refusing it
    /// unless its size and SHA-256 are the manifest's.
    pub async fn download(
        &self,
        manifest_url: &Url,
        artifact: &Artifact,
        out: &mut impl Write,
    ) -> Result<(), UpdateError> {
        let url = manifest_url
            .join(&artifact.file)
            .expect("a bare file name joins");
        let mut response = self.get(&url, None).await?;
        let mut progress = Progress::new(&artifact.file, artifact.size);
        let mut hash = Sha256::new();
        let mut received: u64 = 0;
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| UpdateError::Connection(format!("downloading {url}: {e}")))?
        {
            received += chunk.len() as u64;
            if received > artifact.size {
                return Err(UpdateError::Refused(format!(
                    "{url} is larger than the {} bytes the manifest says: refused",
                    artifact.size
                )));
            }
            hash.update(&chunk);
            out.write_all(&chunk)
                .map_err(|e| UpdateError::Local(format!("writing the download: {e}")))?;
            progress.advance(received);
        }
        progress.done();
        if received != artifact.size {
            return Err(UpdateError::Refused(format!(
                "{url} ended after {received} of the {} bytes the manifest says: refused",
                artifact.size
            )));
        }
        let got = hex::encode(hash.finalize());
        if got != artifact.sha256 {
            return Err(UpdateError::Refused(format!(
                "{} does not match the signed manifest: its SHA-256 is {got}, the manifest says {}: refused (corrupted or tampered with)",
                artifact.file, artifact.sha256
            )));
        }
        Ok(())
    }

    async fn small(&self, url: &Url, wanted: &Wanted) -> Result<Vec<u8>, UpdateError> {
        let mut response = self.get(url, Some(wanted)).await?;
        let mut bytes = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| UpdateError::Connection(format!("reading {url}: {e}")))?
        {
            bytes.extend_from_slice(&chunk);
            if bytes.len() > MAX_MANIFEST_BYTES {
                return Err(UpdateError::Refused(format!(
                    "{url} is over {MAX_MANIFEST_BYTES} bytes: not a manifest"
                )));
            }
        }
        Ok(bytes)
    }

    async fn get(
        &self,
        url: &Url,
        wanted: Option<&Wanted>,
    ) -> Result<reqwest::Response, UpdateError> {
        let response = self
            .http
            .get(url.clone())
            .send()
            .await
            .map_err(|e| UpdateError::Connection(format!("cannot reach {url}: {e}")))?;
        match (response.status(), wanted) {
            (s, _) if s.is_success() => Ok(response),
            (reqwest::StatusCode::NOT_FOUND, Some(Wanted::Version(v))) => Err(
                UpdateError::Refused(format!("there is no release {v} at {}", self.folder)),
            ),
            (s, _) => Err(UpdateError::Connection(format!("{url} answered {s}"))),
        }
    }
}

/// `https://host/weft` → `https://host/weft/`. Plain HTTP only to this machine:
/// the signature keeps a release genuine either way, HTTPS keeps what is being
/// installed private and a stale "latest" from being replayed by the network.
fn release_folder(url: &str) -> Result<Url, UpdateError> {
    let with_slash = if url.ends_with('/') {
        url.to_owned()
    } else {
        format!("{url}/")
    };
    let folder = Url::parse(&with_slash)
        .map_err(|e| UpdateError::Usage(format!("the release URL {url} is not a URL: {e}")))?;
    let loopback = match folder.host() {
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        Some(url::Host::Domain(d)) => d == "localhost",
        None => false,
    };
    match folder.scheme() {
        "https" => Ok(folder),
        "http" if loopback => Ok(folder),
        _ => Err(UpdateError::Usage(format!(
            "the release URL must be https:// (plain http:// only for this machine): {url}"
        ))),
    }
}

/// Download progress on stderr: a percentage on a terminal, two lines in a log.
struct Progress {
    total: u64,
    terminal: bool,
    shown: u64,
}

impl Progress {
    fn new(file: &str, total: u64) -> Progress {
        use std::io::IsTerminal;
        eprintln!("downloading {file} ({:.1} MB)", total as f64 / 1e6);
        Progress {
            total,
            terminal: std::io::stderr().is_terminal(),
            shown: 0,
        }
    }

    fn advance(&mut self, received: u64) {
        let percent = received * 100 / self.total.max(1);
        if self.terminal && percent > self.shown {
            self.shown = percent;
            eprint!("\r  {percent:3}%");
        }
    }

    fn done(&self) {
        if self.terminal {
            eprintln!();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn release_folders_are_https_or_this_machine() {
        assert_eq!(
            release_folder("https://r.example/weft").unwrap().as_str(),
            "https://r.example/weft/"
        );
        assert!(release_folder("http://127.0.0.1:8080/").is_ok());
        assert!(release_folder("http://localhost/x").is_ok());
        assert!(matches!(
            release_folder("http://r.example/weft"),
            Err(UpdateError::Usage(_))
        ));
        assert!(matches!(
            release_folder("ftp://r.example/"),
            Err(UpdateError::Usage(_))
        ));
    }
}

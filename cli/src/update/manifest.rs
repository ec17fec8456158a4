//! The release manifest and its signature: the one file `weft update` trusts.
//!
//! A release folder holds `weft-manifest.json`, its minisign signature
//! `weft-manifest.json.minisig`, and one static binary per platform:
//!
//! ```json
//! {"format": 1, "version": "0.2.0", "artifacts": {
//!   "x86_64-linux":  {"file": "weft-0.2.0-x86_64-linux",  "size": 43119992, "sha256": "…"},
//!   "aarch64-linux": {"file": "weft-0.2.0-aarch64-linux", "size": 41022104, "sha256": "…"}}}
//! ```
//!
//! Only the manifest is signed; each binary is bound to it by its size and
//! SHA-256. So the signature is checked before a byte of the manifest is parsed,
//! and nothing a manifest names is fetched before its signature verified.
//! `scripts/release` writes this file; keys the reader does not know are ignored
//! (a later release may add some), an unknown `format` is refused.

use std::collections::BTreeMap;

use minisign_verify::{PublicKey, Signature};
use serde::Deserialize;

use super::UpdateError;

pub const MANIFEST_FILE: &str = "weft-manifest.json";
pub const SIGNATURE_FILE: &str = "weft-manifest.json.minisig";
const FORMAT: u32 = 1;
/// No weft release comes near this; a bigger `size` is a broken manifest.
const MAX_ARTIFACT_BYTES: u64 = 2 << 30;

/// A manifest whose signature verified with the trusted key.
#[derive(Debug, Deserialize)]
pub struct Manifest {
    format: u32,
    pub version: semver::Version,
    artifacts: BTreeMap<String, Artifact>,
}

/// One platform's binary in a release.
#[derive(Debug, Clone, Deserialize)]
pub struct Artifact {
    /// A file name in the manifest's folder (no path).
    pub file: String,
    pub size: u64,
    /// Lowercase hex.
    pub sha256: String,
}

/// The key release manifests must be signed with.
pub struct TrustedKey(PublicKey);

impl TrustedKey {
    /// The `RW…` base64 line of a `minisign.pub`, or the whole file.
    pub fn parse(text: &str) -> Result<TrustedKey, UpdateError> {
        let text = text.trim();
        let key = if text.contains('\n') {
            PublicKey::decode(text)
        } else {
            PublicKey::from_base64(text)
        };
        key.map(TrustedKey).map_err(|e| {
            UpdateError::Usage(format!(
                "the release public key is not a minisign public key ({e}): expected the `RW…` line of a minisign.pub"
            ))
        })
    }
}

impl Manifest {
    /// Checks `signature` over `bytes` with `key`, then reads the manifest.
    pub fn verified(
        bytes: &[u8],
        signature: &[u8],
        key: &TrustedKey,
    ) -> Result<Manifest, UpdateError> {
        let signature = std::str::from_utf8(signature)
            .ok()
            .and_then(|text| Signature::decode(text).ok())
            .ok_or_else(|| {
                UpdateError::Refused(format!("{SIGNATURE_FILE} is not a minisign signature"))
            })?;
        key.0.verify(bytes, &signature, false).map_err(|e| {
            let why = match e {
                minisign_verify::Error::UnexpectedKeyId => {
                    "it is signed with another key than the trusted one"
                }
                _ => "its signature does not match its contents with the trusted key",
            };
            UpdateError::Refused(format!("the release manifest is not genuine: {why}"))
        })?;
        let manifest: Manifest = serde_json::from_slice(bytes).map_err(|e| {
            UpdateError::Refused(format!("the signed manifest cannot be read: {e}"))
        })?;
        if manifest.format != FORMAT {
            return Err(UpdateError::Refused(format!(
                "the release manifest has format {} and this weft reads format {FORMAT}: download the new release by hand",
                manifest.format
            )));
        }
        Ok(manifest)
    }

    /// The binary for `platform` (`x86_64-linux`), checked for a usable shape.
    pub fn artifact(&self, platform: &str) -> Result<&Artifact, UpdateError> {
        let artifact = self.artifacts.get(platform).ok_or_else(|| {
            let offered: Vec<&str> = self.artifacts.keys().map(String::as_str).collect();
            UpdateError::Refused(format!(
                "release {} has no binary for {platform} (it has: {})",
                self.version,
                offered.join(", ")
            ))
        })?;
        let bare_name = !artifact.file.is_empty()
            && !artifact.file.starts_with('.')
            && artifact
                .file
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"._-+".contains(&b));
        let hex_digest = artifact.sha256.len() == 64
            && artifact
                .sha256
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
        if !bare_name || !hex_digest || artifact.size == 0 || artifact.size > MAX_ARTIFACT_BYTES {
            return Err(UpdateError::Refused(format!(
                "the manifest's entry for {platform} is malformed (file {:?}, size {}, sha256 {:?})",
                artifact.file, artifact.size, artifact.sha256
            )));
        }
        Ok(artifact)
    }
}

/// This binary's platform as manifests name it: `x86_64-linux`, `aarch64-linux`.
pub fn this_platform() -> String {
    format!("{}-{}", std::env::consts::ARCH, std::env::consts::OS)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest(artifacts: serde_json::Value) -> Manifest {
        serde_json::from_value(
            serde_json::json!({"format": 1, "version": "1.2.3", "artifacts": artifacts}),
        )
        .unwrap()
    }

    #[test]
    fn artifacts_with_paths_or_bad_digests_are_refused() {
        let digest = "ab".repeat(32);
        let ok = manifest(
            serde_json::json!({"x86_64-linux": {"file": "weft-1.2.3-x86_64-linux", "size": 10, "sha256": digest}}),
        );
        assert_eq!(ok.artifact("x86_64-linux").unwrap().size, 10);
        assert!(
            matches!(ok.artifact("aarch64-linux"), Err(UpdateError::Refused(m)) if m.contains("x86_64-linux"))
        );
        for (file, sha) in [
            ("../weft", digest.as_str()),
            ("a/weft", digest.as_str()),
            (".weft", digest.as_str()),
            ("weft", "AB"),
        ] {
            let m = manifest(
                serde_json::json!({"x86_64-linux": {"file": file, "size": 10, "sha256": sha}}),
            );
            assert!(m.artifact("x86_64-linux").is_err(), "{file} {sha}");
        }
    }
}

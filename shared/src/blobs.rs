//! Attachment bytes, content-addressed: `blobs/<sha256>` holds a file's bytes and
//! `text/<sha256>` a document's extracted text, so identical uploads are stored
//! once however many users or messages carry them. Which rows own a blob is the
//! database's business (`attachments`, see `store::attachments`); a blob is deleted
//! when the last row naming its hash is.
//!
//! One interface over the `object_store` crate: a local directory (embedded mode,
//! or a volume every process of a cluster mounts) or an S3-compatible bucket (a
//! cluster whose gateways and workers share no disk). Writes are whole-object PUTs
//! — an image is at most `attachments.image_bytes` (4 MiB), a document 10 MiB —
//! so there is no multipart upload to clean up after a crash; a PUT of a hash that
//! already exists rewrites the same bytes, which is harmless.

use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;
use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt};
use object_store::path::Path as Key;
use object_store::prefix::PrefixStore;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};

use weft_config::{Config, ConfigError};

#[derive(Debug, thiserror::Error)]
pub enum BlobError {
    #[error("attachment {0} is missing from the file store")]
    Missing(String),
    #[error("file store: {0}")]
    Store(String),
}

impl From<object_store::Error> for BlobError {
    fn from(e: object_store::Error) -> Self {
        BlobError::Store(e.to_string())
    }
}

/// The attachment store every gateway and worker of one deployment shares.
#[derive(Clone)]
pub struct Blobs {
    store: Arc<dyn ObjectStore>,
    /// Where, for logs and `/health` (no credentials: those come from `AWS_*`).
    location: String,
    /// A directory on this machine: its folders are made `0700` and its files
    /// `0600`, like the rest of the data dir (`private_fs`).
    local: Option<std::path::PathBuf>,
}

impl std::fmt::Debug for Blobs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Blobs")
            .field("location", &self.location)
            .finish()
    }
}

impl Blobs {
    /// The store `attachments.store` names (default `<data_dir>/files`).
    pub fn open(cfg: &Config) -> Result<Blobs, ConfigError> {
        let setting = cfg.attachments.store.clone().unwrap_or_default();
        let bad = |e: String| ConfigError::Invalid(format!("attachments.store {setting:?}: {e}"));
        if let Some(rest) = setting.strip_prefix("s3://") {
            let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
            if bucket.is_empty() {
                return Err(bad("name a bucket: s3://bucket/prefix".into()));
            }
            let s3 = object_store::aws::AmazonS3Builder::from_env()
                .with_bucket_name(bucket)
                .build()
                .map_err(|e| bad(e.to_string()))?;
            return Ok(Blobs::with_prefix(s3, prefix, setting.clone()));
        }
        let dir = match setting.strip_prefix("file://") {
            Some(p) => std::path::PathBuf::from(p),
            None if setting.is_empty() => cfg.data_dir().join("files"),
            None if setting.contains("://") => {
                return Err(bad(
                    "use a directory, file:///path or s3://bucket/prefix".into()
                ));
            }
            None => std::path::PathBuf::from(&setting),
        };
        Blobs::local(&dir).map_err(|e| bad(e.to_string()))
    }

    /// A directory on this machine (created when missing).
    pub fn local(dir: &Path) -> Result<Blobs, BlobError> {
        crate::private_fs::create_private_dir(dir)
            .map_err(|e| BlobError::Store(format!("{}: {e}", dir.display())))?;
        let fs = object_store::local::LocalFileSystem::new_with_prefix(dir)?
            .with_automatic_cleanup(true);
        Ok(Blobs {
            store: Arc::new(fs),
            location: dir.display().to_string(),
            local: Some(dir.to_path_buf()),
        })
    }

    /// Write `payload` at `key`; on a local directory, in private folders and
    /// narrowed to its owner (it is written with the umask's mode, inside a
    /// `0700` folder nobody else can enter meanwhile).
    async fn write(&self, key: &Key, payload: PutPayload) -> Result<(), BlobError> {
        let path = self.local.as_ref().map(|root| root.join(key.as_ref()));
        if let Some(folder) = path.as_ref().and_then(|p| p.parent()) {
            crate::private_fs::create_private_dir(folder)
                .map_err(|e| BlobError::Store(format!("{}: {e}", folder.display())))?;
        }
        self.store.put(key, payload).await?;
        if let Some(path) = &path {
            crate::private_fs::restrict_to_owner(path)
                .map_err(|e| BlobError::Store(format!("{}: {e}", path.display())))?;
        }
        Ok(())
    }

    fn with_prefix<S: ObjectStore>(store: S, prefix: &str, location: String) -> Blobs {
        let prefix = prefix.trim_matches('/');
        let store: Arc<dyn ObjectStore> = if prefix.is_empty() {
            Arc::new(store)
        } else {
            Arc::new(PrefixStore::new(store, prefix))
        };
        Blobs {
            store,
            location,
            local: None,
        }
    }

    pub fn location(&self) -> &str {
        &self.location
    }

    /// Store a file's bytes under its hash.
    pub async fn put(&self, sha: &str, bytes: Bytes) -> Result<(), BlobError> {
        self.write(&blob_key(sha), PutPayload::from_bytes(bytes))
            .await
    }

    /// Store a document's extracted text under the document's hash.
    pub async fn put_text(&self, sha: &str, text: String) -> Result<(), BlobError> {
        self.write(&text_key(sha), PutPayload::from(text.into_bytes()))
            .await
    }

    /// A file's bytes, whole (an image for the model).
    pub async fn get(&self, sha: &str) -> Result<Bytes, BlobError> {
        self.fetch(&blob_key(sha), sha).await
    }

    /// A document's extracted text.
    pub async fn get_text(&self, sha: &str) -> Result<String, BlobError> {
        let bytes = self.fetch(&text_key(sha), sha).await?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }

    /// A file's bytes as a stream (downloads never hold a whole file in memory).
    pub async fn stream(
        &self,
        sha: &str,
    ) -> Result<BoxStream<'static, Result<Bytes, BlobError>>, BlobError> {
        match self.store.get(&blob_key(sha)).await {
            Ok(got) => Ok(got.into_stream().map_err(BlobError::from).boxed()),
            Err(object_store::Error::NotFound { .. }) => Err(BlobError::Missing(sha.into())),
            Err(e) => Err(e.into()),
        }
    }

    /// Forget a hash: its bytes and its text (either may be absent).
    pub async fn delete(&self, sha: &str) -> Result<(), BlobError> {
        for key in [blob_key(sha), text_key(sha)] {
            match self.store.delete(&key).await {
                Ok(()) | Err(object_store::Error::NotFound { .. }) => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }

    /// Whether the bytes of `sha` are stored (tests and checks).
    pub async fn exists(&self, sha: &str) -> Result<bool, BlobError> {
        match self.store.head(&blob_key(sha)).await {
            Ok(_) => Ok(true),
            Err(object_store::Error::NotFound { .. }) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    async fn fetch(&self, key: &Key, sha: &str) -> Result<Bytes, BlobError> {
        match self.store.get(key).await {
            Ok(got) => Ok(got.bytes().await?),
            Err(object_store::Error::NotFound { .. }) => Err(BlobError::Missing(sha.into())),
            Err(e) => Err(e.into()),
        }
    }
}

/// Hashes are lowercase hex; anything else never reaches a key.
fn checked(sha: &str) -> &str {
    assert!(
        sha.len() == 64 && sha.bytes().all(|b| b.is_ascii_hexdigit()),
        "not a sha256: {sha:?}"
    );
    sha
}

fn blob_key(sha: &str) -> Key {
    Key::from(format!("blobs/{}/{}", &checked(sha)[..2], sha))
}

fn text_key(sha: &str) -> Key {
    Key::from(format!("text/{}/{}", &checked(sha)[..2], sha))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn local_round_trip_and_delete() {
        let dir = std::env::temp_dir().join(format!("weft-blobs-{}", uuid::Uuid::new_v4()));
        let b = Blobs::local(&dir).unwrap();
        let sha = "ab".repeat(32);
        assert!(!b.exists(&sha).await.unwrap());
        assert!(matches!(b.get(&sha).await, Err(BlobError::Missing(_))));
        b.put(&sha, Bytes::from_static(b"hello")).await.unwrap();
        b.put_text(&sha, "text".into()).await.unwrap();
        assert_eq!(&b.get(&sha).await.unwrap()[..], b"hello");
        assert_eq!(b.get_text(&sha).await.unwrap(), "text");
        let streamed: Vec<Bytes> = b.stream(&sha).await.unwrap().try_collect().await.unwrap();
        assert_eq!(streamed.concat(), b"hello");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode(&dir), 0o700);
            assert_eq!(mode(&dir.join("blobs/ab")), 0o700);
            assert_eq!(mode(&dir.join("blobs/ab").join(&sha)), 0o600);
            assert_eq!(mode(&dir.join("text/ab").join(&sha)), 0o600);
        }
        b.delete(&sha).await.unwrap();
        assert!(!b.exists(&sha).await.unwrap());
        b.delete(&sha).await.unwrap();
        std::fs::remove_dir_all(dir).unwrap();
    }
}

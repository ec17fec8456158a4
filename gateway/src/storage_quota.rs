//! The per-user storage quota at the front door (`limits.storage_bytes_per_user`,
//! `weft_store` has the exact check in the send transaction): a message
//! whose files cannot fit is refused before anything is stored, with 413
//! `payload_too_large` naming the quota, the usage and what the files need.

use weft_shared::ids::UserId;

use crate::AppState;
use crate::error::{ApiError, ApiResult};
use crate::uploads::Upload;

/// Refuses `uploads` if they cannot fit in `user`'s quota. Only a message that
/// might not fit even before deduplication has its files hashed.
pub async fn precheck(state: &AppState, user: &UserId, uploads: &[Upload]) -> ApiResult<()> {
    match over_quota(state, user, uploads).await? {
        None => Ok(()),
        Some((usage, limit)) => Err(weft_runs::Refusal::OverStorage { usage, limit }.into()),
    }
}

/// `Some((usage, limit))` when `uploads` do not fit in `user`'s quota.
pub async fn over_quota(
    state: &AppState,
    user: &UserId,
    uploads: &[Upload],
) -> ApiResult<Option<(weft_store::StorageUse, u64)>> {
    let limit = state.config().limits.storage_bytes_per_user;
    if limit == 0 || uploads.is_empty() {
        return Ok(None);
    }
    let total: u64 = uploads.iter().map(|u| u.bytes.len() as u64).sum();
    let used = state.store.storage_use(user, &[]).await?;
    if used.used_bytes + total <= limit {
        return Ok(None);
    }
    let bytes: Vec<bytes::Bytes> = uploads.iter().map(|u| u.bytes.clone()).collect();
    let hashed = tokio::task::spawn_blocking(move || {
        bytes
            .iter()
            .map(|b| (weft_files::sha256_hex(b), b.len() as u64))
            .collect::<Vec<_>>()
    })
    .await
    .map_err(|e| ApiError::Internal(anyhow::anyhow!("hashing files: {e}")))?;
    let files: Vec<(&str, u64)> = hashed.iter().map(|(s, n)| (s.as_str(), *n)).collect();
    let usage = state.store.storage_use(user, &files).await?;
    Ok((!usage.fits(limit)).then_some((usage, limit)))
}

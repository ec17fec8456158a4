//! Revisions of what workers keep between runs (migration 0018).
//!
//! A run's system prompt is made of its agent, its user's instructions and the
//! skills. They change when someone edits them (rarely) but were read by every
//! run: three queries and a walk of the skills folder, about a sixth of the
//! reads of a short run. Now every transaction that writes one of them bumps
//! the `prompt` revision, the claim of a run returns it
//! ([`ClaimedRun::prompt_rev`](super::ClaimedRun)), and a worker reads them
//! again only when it moved (`worker/src/context/prompt.rs`).

use super::Result;

/// Bump the `prompt` revision inside the writer's transaction (or right after
/// its one statement, under the write gate): a worker that claims a run after
/// the commit sees the new revision and reads again.
pub(super) async fn bump_prompt<'e, E>(db: E) -> Result<()>
where
    E: sqlx::Executor<'e, Database = sqlx::Any>,
{
    sqlx::query("update store_revisions set rev = rev + 1 where name = 'prompt'")
        .execute(db)
        .await?;
    Ok(())
}

/// The claim's column for it (a subquery in its `returning`).
pub(super) const PROMPT_REV: &str =
    "coalesce((select rev from store_revisions where name = 'prompt'), 0) as prompt_rev";

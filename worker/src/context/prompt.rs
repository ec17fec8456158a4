//! What a run's system prompt is made of — its agent, its user's instructions
//! and the skills — kept between runs.
//!
//! Every run used to read them again: the agent (and the default one when the
//! session names none that exists), the user's instructions, every uploaded
//! skill, and every file of the skills folder. Three queries and a folder walk
//! for things that change when a person edits them. They are kept here, valid
//! for the store's `prompt` revision, which every transaction writing an agent,
//! a skill or instructions bumps and the claim returns (`store::revisions`).
//! The skills folder is not in the database: it is read again when its
//! [`dir_fingerprint`](weft_shared::skills::dir_fingerprint) changes.
//!
//! The race rule: a copy read by a run claimed at revision R is at least as new
//! as R (it was read after the claim). So a copy at R serves runs claimed at R
//! or earlier; a run claimed at a later revision starts a new copy; and a run
//! claimed earlier than the copy never writes into it (what it read may be
//! older than the copy's revision).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use weft_config::AgentConfig;
use weft_shared::skills::{DirFingerprint, Skill, dir_fingerprint, load_dir};
use weft_store::{ClaimedRun, Store, merge_skills};

/// Users whose instructions are kept; past it the map starts over (a worker
/// serving more people than this reads instructions again, nothing worse).
const MAX_USERS: usize = 10_000;

#[derive(Default)]
pub struct PromptInputs {
    kept: Mutex<Kept>,
}

#[derive(Default)]
struct Kept {
    rev: i64,
    /// By the run's agent id: the agent it runs with (the default one when
    /// it names none that exists).
    agents: HashMap<String, AgentConfig>,
    instructions: HashMap<String, String>,
    uploads: Option<Vec<Skill>>,
    /// The skills folder, its fingerprint and what it held (not revisioned).
    folder: Option<(PathBuf, DirFingerprint, Vec<Skill>)>,
}

impl PromptInputs {
    /// The copy for a run claimed at `rev`; a newer copy serves it as it is.
    fn at(&self, rev: i64) -> std::sync::MutexGuard<'_, Kept> {
        let mut kept = self.kept.lock().expect("prompt inputs lock");
        if rev > kept.rev {
            let folder = kept.folder.take();
            *kept = Kept {
                rev,
                folder,
                ..Kept::default()
            };
        }
        kept
    }

    /// Keep `put` in the copy if it is still the copy of `rev`.
    fn keep(&self, rev: i64, put: impl FnOnce(&mut Kept)) {
        let mut kept = self.kept.lock().expect("prompt inputs lock");
        if kept.rev == rev {
            put(&mut kept);
        }
    }

    /// The session's agent (the default one when it names none that exists).
    pub async fn agent(&self, store: &Store, run: &ClaimedRun) -> weft_store::Result<AgentConfig> {
        let rev = run.prompt_rev;
        if let Some(a) = self.at(rev).agents.get(&run.agent) {
            metrics::counter!("weft_prompt_inputs_hits_total").increment(1);
            return Ok(a.clone());
        }
        metrics::counter!("weft_prompt_inputs_misses_total").increment(1);
        let agent = store.agent_or_default(&run.agent).await?;
        self.keep(rev, |k| {
            k.agents.insert(run.agent.clone(), agent.clone());
        });
        Ok(agent)
    }

    /// The user's own instructions ("" when unreadable: a prompt without them
    /// beats no run).
    pub async fn instructions(&self, store: &Store, run: &ClaimedRun) -> String {
        let rev = run.prompt_rev;
        if let Some(text) = self.at(rev).instructions.get(&run.user_id.0) {
            return text.clone();
        }
        let Ok(text) = store.user_instructions(&run.user_id).await else {
            return String::new();
        };
        self.keep(rev, |k| {
            if k.instructions.len() >= MAX_USERS {
                k.instructions.clear();
            }
            k.instructions.insert(run.user_id.0.clone(), text.clone());
        });
        text
    }

    /// Every skill: the folder's, then uploads (which win by name).
    pub async fn skills(
        &self,
        store: &Store,
        run: &ClaimedRun,
        dir: &Path,
    ) -> weft_store::Result<Vec<Skill>> {
        let rev = run.prompt_rev;
        let print = dir_fingerprint(dir);
        let (uploads, folder) = {
            let kept = self.at(rev);
            let folder = kept
                .folder
                .as_ref()
                .filter(|(d, p, _)| d == dir && *p == print)
                .map(|(_, _, s)| s.clone());
            (kept.uploads.clone(), folder)
        };
        let folder = match folder {
            Some(f) => f,
            None => {
                let read = if print.is_empty() {
                    Vec::new()
                } else {
                    load_dir(dir)
                };
                let mut kept = self.kept.lock().expect("prompt inputs lock");
                kept.folder = Some((dir.to_path_buf(), print, read.clone()));
                read
            }
        };
        let uploads = match uploads {
            Some(u) => u,
            None => {
                let u = store.uploaded_skills().await?;
                self.keep(rev, |k| k.uploads = Some(u.clone()));
                u
            }
        };
        Ok(merge_skills(folder, uploads))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_newer_revision_starts_over_and_an_older_one_keeps_nothing() {
        let p = PromptInputs::default();
        p.keep(0, |k| {
            k.instructions.insert("u".into(), "v0".into());
        });
        assert_eq!(
            p.at(0).instructions.get("u").map(String::as_str),
            Some("v0")
        );
        // A run claimed after an edit: the copy starts over.
        assert!(p.at(1).instructions.is_empty());
        p.keep(1, |k| {
            k.instructions.insert("u".into(), "v1".into());
        });
        // A run claimed before the edit finishes its read late: it keeps nothing
        // (what it read may be older than revision 1), and it is served revision 1's copy.
        p.keep(0, |k| {
            k.instructions.insert("u".into(), "v0".into());
        });
        assert_eq!(
            p.at(0).instructions.get("u").map(String::as_str),
            Some("v1")
        );
        assert_eq!(
            p.at(1).instructions.get("u").map(String::as_str),
            Some("v1")
        );
    }
}

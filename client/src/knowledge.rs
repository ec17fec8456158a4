//! `weft knowledge …`: knowledge bases from the terminal — list, create, add
//! files and folders (uploaded one file per request, then followed until every
//! document is indexed), search, remove. Bases are named as people name them;
//! a name means your own base of that name first, then a shared one (the
//! gateway's rule for agents too).

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use weft_wire::api::{
    CreateKnowledgeBase, DocumentStatus, KnowledgeBaseDto, KnowledgeDocumentDto, KnowledgeSearch,
    KnowledgeVisibility,
};

use crate::api::Gateway;
use crate::attach::LocalFile;
use crate::error::{ClientError, Result};

/// The base `name` means for the caller: theirs first, then a shared one.
async fn base(gw: &Gateway, name: &str) -> Result<KnowledgeBaseDto> {
    let me = gw.me().await?;
    let mut bases: Vec<KnowledgeBaseDto> = gw
        .knowledge_bases()
        .await?
        .knowledge_bases
        .into_iter()
        .filter(|b| b.name == name)
        .collect();
    bases.sort_by_key(|b| (b.owner != me.id, b.created_at));
    bases.into_iter().next().ok_or_else(|| {
        ClientError::Usage(format!(
            "no knowledge base {name:?} (see `weft knowledge list`; make one with `weft knowledge create {name}`)"
        ))
    })
}

pub async fn list(gw: &Gateway) -> Result<()> {
    let bases = gw.knowledge_bases().await?.knowledge_bases;
    let mut out = std::io::stdout().lock();
    if bases.is_empty() {
        writeln!(
            out,
            "no knowledge bases yet; make one with `weft knowledge create NAME`"
        )?;
    }
    for b in bases {
        let shared = match b.visibility {
            KnowledgeVisibility::Shared => "shared ",
            KnowledgeVisibility::Private => "private",
        };
        writeln!(
            out,
            "{:<24} {shared}  {:>5} docs  {}  {}",
            b.name, b.documents, b.owner_name, b.description
        )?;
    }
    Ok(())
}

pub async fn create(gw: &Gateway, name: &str, description: &str, shared: bool) -> Result<()> {
    let b = gw
        .create_knowledge_base(&CreateKnowledgeBase {
            name: name.to_string(),
            description: description.to_string(),
            visibility: if shared {
                KnowledgeVisibility::Shared
            } else {
                KnowledgeVisibility::Private
            },
        })
        .await?;
    println!(
        "created knowledge base {} ({}); add files with `weft knowledge add {} FILE|DIR…`",
        b.name,
        b.visibility.as_str(),
        b.name
    );
    Ok(())
}

/// The files under `paths`: files as given, folders walked (hidden entries
/// and empty files left out), in a stable order.
fn files_under(paths: &[PathBuf]) -> Result<Vec<LocalFile>> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
        let mut entries: Vec<_> = std::fs::read_dir(dir)?.flatten().collect();
        entries.sort_by_key(|e| e.file_name());
        for e in entries {
            if e.file_name().to_string_lossy().starts_with('.') {
                continue;
            }
            let path = e.path();
            let kind = e.file_type()?;
            if kind.is_dir() {
                walk(&path, out)?;
            } else if kind.is_file() && e.metadata()?.len() > 0 {
                out.push(path);
            }
        }
        Ok(())
    }
    let mut found = Vec::new();
    for p in paths {
        if p.is_dir() {
            walk(p, &mut found).map_err(|e| {
                ClientError::Usage(format!("cannot read the folder {}: {e}", p.display()))
            })?;
        } else {
            found.push(p.clone());
        }
    }
    found.iter().map(|p| LocalFile::open(p)).collect()
}

/// A status line that rewrites itself on a terminal, and prints every few
/// seconds elsewhere (logs of CI jobs).
struct Progress {
    tty: bool,
    last: std::time::Instant,
}

impl Progress {
    fn new() -> Progress {
        Progress {
            tty: std::io::stderr().is_terminal(),
            last: std::time::Instant::now() - Duration::from_secs(60),
        }
    }

    fn show(&mut self, line: &str) {
        let mut err = std::io::stderr().lock();
        if self.tty {
            let _ = write!(err, "\r\x1b[K{line}");
            let _ = err.flush();
        } else if self.last.elapsed() >= Duration::from_secs(5) {
            let _ = writeln!(err, "{line}");
            self.last = std::time::Instant::now();
        }
    }

    fn done(&mut self, line: &str) {
        let mut err = std::io::stderr().lock();
        if self.tty {
            let _ = writeln!(err, "\r\x1b[K{line}");
        } else {
            let _ = writeln!(err, "{line}");
        }
    }
}

/// `weft knowledge add NAME FILE|DIR…`: uploads each file, then follows the
/// documents until each is `ready` or `failed` (unless `no_wait`). A file the
/// gateway refuses is reported and the rest go on; the exit code says whether
/// all of them made it.
pub async fn add(gw: &Gateway, name: &str, paths: &[PathBuf], no_wait: bool) -> Result<bool> {
    let files = files_under(paths)?;
    if files.is_empty() {
        return Err(ClientError::Usage("no files to add".into()));
    }
    let base = base(gw, name).await?;
    let mut progress = Progress::new();
    let mut added: Vec<String> = Vec::new();
    let mut refused: Vec<(String, String)> = Vec::new();
    let total = files.len();
    for (i, f) in files.iter().enumerate() {
        progress.show(&format!("uploading [{}/{total}] {}", i + 1, f.label()));
        let upload = f.read().await?;
        match gw.upload_knowledge(&base.id, &upload).await {
            Ok(result) => {
                for d in result.documents {
                    added.push(d.document.id);
                }
            }
            Err(ClientError::Api { message, .. }) => {
                refused.push((f.path().display().to_string(), message));
            }
            Err(e) => return Err(e),
        }
    }
    progress.done(&format!(
        "uploaded {} of {total} files to {}",
        total - refused.len(),
        base.name
    ));
    for (path, why) in &refused {
        eprintln!("  refused {path}: {}", why);
    }
    if no_wait || added.is_empty() {
        return Ok(refused.is_empty());
    }
    let failed = follow(gw, &base.id, &added, &mut progress).await?;
    for d in &failed {
        eprintln!(
            "  failed {}: {}",
            d.name,
            d.error.as_deref().unwrap_or("unknown error")
        );
    }
    Ok(refused.is_empty() && failed.is_empty())
}

/// The gateway pings an idle stream every 15 s; silence this long means it is gone.
const SILENCE: Duration = Duration::from_secs(45);
/// How often the documents are read when the event stream cannot be had.
const POLL: Duration = Duration::from_secs(1);

type Events = std::pin::Pin<
    Box<dyn futures::Stream<Item = std::result::Result<eventsource_stream::Event, String>> + Send>,
>;

/// The base's event stream (docs/knowledge.md, "Following ingestion"), or
/// None when it cannot be had (a gateway from before it): the list is then
/// read every [`POLL`].
async fn events(gw: &Gateway, base: &str) -> Option<Events> {
    use eventsource_stream::Eventsource;
    use futures::StreamExt;
    let resp = gw.knowledge_events(base).await.ok()?;
    Some(Box::pin(
        resp.bytes_stream()
            .eventsource()
            .map(|e| e.map_err(|e| e.to_string())),
    ))
}

/// Follows `ids` until each is ready or failed; returns the failed ones. The
/// list is read once the base's event stream is open (so every change is in
/// that read or on the stream), then kept by the stream's events — read again
/// on its `resync`, and every [`POLL`] once the stream is gone.
async fn follow(
    gw: &Gateway,
    base: &str,
    ids: &[String],
    progress: &mut Progress,
) -> Result<Vec<KnowledgeDocumentDto>> {
    use futures::StreamExt;
    use weft_wire::api::KnowledgeEvent;
    let wanted: std::collections::HashSet<&str> = ids.iter().map(String::as_str).collect();
    let mut stream = events(gw, base).await;
    loop {
        let mut docs: std::collections::HashMap<String, KnowledgeDocumentDto> = gw
            .knowledge_documents(base)
            .await?
            .documents
            .into_iter()
            .filter(|d| wanted.contains(d.id.as_str()))
            .map(|d| (d.id.clone(), d))
            .collect();
        loop {
            let count = |s: DocumentStatus| docs.values().filter(|d| d.status == s).count();
            let (ready, failed) = (count(DocumentStatus::Ready), count(DocumentStatus::Failed));
            let line = format!(
                "indexing: {ready} ready, {} processing, {} queued, {failed} failed of {}",
                count(DocumentStatus::Processing),
                count(DocumentStatus::Queued),
                wanted.len()
            );
            // A document deleted meanwhile no longer counts.
            if ready + failed >= docs.len() {
                progress.done(&line);
                let mut failed: Vec<_> = docs
                    .into_values()
                    .filter(|d| d.status == DocumentStatus::Failed)
                    .collect();
                failed.sort_by(|a, b| a.name.cmp(&b.name));
                return Ok(failed);
            }
            progress.show(&line);
            let Some(events) = stream.as_mut() else {
                tokio::time::sleep(POLL).await;
                break;
            };
            let event = match tokio::time::timeout(SILENCE, events.next()).await {
                Ok(Some(Ok(event))) => event,
                // Ended, broken or silent: read the list from now on.
                _ => {
                    stream = None;
                    break;
                }
            };
            match serde_json::from_str::<KnowledgeEvent>(&event.data) {
                Ok(KnowledgeEvent::Document { document }) => {
                    if let Some(held) = docs.get(&document.id)
                        && document.is_news_over(held)
                    {
                        docs.insert(document.id.clone(), document);
                    }
                }
                Ok(KnowledgeEvent::DocumentDeleted { document_id }) => {
                    docs.remove(&document_id);
                }
                Ok(KnowledgeEvent::Deleted { .. }) => {
                    return Err(ClientError::Usage(
                        "the knowledge base was deleted while its documents were indexed".into(),
                    ));
                }
                Ok(KnowledgeEvent::Resync) => break,
                Err(_) => {}
            }
        }
    }
}

pub async fn search(gw: &Gateway, name: &str, query: &str, top_k: Option<u32>) -> Result<()> {
    let base = base(gw, name).await?;
    let found = gw
        .search_knowledge(
            &base.id,
            &KnowledgeSearch {
                query: query.to_string(),
                top_k,
            },
        )
        .await?;
    let mut out = std::io::stdout().lock();
    if found.results.is_empty() {
        writeln!(out, "nothing in {} matches {query:?}", base.name)?;
    }
    for (i, hit) in found.results.iter().enumerate() {
        let place = if hit.position.is_empty() {
            String::new()
        } else {
            format!(" — {}", hit.position)
        };
        writeln!(
            out,
            "[{}] {}{place}\n{}\n",
            i + 1,
            hit.document_name,
            hit.text.trim()
        )?;
    }
    Ok(())
}

pub async fn documents(gw: &Gateway, name: &str) -> Result<()> {
    let base = base(gw, name).await?;
    let docs = gw.knowledge_documents(&base.id).await?.documents;
    let mut out = std::io::stdout().lock();
    for d in docs {
        let error = d.error.as_deref().map(|e| format!("  ({e})"));
        writeln!(
            out,
            "{}  {:<10} {:>4} chunks  {}{}",
            d.id,
            d.status.as_str(),
            d.chunks,
            d.name,
            error.unwrap_or_default()
        )?;
    }
    Ok(())
}

/// `rm NAME` deletes the base; `rm NAME DOC` one document, by id or name.
pub async fn remove(gw: &Gateway, name: &str, doc: Option<&str>) -> Result<()> {
    let base = base(gw, name).await?;
    let Some(doc) = doc else {
        gw.delete_knowledge(&base.id, None).await?;
        println!(
            "deleted knowledge base {} and its {} documents",
            base.name, base.documents
        );
        return Ok(());
    };
    let docs = gw.knowledge_documents(&base.id).await?.documents;
    let matching: Vec<&KnowledgeDocumentDto> = docs
        .iter()
        .filter(|d| d.id == doc || d.name == doc)
        .collect();
    let target = match matching.as_slice() {
        [one] => *one,
        [] => {
            return Err(ClientError::Usage(format!(
                "{} has no document {doc:?} (see `weft knowledge docs {}`)",
                base.name, base.name
            )));
        }
        _ => {
            return Err(ClientError::Usage(format!(
                "{} documents are named {doc:?}; give the id (see `weft knowledge docs {}`)",
                matching.len(),
                base.name
            )));
        }
    };
    gw.delete_knowledge(&base.id, Some(&target.id)).await?;
    println!("deleted {} from {}", target.name, base.name);
    Ok(())
}

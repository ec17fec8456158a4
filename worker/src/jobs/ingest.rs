//! `knowledge.ingest`: a knowledge base document read, chunked and indexed.
//!
//! The upload stored the bytes (by hash) and the document row with this job;
//! here the bytes are read in a `weft extract` child (PDFs page by page), cut
//! into chunks that know their heading path or page (`weft_knowledge::chunk`),
//! their words segmented for the lexical index, and all of it written in one
//! transaction that replaces whatever an interrupted attempt left — so a worker
//! killed mid-ingest and the one that takes over end with the document `ready`
//! once and no chunk twice. A document deleted meanwhile ends the job quietly.
//!
//! When an embedding model is configured, each chunk (with its heading path)
//! is embedded too, in the provider's batches, and the vectors are written in
//! that same transaction; the job's progress says how far it got
//! (`{stage, done, total}`), for the documents page.
//!
//! Every change a person watching the base would see — the document taken up,
//! each stage, every few embedding batches, its end, a retry's error — is also
//! sent as a notice (`weft_shared::notice::knowledge`) for the base's event
//! stream, so its page and `weft knowledge add` follow without polling.
//!
//! What cannot work on a retry fails at once, with a message for the page: a
//! type that has no text, a PDF without a text layer, a file the reader gave
//! up on. What may (the database, the blob store, no free reader) is retried
//! with the runner's backoff, the last error shown on the document meanwhile.
//! An embedding provider that is down (or a key not set) makes the job wait
//! ([`JobError::Wait`]): the document stays `processing`, the error shown, for
//! as long as the outage lasts; a provider that refuses the input (a 400) is
//! retried like any other error and then fails the document.

use weft_config::LiveConfig;
use weft_files::isolate::{Extractor, Failure};
use weft_knowledge::{ChunkOptions, Retriever, segment};
use weft_llm::LlmError;
use weft_shared::api::KnowledgeEvent;
use weft_shared::api::{DocumentStatus, IngestProgress as Progress, IngestStage};
use weft_shared::blobs::Blobs;
use weft_shared::bus::SharedBus;
use weft_shared::job::IngestDocument;
use weft_store::{ChunkVectors, KnowledgeDocument, NewChunk, Store, StoreError};

use super::{BackgroundJob, JobContext, JobError};

pub struct Ingest {
    pub blobs: Blobs,
    pub extractor: Extractor,
    pub live: LiveConfig,
    /// The embedding model, when one is configured.
    pub retriever: Retriever,
    /// Where the documents' changes are told (notices).
    pub bus: SharedBus,
}

fn retry(what: &str) -> impl Fn(StoreError) -> JobError + '_ {
    move |e| JobError::Retry(format!("{what}: {e}"))
}

impl BackgroundJob for Ingest {
    type Payload = IngestDocument;

    async fn run(&self, cx: JobContext, job: IngestDocument) -> Result<(), JobError> {
        let store = &cx.store;
        let Some(doc) = store
            .knowledge_document_unscoped(&job.document_id)
            .await
            .map_err(retry("reading the document"))?
        else {
            return Ok(());
        };
        if matches!(doc.status, DocumentStatus::Ready | DocumentStatus::Failed) {
            return Ok(());
        }
        store
            .knowledge_document_processing(&doc.id)
            .await
            .map_err(retry("marking the document"))?;
        self.tell(store, &doc.id).await;
        let result = self.ingest(&cx, &doc).await;
        if let Err(JobError::Retry(error) | JobError::Wait(error)) = &result
            && (cx.attempt < cx.max_attempts || matches!(result, Err(JobError::Wait(_))))
        {
            // Shown while it waits for the next try.
            let _ = store.knowledge_document_retrying(&doc.id, error).await;
        }
        // Its end, or the error it shows while it waits for the next try
        // (a failure for good is told by `gave_up`).
        self.tell(store, &doc.id).await;
        result
    }

    async fn gave_up(&self, store: &Store, job: IngestDocument, error: &str) {
        if let Err(e) = store
            .knowledge_document_failed(&job.document_id, error)
            .await
        {
            tracing::warn!(document = %job.document_id, error = %e, "marking a document failed did not work");
        }
        self.tell(store, &job.document_id).await;
    }
}

impl Ingest {
    async fn ingest(&self, cx: &JobContext, doc: &KnowledgeDocument) -> Result<(), JobError> {
        let store = &cx.store;
        self.progress(
            cx,
            doc,
            Progress {
                stage: IngestStage::Reading,
                done: 0,
                total: 0,
            },
        )
        .await;
        let bytes = self
            .blobs
            .get(&doc.sha256)
            .await
            .map_err(|e| JobError::Retry(format!("reading the file: {e}")))?;
        let det = weft_files::Detected::from_mime(&doc.mime).ok_or_else(|| {
            JobError::Fail(format!("{} documents have no text to index", doc.mime))
        })?;
        let text = match self.extractor.document_paged(&det, bytes).await {
            Ok(text) => text,
            Err(Failure::NotStarted(why)) => {
                return Err(JobError::Retry(format!("no reader could start: {why}")));
            }
            Err(failure) => return Err(JobError::Fail(failure.to_string())),
        };
        let paged = doc.mime == weft_files::mime::PDF;
        if text.trim().is_empty() {
            return Err(JobError::Fail(if paged {
                "no text layer (scanned PDF)".into()
            } else {
                "the document has no text".into()
            }));
        }
        let cfg = self.live.get().knowledge.clone();
        let opts = ChunkOptions {
            max_tokens: cfg.chunk_tokens,
            overlap_tokens: cfg.chunk_overlap_tokens,
        };
        // Chunking and segmenting are CPU work (a long document, jieba's
        // dictionary on first use): off the async threads.
        let chunks = tokio::task::spawn_blocking(move || {
            weft_knowledge::chunk(&text, paged, opts, &|s| weft_llm::tokens::estimate(s))
                .into_iter()
                .map(|c| NewChunk {
                    lexical: segment::lexical(&indexed_text(&c.heading, &c.text)),
                    text: c.text,
                    heading: c.heading,
                    page: c.page,
                    tokens: c.tokens,
                })
                .collect::<Vec<_>>()
        })
        .await
        .map_err(|e| JobError::Retry(format!("chunking stopped: {e}")))?;
        let vectors = self.embed(cx, doc, &chunks).await?;
        match store
            .replace_knowledge_chunks(&doc.id, &chunks, vectors.as_ref())
            .await
        {
            Ok(()) => {
                tracing::info!(document = %doc.id, chunks = chunks.len(), "document indexed");
                Ok(())
            }
            // Deleted while it was read: nothing to index.
            Err(StoreError::NotFound) => Ok(()),
            Err(e) => Err(JobError::Retry(format!("storing the chunks: {e}"))),
        }
    }
}

impl Ingest {
    /// The chunks' vectors, when an embedding model is configured.
    async fn embed(
        &self,
        cx: &JobContext,
        doc: &KnowledgeDocument,
        chunks: &[NewChunk],
    ) -> Result<Option<ChunkVectors>, JobError> {
        let current = match self.retriever.embedder() {
            Ok(Some(current)) => current,
            Ok(None) => return Ok(None),
            Err(why) => return Err(JobError::Wait(why)),
        };
        let texts: Vec<String> = chunks
            .iter()
            .map(|c| indexed_text(&c.heading, &c.text))
            .collect();
        // A few requests' worth at a time, so progress moves on a long document.
        let step = current.embedder.config().batch_size.max(1) * 4;
        let mut vectors = Vec::with_capacity(texts.len());
        for part in texts.chunks(step) {
            let progress = Progress {
                stage: IngestStage::Embedding,
                done: vectors.len() as u64,
                total: texts.len() as u64,
            };
            self.progress(cx, doc, progress).await;
            let got = current.embedder.embed(part).await.map_err(|e| match e {
                LlmError::Transient { .. } => JobError::Wait(e.to_string()),
                LlmError::Fatal { .. } => JobError::Retry(e.to_string()),
            })?;
            vectors.extend(got);
        }
        if vectors.windows(2).any(|w| w[0].len() != w[1].len()) {
            return Err(JobError::Retry(
                "the embedding model answered vectors of different sizes".into(),
            ));
        }
        Ok(Some(ChunkVectors {
            model: current.model,
            vectors,
        }))
    }
}

impl Ingest {
    /// Tell the base's watchers how the document stands now, as stored.
    async fn tell(&self, store: &Store, id: &str) {
        if let Ok(Some(doc)) = store.knowledge_document_unscoped(id).await {
            let document = doc.to_dto();
            weft_shared::notice::knowledge(
                &*self.bus,
                &doc.base_id,
                &KnowledgeEvent::Document { document },
            )
            .await;
        }
    }

    /// How far the job got: stored with the next lease renewal, told at once.
    async fn progress(&self, cx: &JobContext, doc: &KnowledgeDocument, progress: Progress) {
        cx.progress(&progress);
        let mut document = doc.to_dto();
        document.status = DocumentStatus::Processing;
        document.progress = Some(progress);
        weft_shared::notice::knowledge(
            &*self.bus,
            &doc.base_id,
            &KnowledgeEvent::Document { document },
        )
        .await;
    }
}

/// What the indexes see of a chunk: its heading path, then its text, so a
/// search for a section's title finds its passages (both the lexical index and
/// the vectors).
fn indexed_text(heading: &str, text: &str) -> String {
    if heading.is_empty() {
        text.to_string()
    } else {
        format!("{heading}\n{text}")
    }
}

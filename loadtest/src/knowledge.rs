//! `weft-loadtest knowledge`: what knowledge bases cost (issue 25), in each
//! mode, against the stack this tool starts (the mock LLM serves the chat model
//! and `/v1/embeddings`, so ingestion embeds every chunk over HTTP as it would
//! with a real provider):
//!
//! 1. **ingestion**: `--docs` small Markdown documents (three sections each)
//!    uploaded in multipart batches, timed from the first upload until every
//!    one is `ready` — files/s, chunks/s, and the peak RSS and CPU of each
//!    process meanwhile;
//! 2. **search** at each of `--sizes` chunks: a second base filled through the
//!    same API with long documents (50 sections each) up to the size, then
//!    `--queries` searches one after another, hybrid (lexical and vectors) and,
//!    after a config reload without the embedding model, lexical — client-side
//!    latency p50/p99 (the first hybrid search, which reads the base's vectors
//!    into the process, is reported apart);
//!    Where the database is Postgres with pgvector, the HNSW index's recall
//!    against exact search is measured after ingestion and at each size, for
//!    queries of 3, 12 and 120 words, with the walk searches use and longer
//!    ones (what each finds and costs), beside how tied the exact nearest are;
//!    each size is filled with the embedding model on and checked to have a
//!    vector for every chunk;
//! 3. **auto mode's cost on the first token**: `--runs` runs each of an agent
//!    with `knowledge_mode = "auto"` and one with `tool` over the largest base,
//!    lexical only (as the target says), time to the first text token
//!    p50 of each and the difference.
//!
//! Documents are made of pseudo-words from a fixed seed, so every run indexes
//! the same text.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{Value, json};
use weft_store::{Store, VectorScan};

use crate::mock_llm::{MockLlmConfig, MockLlmServer};
use crate::procs::ProcWatch;
use crate::sse::SseReader;
use crate::stack::{Mode, Stack, StackOpts};
use crate::stats::Summary;

#[derive(Debug, Clone, clap::Args)]
pub struct KnowledgeOpts {
    /// The `weft` binary to start.
    #[arg(long)]
    pub weft_bin: PathBuf,
    #[arg(long, value_delimiter = ',', default_value = "embedded,distributed")]
    pub modes: Vec<Mode>,
    /// Small documents ingested for the ingestion figures.
    #[arg(long, default_value_t = 2000)]
    pub docs: usize,
    /// Chunk counts of the base searched (each reached by adding documents).
    #[arg(long, value_delimiter = ',', default_value = "10000,100000")]
    pub sizes: Vec<usize>,
    /// Searches per size and mode.
    #[arg(long, default_value_t = 200)]
    pub queries: usize,
    /// Runs per agent for auto mode's cost.
    #[arg(long, default_value_t = 100)]
    pub runs: usize,
    /// Where the report (Markdown) goes.
    #[arg(long, default_value = "knowledge-bench.md")]
    pub out: PathBuf,
    #[arg(long, default_value = "postgres://postgres@127.0.0.1:5432/test")]
    pub postgres_admin_url: String,
    #[arg(long, default_value = "redis://127.0.0.1:6379")]
    pub redis_url: String,
}

const SECTIONS_SMALL: usize = 3;
const SECTIONS_LONG: usize = 50;
const DIMENSIONS: usize = 256;

/// A deterministic vocabulary of pseudo-words.
fn vocabulary() -> Vec<String> {
    const SYLLABLES: [&str; 24] = [
        "ka", "lo", "mi", "ne", "ru", "sa", "to", "vi", "be", "do", "fu", "ga", "hi", "je", "ko",
        "la", "mo", "nu", "pe", "ri", "se", "ta", "vo", "zu",
    ];
    let mut rng = StdRng::seed_from_u64(25);
    (0..4000)
        .map(|_| {
            let n = rng.random_range(2..=4);
            (0..n)
                .map(|_| SYLLABLES[rng.random_range(0..SYLLABLES.len())])
                .collect()
        })
        .collect()
}

fn words(rng: &mut StdRng, vocab: &[String], n: usize) -> String {
    (0..n)
        .map(|_| vocab[rng.random_range(0..vocab.len())].as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

/// A Markdown document of `sections` sections of about 120 words.
fn document(rng: &mut StdRng, vocab: &[String], sections: usize) -> String {
    let mut out = format!("# {}\n\n", words(rng, vocab, 3));
    for _ in 0..sections {
        let _ = write!(
            out,
            "## {}\n\n{}.\n\n",
            words(rng, vocab, 3),
            words(rng, vocab, 120)
        );
    }
    out
}

struct Api {
    http: reqwest::Client,
    base: String,
    token: String,
}

impl Api {
    async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> anyhow::Result<Value> {
        let mut req = self
            .http
            .request(method, format!("{}{path}", self.base))
            .bearer_auth(&self.token);
        if let Some(body) = body {
            req = req.json(&body);
        }
        crate::client::ok_json(req.send().await?)
            .await
            .with_context(|| path.to_string())
    }

    async fn create_base(&self, name: &str) -> anyhow::Result<String> {
        let v = self
            .call(
                reqwest::Method::POST,
                "/v1/knowledge",
                Some(json!({"name": name, "visibility": "shared"})),
            )
            .await?;
        Ok(v["id"].as_str().context("base id")?.to_string())
    }

    async fn upload(&self, base: &str, files: Vec<(String, String)>) -> anyhow::Result<()> {
        let mut form = reqwest::multipart::Form::new();
        for (name, text) in files {
            form = form.part(
                "file",
                reqwest::multipart::Part::bytes(text.into_bytes())
                    .file_name(name)
                    .mime_str("text/markdown")?,
            );
        }
        let resp = self
            .http
            .post(format!("{}/v1/knowledge/{base}/documents", self.base))
            .bearer_auth(&self.token)
            .multipart(form)
            .send()
            .await?;
        crate::client::ok_json::<Value>(resp)
            .await
            .context("upload")?;
        Ok(())
    }

    /// Until every document of `base` is ready; its chunk count.
    async fn settled(&self, base: &str, within: Duration) -> anyhow::Result<u64> {
        let started = Instant::now();
        loop {
            let v = self
                .call(
                    reqwest::Method::GET,
                    &format!("/v1/knowledge/{base}/documents"),
                    None,
                )
                .await?;
            let docs = v["documents"].as_array().context("documents")?;
            if let Some(failed) = docs.iter().find(|d| d["status"] == "failed") {
                bail!("a document failed: {failed}");
            }
            if docs.iter().all(|d| d["status"] == "ready") {
                return Ok(docs.iter().map(|d| d["chunks"].as_u64().unwrap_or(0)).sum());
            }
            if started.elapsed() > within {
                bail!("documents still not ready after {within:?}");
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }

    async fn reload(&self) -> anyhow::Result<()> {
        self.call(reqwest::Method::POST, "/v1/admin/reload", Some(json!({})))
            .await
            .map(|_| ())
    }
}

/// Adds `count` documents of `sections` sections to `base`, 50 per request,
/// two requests at a time; the first document's text.
async fn add_documents(
    api: &Api,
    base: &str,
    count: usize,
    sections: usize,
    seed: u64,
) -> anyhow::Result<String> {
    let vocab = vocabulary();
    let mut rng = StdRng::seed_from_u64(seed);
    let docs: Vec<(String, String)> = (0..count)
        .map(|i| {
            (
                format!("doc-{seed}-{i}.md"),
                document(&mut rng, &vocab, sections),
            )
        })
        .collect();
    let batches: Vec<Vec<(String, String)>> = docs.chunks(50).map(<[_]>::to_vec).collect();
    for pair in batches.chunks(2) {
        futures::future::try_join_all(pair.iter().map(|b| api.upload(base, b.clone()))).await?;
    }
    Ok(docs
        .first()
        .map(|(_, text)| text.clone())
        .unwrap_or_default())
}

/// Checks that the chunks have vectors: the first section of `doc` with every
/// word's last letter changed to `x` (a letter no pseudo-word has, so the
/// lexical index matches nothing) is still found, by its trigrams.
async fn check_vectors(api: &Api, base: &str, doc: &str) -> anyhow::Result<()> {
    let paragraph = doc.split("\n\n").nth(2).context("a paragraph")?;
    let v = api
        .call(
            reqwest::Method::POST,
            &format!("/v1/knowledge/{base}/search"),
            Some(json!({"query": garble(doc)?, "top_k": 1})),
        )
        .await?;
    let found = v["results"][0]["text"].as_str().unwrap_or_default();
    let opening: String = paragraph.chars().take(40).collect();
    if v["mode"] != "hybrid" || !found.contains(&opening) {
        bail!("the chunks have no vectors: a garbled paragraph was not found ({v})");
    }
    Ok(())
}

/// The stack's store, where it searches vectors with pgvector's index (the
/// only place an index can lose a neighbour); `None` elsewhere.
async fn pgvector_store(database_url: &str) -> anyhow::Result<Option<Store>> {
    if !database_url.starts_with("postgres") {
        return Ok(None);
    }
    let store = Store::connect_with(database_url, 2).await?;
    Ok(store.knowledge_vector_index().await?.then_some(store))
}

/// Nearest chunks compared by [`index_recall`].
const RECALL_AT: u32 = 20;

/// Walks of the HNSW index measured beside the one searches use: pgvector's
/// `ef_search` (the candidate list), up to its longest.
const WALKS: [u32; 3] = [200, 400, 1000];

/// What pgvector's HNSW index finds of the exact nearest [`RECALL_AT`] chunks
/// of a base, over a set of queries: how much it misses, whether a longer walk
/// finds it (the graph holds it) and what that costs, and how far what it
/// finds instead is from what it missed.
struct IndexRecall {
    queries: usize,
    words: usize,
    /// The share of the exact nearest found with the walk searches use.
    recall: f64,
    /// The share of the exact nearest 5 among those [`RECALL_AT`]: what a
    /// search of `top_k` 5 (the default, which asks each index for 20
    /// candidates) can lose.
    top5: f64,
    /// What the index found, as similarity summed, over what exact search
    /// found (1.0: as near, whichever chunks they are).
    similarity: f64,
    /// Each walk's `ef_search`, recall and mean time per search (ms); the
    /// first is the searches' own.
    walks: Vec<(u32, f64, f64)>,
    /// Exact search's time per search (ms).
    exact_ms: f64,
    /// The exact search's similarity of its 1st, 20th and 40th nearest,
    /// averaged over the queries: a 20th close to the 40th means the top 20
    /// is nearly a tie with the next 20.
    exact_at: [f64; 3],
}

impl IndexRecall {
    fn row(&self, chunks: impl std::fmt::Display) -> String {
        let [first, twentieth, fortieth] = self.exact_at;
        let walks = self
            .walks
            .iter()
            .map(|(ef, recall, ms)| format!("{ef}: {recall:.3} ({ms:.1} ms)"))
            .collect::<Vec<_>>()
            .join(", ");
        format!(
            "| pgvector's index | {chunks} chunks, {} queries of {} words | recall@{RECALL_AT} **{:.3}** against exact search; the exact nearest 5 among its {RECALL_AT}: {:.3}; what it finds is {:.1} % as similar as the exact nearest; by ef_search (the first is what searches use): {walks}; exact {:.1} ms | exact similarity of the 1st / 20th / 40th nearest: {first:.3} / {twentieth:.3} / {fortieth:.3} |",
            self.queries,
            self.words,
            self.recall,
            self.top5,
            self.similarity * 100.0,
            self.exact_ms,
        )
    }
}

/// Where the stack's database searches vectors with pgvector's HNSW index,
/// [`IndexRecall`] over `n` queries of `words_per_query` vocabulary words
/// (the vectors the mock LLM gives them). `None` elsewhere (exact search has
/// nothing to lose).
async fn index_recall(
    database_url: &str,
    base: &str,
    n: usize,
    words_per_query: usize,
) -> anyhow::Result<Option<IndexRecall>> {
    let Some(store) = pgvector_store(database_url).await? else {
        return Ok(None);
    };
    let vocab = vocabulary();
    let mut rng = StdRng::seed_from_u64(20);
    let bases = [base.to_string()];
    let scans: Vec<VectorScan> = std::iter::once(VectorScan::Index)
        .chain(WALKS.map(VectorScan::IndexWith))
        .collect();
    // Per scan: exact nearest found, and seconds spent.
    let mut found = vec![(0usize, 0f64); scans.len()];
    let (mut top5, mut similarity, mut exact_s, mut exact_at) = (0usize, 0f64, 0f64, [0f64; 3]);
    for _ in 0..n {
        let query = crate::mock_llm::embeddings::embed(
            &words(&mut rng, &vocab, words_per_query),
            DIMENSIONS,
        );
        let near = async |scan, limit| {
            let t = Instant::now();
            let found = store
                .search_knowledge_vectors_indexed(&bases, "mock-embed", &query, limit, scan)
                .await?;
            anyhow::Ok((found, t.elapsed().as_secs_f64()))
        };
        let (exact, took) = near(VectorScan::Exact, 2 * RECALL_AT).await?;
        exact_s += took;
        let top = &exact[..exact.len().min(RECALL_AT as usize)];
        let among = |found: &[(String, f64)], of: &[(String, f64)]| {
            of.iter()
                .filter(|(e, _)| found.iter().any(|(id, _)| id == e))
                .count()
        };
        for (i, scan) in scans.iter().enumerate() {
            let (indexed, took) = near(*scan, RECALL_AT).await?;
            found[i].0 += among(&indexed, top);
            found[i].1 += took;
            if i == 0 {
                top5 += among(&indexed, &top[..top.len().min(5)]);
                let sum = |v: &[(String, f64)]| v.iter().map(|(_, s)| s).sum::<f64>();
                similarity += sum(&indexed) / sum(top).max(f64::MIN_POSITIVE);
            }
        }
        let ranks = [0, RECALL_AT as usize - 1, 2 * RECALL_AT as usize - 1];
        for (at, rank) in exact_at.iter_mut().zip(ranks) {
            *at += exact.get(rank).map_or(0.0, |(_, s)| *s);
        }
    }
    let asked = (n * RECALL_AT as usize) as f64;
    let per_query_ms = |s: f64| s * 1000.0 / n as f64;
    let walks: Vec<(u32, f64, f64)> =
        std::iter::once(VectorScan::Index.candidates(RECALL_AT).unwrap_or_default())
            .chain(WALKS)
            .zip(&found)
            .map(|(ef, (hits, s))| (ef, *hits as f64 / asked, per_query_ms(*s)))
            .collect();
    Ok(Some(IndexRecall {
        queries: n,
        words: words_per_query,
        recall: walks[0].1,
        top5: top5 as f64 / (n * 5) as f64,
        similarity: similarity / n as f64,
        walks,
        exact_ms: per_query_ms(exact_s),
        exact_at: exact_at.map(|s| s / n as f64),
    }))
}

/// What the database finds nearest to [`check_vectors`]'s query, by the index
/// and by every row, with the similarities: why the check failed.
async fn nearest_in_the_database(
    database_url: &str,
    base: &str,
    doc: &str,
) -> anyhow::Result<String> {
    let Some(store) = pgvector_store(database_url).await? else {
        return Ok(String::new());
    };
    let query = crate::mock_llm::embeddings::embed(&garble(doc)?, DIMENSIONS);
    let bases = [base.to_string()];
    let mut out = String::new();
    for scan in [VectorScan::Index, VectorScan::Exact] {
        let near = store
            .search_knowledge_vectors_indexed(&bases, "mock-embed", &query, 5, scan)
            .await?;
        let ids: Vec<String> = near.iter().map(|(id, _)| id.clone()).collect();
        let chunks = store.knowledge_chunks_by_id(&ids).await?;
        let _ = writeln!(out, "{scan:?}:");
        for (id, similarity) in &near {
            let text = chunks
                .iter()
                .find(|c| &c.chunk_id == id)
                .map(|c| c.text.chars().take(60).collect::<String>())
                .unwrap_or_default();
            let _ = writeln!(out, "  {similarity:.3} {id} {text}");
        }
    }
    Ok(out)
}

/// The first section of `doc` with every word's last letter changed to `x`.
fn garble(doc: &str) -> anyhow::Result<String> {
    let paragraph = doc.split("\n\n").nth(2).context("a paragraph")?;
    Ok(paragraph
        .trim_end_matches('.')
        .split(' ')
        .map(|w| format!("{}x", &w[..w.len() - 1]))
        .collect::<Vec<_>>()
        .join(" "))
}

/// The stack's whole config: the mock LLM as chat model, the agents, and the
/// embedding model unless `with_embeddings` is false (a reload switches).
fn config(llm: &str, with_embeddings: bool) -> String {
    let mut out = format!(
        "[[models]]\nid = \"mock-http\"\nprovider = \"openai\"\nbase_url = \"{llm}\"\ndefault = true\n\n"
    );
    if with_embeddings {
        let _ = write!(
            out,
            "[[embedding_models]]\nid = \"mock-embed\"\nprovider = \"openai\"\nbase_url = \"{llm}\"\ndimensions = {DIMENSIONS}\n\n"
        );
    }
    out.push_str(
        "[[agents]]\nid = \"kb-auto\"\nname = \"Auto\"\nknowledge = [\"search\"]\nknowledge_mode = \"auto\"\n\n\
         [[agents]]\nid = \"kb-tool\"\nname = \"Tool\"\nknowledge = [\"search\"]\nknowledge_mode = \"tool\"\n",
    );
    out
}

/// Client-side latency of `n` searches of 3 vocabulary words each.
async fn searches(api: &Api, base: &str, n: usize, seed: u64) -> anyhow::Result<(Summary, String)> {
    let vocab = vocabulary();
    let mut rng = StdRng::seed_from_u64(seed);
    let mut samples = Vec::with_capacity(n);
    let mut mode = String::new();
    for _ in 0..n {
        let q = words(&mut rng, &vocab, 3);
        let t = Instant::now();
        let v = api
            .call(
                reqwest::Method::POST,
                &format!("/v1/knowledge/{base}/search"),
                Some(json!({"query": q, "top_k": 5})),
            )
            .await?;
        samples.push(t.elapsed().as_micros() as i64);
        mode = v["mode"].as_str().unwrap_or_default().to_string();
    }
    Ok((Summary::of_micros(&mut samples), mode))
}

/// Time to the first text token of `n` runs of `agent`, one after another.
async fn first_tokens(api: &Api, agent: &str, n: usize) -> anyhow::Result<Summary> {
    let session = api
        .call(
            reqwest::Method::POST,
            "/v1/sessions",
            Some(json!({"title": "knowledge bench", "agent": agent})),
        )
        .await?;
    let session = session["id"].as_str().context("session id")?.to_string();
    let vocab = vocabulary();
    let mut rng = StdRng::seed_from_u64(7);
    let mut samples = Vec::with_capacity(n);
    for _ in 0..n {
        let text = format!("{}? @mock.tokens 5", words(&mut rng, &vocab, 4));
        let t = Instant::now();
        let resp = api
            .http
            .post(format!("{}/v1/sessions/{session}/messages", api.base))
            .bearer_auth(&api.token)
            .json(&json!({"text": text, "stream": true}))
            .send()
            .await?;
        if !resp.status().is_success() {
            bail!("send: {}", resp.status());
        }
        let mut sse = SseReader::new(resp.bytes_stream());
        let mut first = None;
        while let Ok(ev) = sse.next().await {
            if first.is_none() && ev.event == "text" {
                first = Some(t.elapsed());
            }
            if matches!(ev.event.as_str(), "done" | "error" | "cancelled") {
                break;
            }
        }
        samples.push(first.context("a run without text")?.as_micros() as i64);
    }
    Ok(Summary::of_micros(&mut samples))
}

/// One mode's figures, as Markdown.
async fn one_mode(o: &KnowledgeOpts, mode: Mode) -> anyhow::Result<String> {
    let llm = MockLlmServer::start(MockLlmConfig::default()).await?;
    let dir = std::env::temp_dir().join(format!(
        "weft-kb-bench-{}-{}",
        mode.name(),
        std::process::id()
    ));
    std::fs::create_dir_all(&dir)?;
    // Not `weft.toml`: the stack writes that one when it is given a model.
    let file = dir.join("knowledge-bench.toml");
    std::fs::write(&file, config(&llm.openai_base_url(), true))?;
    let stack = Stack::start(&StackOpts {
        weft_bin: o.weft_bin.clone(),
        mode,
        llm_base_url: None,
        gateways: 1,
        workers: 1,
        env: vec![
            ("WEFT_CONFIG".into(), file.display().to_string()),
            ("RUST_LOG".into(), "warn".into()),
        ],
        dir: dir.clone(),
        postgres_admin_url: o.postgres_admin_url.clone(),
        redis_url: o.redis_url.clone(),
    })
    .await?;
    let api = Api {
        http: reqwest::Client::new(),
        base: stack.gateway_urls()[0].clone(),
        token: stack.admin_token.clone(),
    };
    let mut out = String::new();
    let result = async {
        // 1. Ingestion.
        let base = api.create_base("ingest").await?;
        let watch = ProcWatch::start(&stack.pids());
        let t = Instant::now();
        let first = add_documents(&api, &base, o.docs, SECTIONS_SMALL, 1).await?;
        let uploaded = t.elapsed();
        let chunks = api.settled(&base, Duration::from_secs(1800)).await?;
        let took = t.elapsed().as_secs_f64();
        let usage = watch.finish();
        if let Err(e) = check_vectors(&api, &base, &first).await {
            let seen = match stack.database_url() {
                Some(url) => nearest_in_the_database(url, &base, &first)
                    .await
                    .unwrap_or_else(|e| format!("(the database's view failed: {e})")),
                None => String::new(),
            };
            bail!("{e:#}\n{seen}");
        }
        if let Some(url) = stack.database_url()
            && let Some(recall) = index_recall(url, &base, 100, 120).await?
        {
            let _ = writeln!(out, "{}", recall.row(format_args!("{chunks} (ingested)")));
        }
        let _ = writeln!(
            out,
            "| ingestion | {} documents, {chunks} chunks | {:.1} files/s, {:.0} chunks/s ({took:.1} s; uploads took {:.1} s) | {} |",
            o.docs,
            o.docs as f64 / took,
            chunks as f64 / took,
            uploaded.as_secs_f64(),
            usage
                .iter()
                .map(|u| format!("{}: RSS peak {:.0} MiB, CPU {:.1} s", u.name, u.rss_peak_mib, u.cpu_s))
                .collect::<Vec<_>>()
                .join("; ")
        );
        // 2. Search at each size.
        let search = api.create_base("search").await?;
        let mut have = 0u64;
        let mut seed = 100;
        for &size in &o.sizes {
            // Filled with the embedding model on: the lexical searches of the
            // size before switched it off, and documents ingested then have no
            // vectors (which once made the largest size's vector figures those
            // of the size before: the same recall, to three places, at both).
            std::fs::write(&file, config(&llm.openai_base_url(), true))?;
            api.reload().await?;
            let per_doc = SECTIONS_LONG as u64;
            while have < size as u64 {
                let need = ((size as u64 - have).div_ceil(per_doc)).min(500) as usize;
                add_documents(&api, &search, need, SECTIONS_LONG, seed).await?;
                seed += 1;
                have = api.settled(&search, Duration::from_secs(3600)).await?;
            }
            if let Some(url) = stack.database_url() {
                let store = Store::connect_with(url, 1).await?;
                let vectors = store.knowledge_vector_count(&search, "mock-embed").await?;
                if vectors != have {
                    bail!("{vectors} of the base's {have} chunks have vectors");
                }
            }
            let t = Instant::now();
            let (_, first_mode) = searches(&api, &search, 1, 1).await?;
            let first = t.elapsed();
            let (hybrid, mode) = searches(&api, &search, o.queries, 2).await?;
            if mode != "hybrid" || first_mode != "hybrid" {
                bail!("the search was {mode}, not hybrid");
            }
            std::fs::write(&file, config(&llm.openai_base_url(), false))?;
            api.reload().await?;
            let (lexical, mode) = searches(&api, &search, o.queries, 2).await?;
            if mode != "lexical" {
                bail!("the search was {mode}, not lexical");
            }
            // Short queries (what people type) and long ones (a paragraph).
            for words in [3, 12, 120] {
                if let Some(url) = stack.database_url()
                    && let Some(recall) =
                        index_recall(url, &search, o.queries.min(100), words).await?
                {
                    let _ = writeln!(out, "{}", recall.row(have));
                }
            }
            let _ = writeln!(
                out,
                "| search | {have} chunks | hybrid p50 {:.1} ms, p99 {:.1} ms (first search, making the process's copies of its index and vectors: {:.0} ms); lexical p50 {:.1} ms, p99 {:.1} ms | {} queries each |",
                hybrid.p50,
                hybrid.p99,
                first.as_secs_f64() * 1000.0,
                lexical.p50,
                lexical.p99,
                o.queries
            );
        }
        // 3. Auto mode's cost on the first token (lexical, the largest base).
        let tool = first_tokens(&api, "kb-tool", o.runs).await?;
        let auto = first_tokens(&api, "kb-auto", o.runs).await?;
        let _ = writeln!(
            out,
            "| auto mode | {have} chunks, lexical | first token p50 {:.1} ms with `auto` against {:.1} ms with `tool`: {:+.1} ms (p99 {:.1} / {:.1}) | {} runs each |",
            auto.p50,
            tool.p50,
            auto.p50 - tool.p50,
            auto.p99,
            tool.p99,
            o.runs
        );
        anyhow::Ok(())
    }
    .await;
    stack.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
    result?;
    Ok(out)
}

pub async fn run_knowledge(o: KnowledgeOpts) -> anyhow::Result<()> {
    let mut report = String::from("| what | size | measured | notes |\n|---|---|---|---|\n");
    for &mode in &o.modes {
        eprintln!("knowledge bench: {}", mode.name());
        let rows = one_mode(&o, mode).await?;
        for line in rows.lines() {
            let _ = writeln!(
                report,
                "| {} {}",
                mode.name(),
                line.trim_start_matches("| ")
            );
        }
    }
    std::fs::write(&o.out, &report)?;
    println!("{report}");
    Ok(())
}

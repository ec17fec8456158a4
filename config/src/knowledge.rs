//! `[knowledge]`: knowledge bases — document limits, chunk sizes and search
//! (docs/knowledge.md).

use serde::{Deserialize, Serialize};

/// Knowledge base settings (`[knowledge]`, env `WEFT_KNOWLEDGE__<KEY>`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct KnowledgeConfig {
    /// Largest document one upload may add (50 MiB); larger ones are refused
    /// with 413 naming this limit.
    pub max_document_bytes: u64,
    /// Most documents one base may hold; past it uploads are refused with 413.
    pub max_documents_per_base: u64,
    /// Target size of a chunk, in estimated tokens.
    pub chunk_tokens: u64,
    /// Tokens a chunk repeats from the one before it in the same section.
    pub chunk_overlap_tokens: u64,
    /// Chunks on each side of a hit that come with it to the model.
    pub neighbours: u32,
    /// Results a search returns when the caller does not say.
    pub default_top_k: u32,
    /// `knowledge_mode = "auto"`: the most tokens of passages put in the
    /// context before the model is called (best first; a passage that does
    /// not fit is left out).
    pub auto_budget_tokens: u64,
    /// The `[[embedding_models]]` entry (by `id`) whose vectors search uses
    /// beside the lexical index; unset with exactly one entry: that one;
    /// unset with none: lexical search only.
    pub embedding_model: Option<String>,
    /// Memory each process gives to its copies of the bases it searches: their
    /// lexical indexes (ranked in memory; a base too large for this is searched
    /// in the database) and, where the database has no vector index (SQLite,
    /// Postgres without pgvector), their vectors for exact search. The least
    /// recently searched go first.
    pub cache_mib: u64,
}

/// One `[[embedding_models]]` entry: an OpenAI-compatible `/v1/embeddings`
/// endpoint (OpenAI, Ollama, vLLM, TEI …).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EmbeddingModelConfig {
    pub id: String,
    /// `openai` (the wire; any compatible server).
    #[serde(default = "openai")]
    pub provider: String,
    /// Default `https://api.openai.com/v1`.
    pub base_url: Option<String>,
    /// Name of the environment variable holding the API key.
    pub api_key_env: Option<String>,
    /// Provider-side model name, when it differs from `id`.
    pub model: Option<String>,
    /// Vector size asked of the provider (OpenAI's `dimensions`); default the
    /// model's own.
    pub dimensions: Option<u32>,
    /// Texts per request (default 64).
    #[serde(default = "batch_size")]
    pub batch_size: u32,
    /// Cosine similarity below which a chunk is not a vector match (default
    /// 0.3): the nearest chunks of an unrelated query are still unrelated.
    #[serde(default = "min_similarity")]
    pub min_similarity: f64,
}

fn min_similarity() -> f64 {
    0.3
}

fn openai() -> String {
    "openai".into()
}

fn batch_size() -> u32 {
    64
}

impl EmbeddingModelConfig {
    /// The provider's name for the model: what vectors are stored under, so
    /// vectors of another model are never compared with its.
    pub fn model_name(&self) -> &str {
        self.model.as_deref().unwrap_or(&self.id)
    }
}

impl Default for KnowledgeConfig {
    fn default() -> Self {
        KnowledgeConfig {
            max_document_bytes: 50 << 20,
            max_documents_per_base: 10_000,
            chunk_tokens: 400,
            chunk_overlap_tokens: 60,
            neighbours: 1,
            default_top_k: 5,
            auto_budget_tokens: 1500,
            embedding_model: None,
            cache_mib: 512,
        }
    }
}

/// Base names: 1–64 characters of letters, digits, spaces and `-_.`, not
/// starting or ending with a space (they are typed in `/kb use NAME` and
/// `weft knowledge add NAME`).
pub fn valid_base_name(name: &str) -> bool {
    let count = name.chars().count();
    (1..=64).contains(&count)
        && name.trim() == name
        && name
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_' | '.'))
}

/// The most results one search may ask for.
pub const MAX_TOP_K: u32 = 50;

impl KnowledgeConfig {
    /// The embedding model search and ingestion use, if any.
    pub fn embedder<'a>(
        &self,
        models: &'a [EmbeddingModelConfig],
    ) -> Option<&'a EmbeddingModelConfig> {
        match &self.embedding_model {
            Some(id) => models.iter().find(|m| &m.id == id),
            None if models.len() == 1 => models.first(),
            None => None,
        }
    }

    pub fn validate_embeddings(&self, models: &[EmbeddingModelConfig]) -> Result<(), String> {
        for (i, m) in models.iter().enumerate() {
            if m.id.is_empty() || models[..i].iter().any(|o| o.id == m.id) {
                return Err(format!(
                    "embedding_models: {:?}: ids must be set and unique",
                    m.id
                ));
            }
            if m.provider != "openai" {
                return Err(format!(
                    "embedding_models: {:?}: provider {:?} is not known (\"openai\": any OpenAI-compatible /v1/embeddings)",
                    m.id, m.provider
                ));
            }
            if m.dimensions.is_some_and(|d| !(1..=8192).contains(&d)) {
                return Err(format!(
                    "embedding_models: {:?}: dimensions must be 1 to 8192",
                    m.id
                ));
            }
            if !(-1.0..=1.0).contains(&m.min_similarity) {
                return Err(format!(
                    "embedding_models: {:?}: min_similarity must be -1 to 1",
                    m.id
                ));
            }
            if !(1..=2048).contains(&m.batch_size) {
                return Err(format!(
                    "embedding_models: {:?}: batch_size must be 1 to 2048",
                    m.id
                ));
            }
        }
        if let Some(id) = &self.embedding_model
            && !models.iter().any(|m| &m.id == id)
        {
            return Err(format!(
                "knowledge.embedding_model {id:?} is not an [[embedding_models]] id"
            ));
        }
        if self.embedding_model.is_none() && models.len() > 1 {
            return Err(
                "several [[embedding_models]]: say which one search uses (knowledge.embedding_model)"
                    .into(),
            );
        }
        Ok(())
    }

    pub fn validate(&self) -> Result<(), String> {
        if self.max_document_bytes == 0 || self.max_documents_per_base == 0 {
            return Err(
                "knowledge.max_document_bytes and max_documents_per_base must be at least 1".into(),
            );
        }
        if !(32..=8192).contains(&self.chunk_tokens) {
            return Err("knowledge.chunk_tokens must be between 32 and 8192".into());
        }
        if self.chunk_overlap_tokens * 2 > self.chunk_tokens {
            return Err(
                "knowledge.chunk_overlap_tokens must be at most half of chunk_tokens".into(),
            );
        }
        if self.neighbours > 5 {
            return Err("knowledge.neighbours must be at most 5".into());
        }
        if !(1..=MAX_TOP_K).contains(&self.default_top_k) {
            return Err(format!(
                "knowledge.default_top_k must be between 1 and {MAX_TOP_K}"
            ));
        }
        Ok(())
    }
}

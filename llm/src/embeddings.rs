//! Embeddings over OpenAI's `POST /v1/embeddings` wire — the one most servers
//! speak (OpenAI, Ollama, vLLM, Hugging Face TEI, LiteLLM …): `{model, input:
//! [texts], dimensions?}` in, `{data: [{index, embedding}]}` out.
//!
//! [`Embedder::embed`] takes any number of texts and sends them in batches of
//! `batch_size` (at most two requests in flight: enough to hide a round trip,
//! few enough not to trip a provider's rate limit on one document). A batch
//! that fails transiently (429, 5xx, a timeout, a refused connection) is tried
//! again on the same backoff as a chat step ([`crate::retry`]: 0.5 s doubling
//! to 8 s, or the server's `retry-after` up to 2 min), at most `retries` times;
//! the error that is left is [`LlmError::Transient`] or [`LlmError::Fatal`] as
//! for a chat call, so the caller decides between waiting and giving up.
//!
//! Vectors come back L2-normalised: a dot product is then the cosine
//! similarity, whatever the provider does (OpenAI normalises, others do not).

use std::time::Duration;

use serde::Deserialize;
use serde_json::json;

use crate::LlmError;
use crate::classify::classify_response;

/// Requests of one [`Embedder::embed`] call in flight at once.
const IN_FLIGHT: usize = 2;

/// Where and how to embed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmbedderConfig {
    /// e.g. `https://api.openai.com/v1` (`/embeddings` is appended).
    pub base_url: String,
    pub api_key: Option<String>,
    /// The provider's model name.
    pub model: String,
    /// Asked of the provider when set (OpenAI's `text-embedding-3-*` shorten
    /// their vectors to it); otherwise the model's own size.
    pub dimensions: Option<u32>,
    /// Texts per request.
    pub batch_size: usize,
    /// Retries of one batch after a transient failure.
    pub retries: u32,
    /// Bound on one request, from connect to the last byte.
    pub timeout: Duration,
}

/// An embedding model behind an OpenAI-compatible endpoint.
#[derive(Debug, Clone)]
pub struct Embedder {
    config: EmbedderConfig,
    http: reqwest::Client,
}

#[derive(Deserialize)]
struct Response {
    data: Vec<Item>,
}

#[derive(Deserialize)]
struct Item {
    index: usize,
    embedding: Vec<f32>,
}

impl Embedder {
    pub fn new(config: EmbedderConfig) -> Embedder {
        Embedder {
            http: crate::http_client(Duration::from_secs(5)),
            config,
        }
    }

    pub fn config(&self) -> &EmbedderConfig {
        &self.config
    }

    /// The same model, tried once within `timeout` (a search a person waits
    /// for falls back rather than retries).
    pub fn without_retries(mut self, timeout: Duration) -> Embedder {
        self.config.retries = 0;
        self.config.timeout = timeout;
        self
    }

    /// One unit vector per text, in order.
    pub async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, LlmError> {
        let size = self.config.batch_size.max(1);
        let mut out = Vec::with_capacity(texts.len());
        for group in texts.chunks(size * IN_FLIGHT) {
            let batches = group.chunks(size).map(|batch| self.batch_retried(batch));
            for vectors in futures::future::try_join_all(batches).await? {
                out.extend(vectors);
            }
        }
        Ok(out)
    }

    async fn batch_retried(&self, batch: &[String]) -> Result<Vec<Vec<f32>>, LlmError> {
        let mut retry = 0;
        loop {
            match self.batch(batch).await {
                Ok(vectors) => return Ok(vectors),
                Err(e) => {
                    let delay = (retry < self.config.retries)
                        .then(|| crate::retry::delay_for(&e, retry))
                        .flatten();
                    match delay {
                        Some(delay) => tokio::time::sleep(delay).await,
                        None => return Err(e),
                    }
                    retry += 1;
                }
            }
        }
    }

    async fn batch(&self, batch: &[String]) -> Result<Vec<Vec<f32>>, LlmError> {
        let mut body = json!({
            "model": self.config.model,
            "input": batch,
            "encoding_format": "float",
        });
        if let Some(dimensions) = self.config.dimensions {
            body["dimensions"] = json!(dimensions);
        }
        let url = format!("{}/embeddings", self.config.base_url.trim_end_matches('/'));
        let mut req = self.http.post(url).timeout(self.config.timeout).json(&body);
        if let Some(key) = &self.config.api_key {
            req = req.bearer_auth(key);
        }
        let transient = |e: reqwest::Error| LlmError::Transient {
            reason: format!("embeddings: {e}"),
            retry_after: None,
        };
        let resp = req.send().await.map_err(transient)?;
        let status = resp.status();
        let headers = resp.headers().clone();
        let bytes = resp.bytes().await.map_err(transient)?;
        if !status.is_success() {
            let text = String::from_utf8_lossy(&bytes);
            let reason = serde_json::from_slice::<serde_json::Value>(&bytes)
                .ok()
                .and_then(|v| v["error"]["message"].as_str().map(str::to_string))
                .unwrap_or_else(|| text.chars().take(300).collect());
            return Err(classify_response(
                status.as_u16(),
                &headers,
                &format!("embeddings: {reason}"),
            ));
        }
        let malformed = |why: String| LlmError::Fatal {
            reason: format!("embeddings: {why}"),
            status: None,
        };
        let mut parsed: Response = serde_json::from_slice(&bytes)
            .map_err(|e| malformed(format!("an answer that is not the embeddings wire: {e}")))?;
        if parsed.data.len() != batch.len() {
            return Err(malformed(format!(
                "{} vectors for {} texts",
                parsed.data.len(),
                batch.len()
            )));
        }
        parsed.data.sort_by_key(|item| item.index);
        let dims = parsed.data[0].embedding.len();
        let mut out = Vec::with_capacity(batch.len());
        for (i, item) in parsed.data.into_iter().enumerate() {
            if item.index != i || item.embedding.len() != dims || dims == 0 {
                return Err(malformed(
                    "vectors missing, repeated or of different sizes".into(),
                ));
            }
            out.push(normalised(item.embedding));
        }
        Ok(out)
    }
}

/// `v` scaled to length 1 (a zero vector stays zero).
pub fn normalised(mut v: Vec<f32>) -> Vec<f32> {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 && norm.is_finite() {
        v.iter_mut().for_each(|x| *x /= norm);
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalised_vectors_have_length_one() {
        let v = normalised(vec![3.0, 4.0]);
        assert!((v[0] - 0.6).abs() < 1e-6 && (v[1] - 0.8).abs() < 1e-6);
        assert_eq!(normalised(vec![0.0, 0.0]), vec![0.0, 0.0]);
    }
}

//! `POST /v1/embeddings` on OpenAI's wire, deterministic, so retrieval with
//! vectors is testable without a network: a text's vector sums its character
//! trigrams (of each lower-cased word padded with spaces, so "password" and
//! "passwords" share most) hashed into `dimensions` buckets (256 unless the
//! request says), each trigram adding +1 or −1 by another bit of its hash,
//! L2-normalised. Texts that share words or word pieces get near vectors,
//! unrelated ones nearly orthogonal ones — the property a test of hybrid
//! search needs, not a model's meaning.
//!
//! The sign matters. Counts alone put every vector in the positive orthant:
//! two unrelated texts of 120 random words shared a cosine of 0.76 on
//! average, and a text's garbled copy (every word's last letter changed)
//! reached 0.85 with its original and 0.75 with the nearest other text; with
//! the sign the same figures are 0.14, 0.51 and 0.22, as a real model spreads
//! texts out. Texts of one small alphabet stay alike all the same: the
//! chunks of `weft-loadtest knowledge`'s pseudo-language (24 syllables) share
//! 0.43 with the sign, which is what made pgvector's default `ef_search` of 40
//! miss a nearest chunk (see `store/src/knowledge/vectors.rs`).
//!
//! Like OpenAI it answers floats, or base64 of little-endian f32 when
//! `encoding_format` is `base64` (what the official Python SDK asks for by
//! default, and decodes). Checked with that SDK (`sdk_check/openai_check.py`).

use axum::body::Bytes;
use axum::response::{IntoResponse, Response};
use base64::Engine;
use serde::Deserialize;
use serde_json::{Value, json};

use super::openai_wire::ApiError;

const DEFAULT_DIMENSIONS: usize = 256;
const MAX_DIMENSIONS: usize = 4096;
/// OpenAI's limit of inputs per request.
const MAX_INPUTS: usize = 2048;

#[derive(Deserialize)]
#[serde(untagged)]
enum Input {
    One(String),
    Many(Vec<String>),
}

#[derive(Deserialize)]
struct EmbeddingRequest {
    input: Value,
    model: String,
    #[serde(default)]
    encoding_format: Option<String>,
    #[serde(default)]
    dimensions: Option<usize>,
}

/// The mock's vector of `text`.
pub fn embed(text: &str, dimensions: usize) -> Vec<f32> {
    let mut v = vec![0f32; dimensions];
    for word in text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        let padded: Vec<char> = format!(" {} ", word.to_lowercase()).chars().collect();
        for gram in padded.windows(3) {
            let mut h: u64 = 0xcbf2_9ce4_8422_2325;
            for c in gram {
                h ^= u64::from(*c as u32);
                h = h.wrapping_mul(0x0100_0000_01b3);
            }
            // The bucket from the low bits, the sign from the top one.
            let sign = if h >> 63 == 1 { -1.0 } else { 1.0 };
            v[(h % dimensions as u64) as usize] += sign;
        }
    }
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
    v
}

pub(super) async fn embeddings(body: Bytes) -> Response {
    match respond(&body) {
        Ok(v) => axum::Json(v).into_response(),
        Err(e) => e.into_response(),
    }
}

fn respond(body: &[u8]) -> Result<Value, ApiError> {
    let req: EmbeddingRequest = serde_json::from_slice(body).map_err(|e| {
        ApiError::bad_request(
            format!("We could not parse the JSON body of your request: {e}"),
            None,
        )
    })?;
    let inputs = match serde_json::from_value::<Input>(req.input) {
        Ok(Input::One(s)) => vec![s],
        Ok(Input::Many(v)) => v,
        Err(_) => {
            return Err(ApiError::bad_request(
                "'input' must be a string or an array of strings (the mock takes no token arrays)",
                Some("input"),
            ));
        }
    };
    if inputs.is_empty() || inputs.len() > MAX_INPUTS || inputs.iter().any(String::is_empty) {
        return Err(ApiError::bad_request(
            format!("'input' must hold 1 to {MAX_INPUTS} non-empty strings"),
            Some("input"),
        ));
    }
    let dimensions = req.dimensions.unwrap_or(DEFAULT_DIMENSIONS);
    if !(1..=MAX_DIMENSIONS).contains(&dimensions) {
        return Err(ApiError::bad_request(
            format!("'dimensions' must be between 1 and {MAX_DIMENSIONS}"),
            Some("dimensions"),
        ));
    }
    let base64 = match req.encoding_format.as_deref() {
        None | Some("float") => false,
        Some("base64") => true,
        Some(other) => {
            return Err(ApiError::bad_request(
                format!("'encoding_format' must be 'float' or 'base64', not {other:?}"),
                Some("encoding_format"),
            ));
        }
    };
    let mut tokens = 0;
    let data: Vec<Value> = inputs
        .iter()
        .enumerate()
        .map(|(index, text)| {
            tokens += weft_llm::tokens::estimate(text);
            let v = embed(text, dimensions);
            let embedding = if base64 {
                let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
                json!(base64::engine::general_purpose::STANDARD.encode(bytes))
            } else {
                json!(v)
            };
            json!({"object": "embedding", "index": index, "embedding": embedding})
        })
        .collect();
    Ok(json!({
        "object": "list",
        "data": data,
        "model": req.model,
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    }))
}

#[cfg(test)]
mod tests {
    use super::embed;

    fn cosine(a: &[f32], b: &[f32]) -> f32 {
        a.iter().zip(b).map(|(x, y)| x * y).sum()
    }

    #[test]
    fn shared_words_are_near_and_unrelated_texts_far() {
        let q = embed("How do I reset my password?", 256);
        let near = embed("Resetting a forgotten password", 256);
        let far = embed("The cafeteria opens at noon", 256);
        assert!((cosine(&q, &q) - 1.0).abs() < 1e-5);
        assert!(cosine(&q, &near) > 0.3, "{}", cosine(&q, &near));
        assert!(cosine(&q, &near) > 2.0 * cosine(&q, &far));
        assert_eq!(embed("same text", 64), embed("same text", 64));
        assert!(embed("!!!", 8).iter().all(|x| *x == 0.0));
    }

    /// Long unrelated texts are spread out (an approximate index needs it),
    /// and a garbled copy is still nearest its original.
    #[test]
    fn long_unrelated_texts_are_spread_out() {
        let mut seed = 7u64;
        let mut next = move || {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            (seed >> 33) as usize
        };
        let vocab: Vec<String> = (0..4000)
            .map(|_| {
                (0..4 + next() % 6)
                    .map(|_| char::from(b'a' + (next() % 23) as u8))
                    .collect()
            })
            .collect();
        let texts: Vec<String> = (0..40)
            .map(|_| {
                (0..120)
                    .map(|_| vocab[next() % vocab.len()].as_str())
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect();
        let vectors: Vec<Vec<f32>> = texts.iter().map(|t| embed(t, 256)).collect();
        let mut sum = 0.0;
        let mut pairs = 0.0;
        for i in 0..vectors.len() {
            for j in i + 1..vectors.len() {
                sum += cosine(&vectors[i], &vectors[j]);
                pairs += 1.0;
            }
        }
        assert!(sum / pairs < 0.3, "mean cosine {}", sum / pairs);
        let garbled: Vec<String> = texts[0]
            .split(' ')
            .map(|w| format!("{}x", &w[..w.len() - 1]))
            .collect();
        let g = embed(&garbled.join(" "), 256);
        let own = cosine(&g, &vectors[0]);
        let other = vectors[1..]
            .iter()
            .map(|v| cosine(&g, v))
            .fold(f32::MIN, f32::max);
        assert!(own > other + 0.15, "own {own}, nearest other {other}");
    }
}

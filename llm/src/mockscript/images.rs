//! `@mock.describe_images`: the reply says what images the model received, so a test
//! on the far side of a provider, a wire format and an SDK can check that the bytes
//! arrived whole and in order.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use sha2::{Digest, Sha256};

use crate::Image;

/// One line per image, `image <n>: <mime>, <decoded byte count> bytes, sha256 <hex>`
/// (numbered from 1, joined by newlines); `image <n>: <mime>, not valid base64` when
/// the data is not standard padded base64; `no images` when there are none.
pub fn describe_images(images: &[Image]) -> String {
    if images.is_empty() {
        return "no images".into();
    }
    images
        .iter()
        .enumerate()
        .map(|(i, image)| {
            let n = i + 1;
            match STANDARD.decode(image.data.as_bytes()) {
                Ok(bytes) => format!(
                    "image {n}: {}, {} bytes, sha256 {}",
                    image.mime,
                    bytes.len(),
                    hex::encode(Sha256::digest(&bytes))
                ),
                Err(_) => format!("image {n}: {}, not valid base64", image.mime),
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

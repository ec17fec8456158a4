//! The `pbbp2.Frame` wire format of the Lark long connection.
//!
//! Every WebSocket binary message is one proto2 `Frame`. Fields 1–4 are `required`:
//! the official SDKs always write them, even when zero, and the gogo decoder behind
//! the server rejects a frame without them. Plain proto3-style prost would drop a
//! zero `SeqID`/`LogID`/`method`, so the structs below are hand-derived with prost's
//! `required` label, which always encodes the field. prost does not *check* required
//! fields on decode, so [`Frame::decode_strict`] scans the raw bytes for them — the
//! fake server uses it to behave like the real one.

use prost::Message;

/// `method` of a control frame (ping/pong).
pub const METHOD_CONTROL: i32 = 0;
/// `method` of a data frame (event/card).
pub const METHOD_DATA: i32 = 1;

/// Header keys used by the protocol (see the Go SDK `ws/const.go`).
pub mod header {
    pub const TYPE: &str = "type";
    pub const MESSAGE_ID: &str = "message_id";
    pub const SUM: &str = "sum";
    pub const SEQ: &str = "seq";
    pub const TRACE_ID: &str = "trace_id";
    pub const TIMESTAMP: &str = "timestamp";
    pub const INSTANCE_ID: &str = "instance_id";
    pub const BIZ_RT: &str = "biz_rt";
}

/// Values of the `type` header.
pub mod kind {
    pub const EVENT: &str = "event";
    pub const CARD: &str = "card";
    pub const PING: &str = "ping";
    pub const PONG: &str = "pong";
}

/// `pbbp2.Header`: one key/value pair, both required.
#[derive(Clone, PartialEq, Eq, Message)]
pub struct Header {
    #[prost(string, required, tag = "1")]
    pub key: String,
    #[prost(string, required, tag = "2")]
    pub value: String,
}

/// `pbbp2.Frame`.
#[derive(Clone, PartialEq, Message)]
pub struct Frame {
    #[prost(uint64, required, tag = "1")]
    pub seq_id: u64,
    #[prost(uint64, required, tag = "2")]
    pub log_id: u64,
    #[prost(int32, required, tag = "3")]
    pub service: i32,
    #[prost(int32, required, tag = "4")]
    pub method: i32,
    #[prost(message, repeated, tag = "5")]
    pub headers: Vec<Header>,
    #[prost(string, optional, tag = "6")]
    pub payload_encoding: Option<String>,
    #[prost(string, optional, tag = "7")]
    pub payload_type: Option<String>,
    #[prost(bytes = "vec", optional, tag = "8")]
    pub payload: Option<Vec<u8>>,
    #[prost(string, optional, tag = "9")]
    pub log_id_new: Option<String>,
}

/// Why a frame could not be decoded.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    #[error("malformed protobuf: {0}")]
    Malformed(#[from] prost::DecodeError),
    #[error("required field {field} missing from {message}")]
    MissingRequired { message: &'static str, field: u32 },
    #[error("truncated protobuf")]
    Truncated,
}

impl Frame {
    /// A client ping: `SeqID=0, LogID=0, method=0`, header `type=ping`.
    pub fn ping(service: i32) -> Self {
        Self {
            service,
            method: METHOD_CONTROL,
            headers: vec![Header::new(header::TYPE, kind::PING)],
            ..Self::default()
        }
    }

    /// The value of header `key`, if present.
    pub fn header(&self, key: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|h| h.key == key)
            .map(|h| h.value.as_str())
    }

    /// Sets header `key`, replacing an existing value.
    pub fn set_header(&mut self, key: &str, value: impl Into<String>) {
        let value = value.into();
        match self.headers.iter_mut().find(|h| h.key == key) {
            Some(h) => h.value = value,
            None => self.headers.push(Header::new(key, value)),
        }
    }

    /// The `type` header, or `""`.
    pub fn kind(&self) -> &str {
        self.header(header::TYPE).unwrap_or("")
    }

    pub fn payload_bytes(&self) -> &[u8] {
        self.payload.as_deref().unwrap_or(&[])
    }

    pub fn encode_vec(&self) -> Vec<u8> {
        self.encode_to_vec()
    }

    /// Lenient decode, as the SDK clients do.
    pub fn decode_lenient(bytes: &[u8]) -> Result<Self, FrameError> {
        Ok(Self::decode(bytes)?)
    }

    /// Decode like gogo's generated `Unmarshal`: missing required fields are errors.
    pub fn decode_strict(bytes: &[u8]) -> Result<Self, FrameError> {
        let seen = scan_tags(bytes)?;
        for field in 1..=4 {
            if !seen.top.contains(&field) {
                return Err(FrameError::MissingRequired {
                    message: "Frame",
                    field,
                });
            }
        }
        for header in &seen.headers {
            for field in 1..=2 {
                if !header.contains(&field) {
                    return Err(FrameError::MissingRequired {
                        message: "Header",
                        field,
                    });
                }
            }
        }
        Ok(Self::decode(bytes)?)
    }
}

impl Header {
    pub fn new(key: impl Into<String>, value: impl Into<String>) -> Self {
        Self {
            key: key.into(),
            value: value.into(),
        }
    }
}

struct SeenTags {
    top: Vec<u32>,
    headers: Vec<Vec<u32>>,
}

fn scan_tags(bytes: &[u8]) -> Result<SeenTags, FrameError> {
    let mut seen = SeenTags {
        top: Vec::new(),
        headers: Vec::new(),
    };
    for (tag, body) in fields(bytes)? {
        seen.top.push(tag);
        if tag == 5 {
            let body = body.ok_or(FrameError::Truncated)?;
            seen.headers
                .push(fields(body)?.into_iter().map(|(t, _)| t).collect());
        }
    }
    Ok(seen)
}

/// Walks one level of protobuf fields: `(tag, Some(bytes))` for length-delimited ones.
/// `(tag, body of a length-delimited field)`.
type Field<'a> = (u32, Option<&'a [u8]>);

fn fields(mut buf: &[u8]) -> Result<Vec<Field<'_>>, FrameError> {
    let mut out = Vec::new();
    while !buf.is_empty() {
        let key = read_varint(&mut buf)?;
        let tag = (key >> 3) as u32;
        match key & 7 {
            0 => {
                read_varint(&mut buf)?;
                out.push((tag, None));
            }
            1 => {
                buf = buf.get(8..).ok_or(FrameError::Truncated)?;
                out.push((tag, None));
            }
            2 => {
                let len = read_varint(&mut buf)? as usize;
                let body = buf.get(..len).ok_or(FrameError::Truncated)?;
                buf = &buf[len..];
                out.push((tag, Some(body)));
            }
            5 => {
                buf = buf.get(4..).ok_or(FrameError::Truncated)?;
                out.push((tag, None));
            }
            _ => return Err(FrameError::Truncated),
        }
    }
    Ok(out)
}

fn read_varint(buf: &mut &[u8]) -> Result<u64, FrameError> {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let (&byte, rest) = buf.split_first().ok_or(FrameError::Truncated)?;
        *buf = rest;
        value |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Ok(value);
        }
    }
    Err(FrameError::Truncated)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ping_writes_zero_required_fields() {
        let bytes = Frame::ping(0).encode_vec();
        // SeqID=0 (08 00), LogID=0 (10 00), service=0 (18 00), method=0 (20 00) first.
        assert_eq!(&bytes[..8], &[0x08, 0, 0x10, 0, 0x18, 0, 0x20, 0]);
        let back = Frame::decode_strict(&bytes).unwrap();
        assert_eq!(back.kind(), kind::PING);
    }

    #[test]
    fn strict_decode_rejects_missing_method() {
        // SeqID=1, LogID=1, service=1, no method.
        let bytes = [0x08, 1, 0x10, 1, 0x18, 1];
        assert!(matches!(
            Frame::decode_strict(&bytes),
            Err(FrameError::MissingRequired { field: 4, .. })
        ));
        assert!(Frame::decode_lenient(&bytes).is_ok());
    }
}

//! weft-knowledge: the pure part of knowledge bases — how a document's text
//! becomes chunks that each know their place ([`chunk`]), how text becomes the
//! words of the lexical index in any script ([`segment`]), and how ranked lists
//! from several indexes become one ([`fuse`]). No database, no model, no I/O:
//! the store keeps what this produces and the worker's ingestion job drives it.

pub mod chunk;
pub mod fuse;
pub mod segment;

pub use chunk::{Chunk, ChunkOptions, chunk};

//! weft-knowledge: knowledge bases below the API. The pure part — how a
//! document's text becomes chunks that each know their place ([`chunk`]), how
//! text becomes the words of the lexical index in any script ([`segment`]),
//! how ranked lists from several indexes become one ([`fuse`]), and the
//! in-memory BM25 index a process keeps of a base ([`lexical`]) — needs no
//! database, model or I/O. [`retrieve`] is the one search over the store that
//! the API, the tool and `knowledge_mode = "auto"` share: lexical, plus
//! vectors when an embedding model is configured, fused.

pub mod chunk;
pub mod fuse;
pub mod lexical;
pub mod recall;
pub mod retrieve;
pub mod segment;

pub use chunk::{Chunk, ChunkOptions, chunk};
pub use retrieve::{Retrieved, Retriever, SearchMode};

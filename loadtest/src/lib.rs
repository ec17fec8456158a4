//! weft-loadtest: the tools that measure Weft and the fakes it is measured against.
//!
//! For now this is the mock LLM server ([`mock_llm`]): an OpenAI- (and later
//! Anthropic-) compatible HTTP server scripted by the same `@mock.*` directives as the
//! in-process `mock` provider, so benchmarks and tests exercise the real HTTP path.

pub mod mock_llm;

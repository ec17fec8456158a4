//! Structure-aware chunks of a document's text (as `weft-files` extracts it:
//! Markdown-like, with `#` headings from HTML, XLSX sheets and PPTX slides,
//! tab-separated table rows, and PDF pages separated by form feeds).
//!
//! A chunk is what a search returns and a citation points at, so it keeps one
//! place: a new heading or a new page starts a new chunk, and every chunk knows
//! its heading path ("Setup > Linux") or page. Within a section, paragraphs,
//! code blocks and tables are packed whole up to `max_tokens`; a block larger
//! than that is cut at sentences (paragraphs) or lines (code, tables), and a
//! sentence or line larger still at characters. A chunk that continues a
//! section begins with the last sentences of the one before, up to
//! `overlap_tokens`, so an answer that straddles the cut is found whole in one.
//!
//! Tokens are counted by the caller's function (the worker passes the same
//! estimate the context window uses), keeping this crate free of any model.

/// How big chunks get.
#[derive(Debug, Clone, Copy)]
pub struct ChunkOptions {
    pub max_tokens: u64,
    pub overlap_tokens: u64,
}

impl Default for ChunkOptions {
    fn default() -> Self {
        ChunkOptions {
            max_tokens: 400,
            overlap_tokens: 60,
        }
    }
}

/// One chunk of a document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk {
    pub text: String,
    /// The headings above it, outermost first, joined by " > " (may be empty).
    pub heading: String,
    /// Its page (1-based), for paged documents (PDFs).
    pub page: Option<u32>,
    pub tokens: u64,
}

impl Chunk {
    /// Where it is, for a person: its page in a PDF, else its heading path.
    pub fn position(&self) -> String {
        match self.page {
            Some(page) => format!("page {page}"),
            None => self.heading.clone(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Heading(usize),
    Code,
    Table,
    Paragraph,
}

#[derive(Debug)]
struct Block {
    kind: Kind,
    text: String,
    page: Option<u32>,
}

fn is_fence(line: &str) -> bool {
    let t = line.trim_start();
    t.starts_with("```") || t.starts_with("~~~")
}

fn heading_level(line: &str) -> Option<usize> {
    let hashes = line.bytes().take_while(|b| *b == b'#').count();
    ((1..=6).contains(&hashes) && line[hashes..].starts_with(' ')).then_some(hashes)
}

fn is_table_line(line: &str) -> bool {
    line.trim_start().starts_with('|') || line.contains('\t')
}

/// The blocks of `text`: headings, fenced code, tables, paragraphs.
fn blocks(text: &str, paged: bool) -> Vec<Block> {
    let mut out = Vec::new();
    for (i, page_text) in text.split('\x0c').enumerate() {
        let page = paged.then_some(i as u32 + 1);
        let mut lines: Vec<&str> = Vec::new();
        let mut kind = Kind::Paragraph;
        let mut in_code = false;
        let flush = |lines: &mut Vec<&str>, kind: Kind, out: &mut Vec<Block>| {
            let text = lines.join("\n");
            lines.clear();
            if !text.trim().is_empty() {
                out.push(Block { kind, text, page });
            }
        };
        for line in page_text.lines() {
            if in_code {
                lines.push(line);
                if is_fence(line) {
                    flush(&mut lines, Kind::Code, &mut out);
                    in_code = false;
                }
                continue;
            }
            if is_fence(line) {
                flush(&mut lines, kind, &mut out);
                lines.push(line);
                in_code = true;
                continue;
            }
            if let Some(level) = heading_level(line) {
                flush(&mut lines, kind, &mut out);
                lines.push(line);
                flush(&mut lines, Kind::Heading(level), &mut out);
                kind = Kind::Paragraph;
                continue;
            }
            let this = if line.trim().is_empty() {
                None
            } else if is_table_line(line) {
                Some(Kind::Table)
            } else {
                Some(Kind::Paragraph)
            };
            match this {
                None => flush(&mut lines, kind, &mut out),
                Some(k) => {
                    if k != kind && !lines.is_empty() {
                        flush(&mut lines, kind, &mut out);
                    }
                    kind = k;
                    lines.push(line);
                }
            }
        }
        flush(
            &mut lines,
            if in_code { Kind::Code } else { kind },
            &mut out,
        );
    }
    out
}

/// Sentences of a paragraph, each with its trailing space or line break.
fn sentences(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let end = i + c.len_utf8();
        let cut = match c {
            '。' | '！' | '？' | '\n' => true,
            '.' | '!' | '?' => chars.peek().is_none_or(|(_, n)| n.is_whitespace()),
            _ => false,
        };
        if cut {
            // Take the spaces after it too.
            let mut stop = end;
            while let Some((j, n)) = chars.peek().copied() {
                if n.is_whitespace() && n != '\n' {
                    stop = j + n.len_utf8();
                    chars.next();
                } else {
                    break;
                }
            }
            out.push(&text[start..stop]);
            start = stop;
        }
    }
    if start < text.len() {
        out.push(&text[start..]);
    }
    out
}

/// Cuts `text` into pieces of at most `max` tokens at character boundaries.
fn by_characters(text: &str, max: u64, count: &dyn Fn(&str) -> u64) -> Vec<String> {
    let mut out = Vec::new();
    let mut piece = String::new();
    for c in text.chars() {
        piece.push(c);
        if count(&piece) > max {
            piece.pop();
            if !piece.is_empty() {
                out.push(std::mem::take(&mut piece));
            }
            piece.push(c);
        }
    }
    if !piece.trim().is_empty() {
        out.push(piece);
    }
    out
}

/// A block too big for one chunk, cut into units that each fit.
fn units(block: &Block, max: u64, count: &dyn Fn(&str) -> u64) -> Vec<String> {
    let parts: Vec<&str> = match block.kind {
        Kind::Paragraph => sentences(&block.text),
        _ => block.text.split_inclusive('\n').collect(),
    };
    let mut out: Vec<String> = Vec::new();
    let mut piece = String::new();
    for part in parts {
        if count(part) > max {
            if !piece.is_empty() {
                out.push(std::mem::take(&mut piece));
            }
            out.extend(by_characters(part, max, count));
            continue;
        }
        if !piece.is_empty() && count(&piece) + count(part) > max {
            out.push(std::mem::take(&mut piece));
        }
        piece.push_str(part);
    }
    if !piece.trim().is_empty() {
        out.push(piece);
    }
    out.into_iter()
        .map(|p| p.trim_end().to_owned())
        .filter(|p| !p.is_empty())
        .collect()
}

/// The chunk being filled.
struct Open {
    parts: Vec<(Kind, String)>,
    tokens: u64,
    /// It holds more than its heading line and overlap.
    has_body: bool,
    heading: String,
    page: Option<u32>,
}

impl Open {
    fn new(heading: String, page: Option<u32>) -> Open {
        Open {
            parts: Vec::new(),
            tokens: 0,
            has_body: false,
            heading,
            page,
        }
    }
}

struct Packer<'a> {
    opts: ChunkOptions,
    count: &'a dyn Fn(&str) -> u64,
    out: Vec<Chunk>,
    open: Open,
}

impl Packer<'_> {
    /// Ends the open chunk; the next one starts with `heading` and `page`.
    fn close(&mut self, heading: String, page: Option<u32>) {
        let open = std::mem::replace(&mut self.open, Open::new(heading, page));
        if !open.has_body {
            // Only a heading (a section with no text, or one whose text is
            // under the next heading): it goes with what follows.
            if open.page == self.open.page {
                self.open.parts = open.parts;
                self.open.tokens = open.tokens;
            }
            return;
        }
        let text = open
            .parts
            .iter()
            .map(|(_, t)| t.as_str())
            .collect::<Vec<_>>()
            .join("\n\n");
        let tokens = (self.count)(&text);
        self.out.push(Chunk {
            text,
            heading: open.heading,
            page: open.page,
            tokens,
        });
    }

    /// The last sentences of the open chunk, up to the overlap.
    fn overlap(&self) -> Option<String> {
        let (kind, last) = self.open.parts.last()?;
        if *kind != Kind::Paragraph || self.opts.overlap_tokens == 0 {
            return None;
        }
        let mut tail: Vec<&str> = Vec::new();
        let mut tokens = 0;
        for sentence in sentences(last).into_iter().rev() {
            let t = (self.count)(sentence);
            if tokens + t > self.opts.overlap_tokens {
                break;
            }
            tokens += t;
            tail.push(sentence);
        }
        if tail.is_empty() {
            return None;
        }
        tail.reverse();
        Some(tail.concat().trim().to_owned())
    }

    fn add(&mut self, kind: Kind, text: String) {
        let tokens = (self.count)(&text);
        if self.open.has_body && self.open.tokens + tokens > self.opts.max_tokens {
            let seed = self.overlap();
            let (heading, page) = (self.open.heading.clone(), self.open.page);
            self.close(heading, page);
            if let Some(seed) = seed.filter(|s| (self.count)(s) + tokens <= self.opts.max_tokens) {
                self.open.tokens += (self.count)(&seed);
                self.open.parts.push((Kind::Paragraph, seed));
            }
        }
        self.open.tokens += tokens;
        self.open.parts.push((kind, text));
        self.open.has_body = true;
    }
}

/// The chunks of a document's `text`; `paged` when form feeds separate its
/// pages (PDFs).
pub fn chunk(
    text: &str,
    paged: bool,
    opts: ChunkOptions,
    count: &dyn Fn(&str) -> u64,
) -> Vec<Chunk> {
    let opts = ChunkOptions {
        max_tokens: opts.max_tokens.max(16),
        overlap_tokens: opts.overlap_tokens.min(opts.max_tokens / 2),
    };
    let mut packer = Packer {
        opts,
        count,
        out: Vec::new(),
        open: Open::new(String::new(), if paged { Some(1) } else { None }),
    };
    let mut path: Vec<(usize, String)> = Vec::new();
    for block in blocks(text, paged) {
        if block.page != packer.open.page {
            let heading = packer.open.heading.clone();
            packer.close(heading, block.page);
        }
        if let Kind::Heading(level) = block.kind {
            path.retain(|(l, _)| *l < level);
            let title = block.text[level..].trim().to_owned();
            path.push((level, title));
            let heading = path
                .iter()
                .map(|(_, t)| t.as_str())
                .collect::<Vec<_>>()
                .join(" > ");
            let page = packer.open.page;
            packer.close(heading, page);
            let tokens = count(&block.text);
            packer.open.tokens += tokens;
            packer.open.parts.push((block.kind, block.text));
            continue;
        }
        if count(&block.text) > opts.max_tokens {
            for unit in units(&block, opts.max_tokens, count) {
                packer.add(block.kind, unit);
            }
        } else {
            packer.add(block.kind, block.text);
        }
    }
    let (heading, page) = (packer.open.heading.clone(), packer.open.page);
    packer.close(heading, page);
    packer.out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A word is a token: easy to reason about in tests.
    fn words(s: &str) -> u64 {
        s.split_whitespace().count() as u64
    }

    fn opts(max: u64, overlap: u64) -> ChunkOptions {
        ChunkOptions {
            max_tokens: max,
            overlap_tokens: overlap,
        }
    }

    #[test]
    fn headings_start_chunks_and_give_their_path() {
        let text = "# Guide\nIntro text here.\n\n## Install\nRun the installer.\n\n### Linux\nUse the package.\n\n## Use\nOpen it.";
        let chunks = chunk(text, false, opts(100, 10), &words);
        let got: Vec<(&str, &str)> = chunks
            .iter()
            .map(|c| (c.heading.as_str(), c.text.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("Guide", "# Guide\n\nIntro text here."),
                ("Guide > Install", "## Install\n\nRun the installer."),
                ("Guide > Install > Linux", "### Linux\n\nUse the package."),
                ("Guide > Use", "## Use\n\nOpen it."),
            ]
        );
        assert_eq!(chunks[2].position(), "Guide > Install > Linux");
    }

    #[test]
    fn a_heading_with_nothing_under_it_joins_the_next_section() {
        let chunks = chunk("# Title\n## Part\nBody.", false, opts(100, 0), &words);
        assert_eq!(chunks.len(), 1);
        assert_eq!(chunks[0].text, "# Title\n\n## Part\n\nBody.");
        assert_eq!(chunks[0].heading, "Title > Part");
    }

    #[test]
    fn pages_start_chunks_and_are_the_position() {
        let text = "first page words\x0csecond page words\x0c\x0cfourth";
        let chunks = chunk(text, true, opts(100, 0), &words);
        let pages: Vec<_> = chunks.iter().map(|c| (c.page, c.position())).collect();
        assert_eq!(
            pages,
            [
                (Some(1), "page 1".to_string()),
                (Some(2), "page 2".to_string()),
                (Some(4), "page 4".to_string())
            ]
        );
    }

    #[test]
    fn paragraphs_pack_up_to_the_budget_with_overlap() {
        let para = |n: usize| {
            (0..5)
                .map(|s| format!("P{n} sentence {s} here."))
                .collect::<Vec<_>>()
                .join(" ")
        };
        // Each paragraph: 5 sentences of 4 words = 20 tokens.
        let text = (0..4).map(para).collect::<Vec<_>>().join("\n\n");
        let chunks = chunk(&text, false, opts(45, 8), &words);
        assert!(chunks.iter().all(|c| c.tokens <= 45), "{chunks:#?}");
        // [P0 P1] [end of P1, P2] [end of P2, P3]
        assert_eq!(chunks.len(), 3);
        assert!(chunks[0].text.starts_with("P0 sentence 0"));
        assert!(chunks[2].text.starts_with("P2 sentence 3 here."));
        // The second starts with the end of the first: two 4-word sentences.
        assert!(
            chunks[1]
                .text
                .starts_with("P1 sentence 3 here. P1 sentence 4 here.\n\nP2"),
            "{}",
            chunks[1].text
        );
    }

    #[test]
    fn code_blocks_and_tables_stay_whole_when_they_fit() {
        let text = "Before.\n\n```rust\nfn main() {\n\n    println!(\"hi\");\n}\n```\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\nAfter.";
        let chunks = chunk(text, false, opts(12, 0), &words);
        assert!(
            chunks.iter().any(|c| c
                .text
                .contains("```rust\nfn main() {\n\n    println!(\"hi\");\n}\n```")),
            "the fence, blank line included, stays whole: {chunks:#?}"
        );
        assert!(
            chunks
                .iter()
                .any(|c| c.text.contains("| a | b |\n|---|---|\n| 1 | 2 |")),
            "{chunks:#?}"
        );
    }

    #[test]
    fn oversized_blocks_are_cut_at_sentences_lines_then_characters() {
        let long_para = (0..30)
            .map(|i| format!("Sentence number {i} ends."))
            .collect::<Vec<_>>()
            .join(" ");
        let chunks = chunk(&long_para, false, opts(20, 0), &words);
        assert!(chunks.len() >= 6);
        assert!(chunks.iter().all(|c| c.tokens <= 20));
        assert!(
            chunks.iter().all(|c| c.text.ends_with("ends.")),
            "{chunks:#?}"
        );

        let one_word_per_char = |s: &str| s.chars().count() as u64;
        let cjk = "这是一个很长的句子没有任何标点符号一直写下去".repeat(3);
        let chunks = chunk(&cjk, false, opts(20, 0), &one_word_per_char);
        assert!(chunks.iter().all(|c| c.tokens <= 20), "{chunks:#?}");
        assert_eq!(
            chunks.iter().map(|c| c.text.as_str()).collect::<String>(),
            cjk
        );
    }

    #[test]
    fn chinese_sentences_are_cut_at_their_full_stops() {
        assert_eq!(
            sentences("第一句。第二句！Third one. Fourth"),
            ["第一句。", "第二句！", "Third one. ", "Fourth"]
        );
        assert_eq!(sentences("v2.1 is out."), ["v2.1 is out."]);
    }

    #[test]
    fn empty_text_has_no_chunks() {
        assert!(chunk("", false, opts(100, 10), &words).is_empty());
        assert!(chunk("\n\n  \x0c \n", true, opts(100, 10), &words).is_empty());
    }
}

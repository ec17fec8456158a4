//! The passages a run's tools handed the model, numbered across the run.
//!
//! An answer cites `[1]`, `[2]`; those numbers must mean one passage each for
//! the whole run, whichever search found it, so a second `knowledge_search` in
//! the same run goes on at `[6]` rather than starting again at `[1]`. A tool
//! numbers a passage with [`Sources::number`] and writes the number and the
//! chunk's id into its heading ([`heading`]); the worker turns the `[n]` of the
//! final answer back into chunks ([`cited`], [`Sources::chunk`]).
//!
//! The numbers live in the tool outputs themselves, which are checkpointed with
//! their step: an attempt that resumes a run (another worker, after an
//! approval) learns them back from the outputs it reloads
//! ([`Sources::learn`]), so nothing else has to be stored.

use std::sync::Mutex;

/// The run's numbered passages: `[n]` is the chunk at `n - 1`.
#[derive(Debug, Default)]
pub struct Sources {
    chunks: Mutex<Vec<String>>,
}

impl Sources {
    /// The number `chunk` is cited by, giving it the next one when it is new.
    pub fn number(&self, chunk: &str) -> u32 {
        let mut chunks = self.chunks.lock().expect("sources lock");
        let at = match chunks.iter().position(|c| c == chunk) {
            Some(at) => at,
            None => {
                chunks.push(chunk.to_string());
                chunks.len() - 1
            }
        };
        at as u32 + 1
    }

    /// The chunk `[n]` stands for.
    pub fn chunk(&self, n: u32) -> Option<String> {
        let chunks = self.chunks.lock().expect("sources lock");
        let at = (n as usize).checked_sub(1)?;
        chunks.get(at).filter(|c| !c.is_empty()).cloned()
    }

    /// Learns the numbers an earlier attempt gave, from one of its tool
    /// outputs (the lines [`heading`] wrote).
    pub fn learn(&self, output: &str) {
        let mut chunks = self.chunks.lock().expect("sources lock");
        for (n, chunk) in output.lines().filter_map(parse_heading) {
            let at = n as usize - 1;
            if chunks.len() <= at {
                chunks.resize(at + 1, String::new());
            }
            chunks[at] = chunk.to_string();
        }
    }
}

/// A numbered passage's heading line: `[n] document — place (chunk ID)`.
pub fn heading(n: u32, document: &str, place: &str, chunk: &str) -> String {
    let document = document.replace('\n', " ");
    if place.is_empty() {
        format!("[{n}] {document} (chunk {chunk})")
    } else {
        format!(
            "[{n}] {document} — {} (chunk {chunk})",
            place.replace('\n', " ")
        )
    }
}

/// `(n, chunk)` of a line [`heading`] wrote.
fn parse_heading(line: &str) -> Option<(u32, &str)> {
    let rest = line.strip_prefix('[')?;
    let (n, rest) = rest.split_once(']')?;
    let n: u32 = n.parse().ok().filter(|n| *n > 0)?;
    let chunk = rest.strip_suffix(')')?.rsplit_once(" (chunk ")?.1;
    (!chunk.is_empty() && !chunk.contains(char::is_whitespace)).then_some((n, chunk))
}

/// The numbers `text` cites — `[1]`, `[2][3]`, `[1, 2]`, `[1,2]` — each once,
/// in the order first cited. Links (`[1](…)`) and words in brackets are not
/// citations.
pub fn cited(text: &str) -> Vec<u32> {
    let mut out: Vec<u32> = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find('[') {
        rest = &rest[open + 1..];
        let Some(close) = rest.find(']') else { break };
        let inside = &rest[..close];
        let after = &rest[close + 1..];
        if after.starts_with('(') {
            continue;
        }
        let numbers: Option<Vec<u32>> = inside
            .split(',')
            .map(|p| p.trim().parse::<u32>().ok().filter(|n| *n > 0))
            .collect();
        for n in numbers.unwrap_or_default() {
            if !out.contains(&n) {
                out.push(n);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_per_run_and_survive_a_resume() {
        let run = Sources::default();
        assert_eq!(run.number("c1"), 1);
        assert_eq!(run.number("c2"), 2);
        assert_eq!(run.number("c1"), 1, "one passage, one number");
        let output = format!(
            "Passages …\n\n{}\n<<<\ntext\n>>>\n\n{}\n<<<\nmore\n>>>\n",
            heading(1, "handbook.pdf", "page 7", "c1"),
            heading(2, "a (draft).md", "", "c2")
        );
        let resumed = Sources::default();
        resumed.learn(&output);
        assert_eq!(resumed.chunk(1).as_deref(), Some("c1"));
        assert_eq!(resumed.chunk(2).as_deref(), Some("c2"));
        assert_eq!(
            resumed.number("c3"),
            3,
            "the next search goes on after them"
        );
        assert_eq!(resumed.chunk(4), None);
        assert_eq!(resumed.chunk(0), None);
    }

    #[test]
    fn citations_are_read_from_the_answer() {
        assert_eq!(
            cited("Leave is 25 days [1]. See also [3][2] and [1, 4]."),
            [1, 3, 2, 4]
        );
        assert_eq!(cited("[link](http://x) [a] [0] [1,2]"), [1, 2]);
        assert_eq!(cited("no sources"), Vec::<u32>::new());
        assert_eq!(cited("unclosed [1"), Vec::<u32>::new());
    }

    #[test]
    fn headings_parse_back_and_other_lines_do_not() {
        let h = heading(12, "Q3 [final] report.pdf", "page 7", "0193abc");
        assert_eq!(parse_heading(&h), Some((12, "0193abc")));
        assert_eq!(parse_heading("[1] just text"), None);
        assert_eq!(parse_heading("[x] a (chunk b)"), None);
    }
}

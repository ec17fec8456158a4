//! What reading a document in a `weft extract` child costs over reading it in
//! this process: the same 1 MB PDF, N times each way, p50 and p99.
//!
//! cargo run --release -p weft-files --features samples --example extract_cost -- \
//!     target/release/weft 200

use std::time::{Duration, Instant};

use weft_files::{Extractor, Job, Limits, samples};

fn pdf_of_about(bytes: usize) -> Vec<u8> {
    let line = "The quarterly report shows revenue growth across every region we serve";
    let lines: Vec<String> = (0..bytes / (line.len() + 8))
        .map(|i| format!("{i} {line}"))
        .collect();
    let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
    samples::pdf(&refs)
}

fn percentiles(mut v: Vec<Duration>) -> (f64, f64) {
    v.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    (
        ms(v[v.len() / 2]),
        ms(v[(v.len() * 99 / 100).min(v.len() - 1)]),
    )
}

#[tokio::main]
async fn main() {
    let mut args = std::env::args().skip(1);
    let weft = args.next().expect("usage: extract_cost WEFT_BINARY [N]");
    let n: usize = args.next().map_or(200, |a| a.parse().expect("N"));
    let pdf = bytes::Bytes::from(pdf_of_about(1 << 20));
    let limits = Limits::default();
    let child = Extractor::child_process(&weft, ["extract"], limits);
    let here = Extractor::in_thread(limits);
    for (label, ex) in [("in process", &here), ("child process", &child)] {
        let _ = ex.run(Job::Pdf, pdf.clone()).await.expect("warm-up");
        let mut times = Vec::with_capacity(n);
        for _ in 0..n {
            let started = Instant::now();
            let text = ex.run(Job::Pdf, pdf.clone()).await.expect("reads");
            times.push(started.elapsed());
            assert!(text.len() > 100_000);
        }
        let (p50, p99) = percentiles(times);
        println!(
            "{label:>14}: {} bytes, n={n}: p50 {p50:.1} ms, p99 {p99:.1} ms",
            pdf.len()
        );
    }
}

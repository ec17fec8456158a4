//! Shared by the web tool tests: a resolver that answers from a table (so no
//! test needs DNS), fake servers on 127.0.0.1:0, configs written the way an
//! admin would write them, and a small PDF built by hand.
#![allow(dead_code)] // each test file uses a different part

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use weft_config::ToolsConfig;
use weft_tools::web::{NameResolver, WebFetch};

/// Answers lookups from a table; unknown names do not resolve. Counts lookups.
#[derive(Default)]
pub struct TableResolver {
    answers: HashMap<String, Vec<IpAddr>>,
    pub lookups: AtomicUsize,
}

impl TableResolver {
    pub fn new(entries: &[(&str, &[&str])]) -> Arc<TableResolver> {
        let answers = entries
            .iter()
            .map(|(name, ips)| {
                let ips = ips.iter().map(|ip| ip.parse().unwrap()).collect();
                (name.to_string(), ips)
            })
            .collect();
        Arc::new(TableResolver {
            answers,
            lookups: AtomicUsize::new(0),
        })
    }

    pub fn lookups(&self) -> usize {
        self.lookups.load(Ordering::SeqCst)
    }
}

#[async_trait::async_trait]
impl NameResolver for TableResolver {
    async fn lookup(&self, host: &str) -> std::io::Result<Vec<IpAddr>> {
        self.lookups.fetch_add(1, Ordering::SeqCst);
        self.answers.get(host).cloned().ok_or_else(|| {
            std::io::Error::new(std::io::ErrorKind::NotFound, "no such host (test table)")
        })
    }
}

/// The names the tests use; none of them reaches anything but 127.0.0.1.
pub fn test_resolver() -> Arc<TableResolver> {
    TableResolver::new(&[
        ("fake.test", &["127.0.0.1"]),
        ("a.fake.test", &["127.0.0.1"]),
        ("other.test", &["127.0.0.1"]),
        ("internal.example", &["10.0.0.5"]),
        ("mixed.example", &["93.184.216.34", "10.0.0.5"]),
        ("mixed6.example", &["2606:4700::1", "fd00::1"]),
        ("meta.example", &["169.254.169.254"]),
        ("loop.example", &["127.0.0.1"]),
        ("cgnat.example", &["100.64.0.1"]),
        ("v6loop.example", &["::1"]),
        ("mapped.example", &["::ffff:10.0.0.1"]),
        ("zero.example", &["0.0.0.0"]),
        ("empty.example", &[]),
    ])
}

/// `[tools]` as JSON, the shape `weft.toml` has.
pub fn tools_config(json: serde_json::Value) -> ToolsConfig {
    serde_json::from_value(json).expect("a valid [tools] section")
}

/// `web_fetch` with `allow_hosts` and caps, resolving through `resolver`.
pub fn fetcher(
    allow_hosts: &[&str],
    timeout_ms: u64,
    max_bytes: u64,
    resolver: Arc<TableResolver>,
) -> WebFetch {
    let cfg = tools_config(serde_json::json!({
        "web_fetch": {
            "enabled": true,
            "allow_hosts": allow_hosts,
            "timeout_ms": timeout_ms,
            "max_bytes": max_bytes,
        }
    }));
    WebFetch::with_resolver(&cfg.web_fetch, resolver, extractor()).expect("web_fetch builds")
}

/// Serves `router` on 127.0.0.1 at a free port until the test ends.
pub async fn serve(router: axum::Router) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        axum::serve(listener, router).await.unwrap();
    });
    addr
}

/// A one-page PDF (Helvetica, one line of text), with a correct xref table.
pub fn tiny_pdf(text: &str) -> Vec<u8> {
    let content = format!("BT /F1 18 Tf 72 720 Td ({text}) Tj ET");
    let objects = [
        "<< /Type /Catalog /Pages 2 0 R >>".to_string(),
        "<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_string(),
        "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R \
         /Resources << /Font << /F1 5 0 R >> >> >>"
            .to_string(),
        format!(
            "<< /Length {} >>\nstream\n{content}\nendstream",
            content.len()
        ),
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>"
            .to_string(),
    ];
    let mut pdf = b"%PDF-1.4\n".to_vec();
    let mut offsets = Vec::new();
    for (i, body) in objects.iter().enumerate() {
        offsets.push(pdf.len());
        pdf.extend_from_slice(format!("{} 0 obj\n{body}\nendobj\n", i + 1).as_bytes());
    }
    let xref_at = pdf.len();
    pdf.extend_from_slice(
        format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1).as_bytes(),
    );
    for off in offsets {
        pdf.extend_from_slice(format!("{off:010} 00000 n \n").as_bytes());
    }
    pdf.extend_from_slice(
        format!(
            "trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref_at}\n%%EOF\n",
            objects.len() + 1
        )
        .as_bytes(),
    );
    pdf
}

/// Pages and PDFs read on this process's blocking pool: a library test has no
/// `weft` binary to start `weft extract` children from (the conformance suite
/// runs web_fetch with them, hostile pages included).
pub fn extractor() -> weft_files::Extractor {
    weft_files::Extractor::in_thread(weft_files::Limits::default())
}

//! `docs/metrics.md` against the code: every series recorded is listed, and
//! nothing listed is unrecorded.

/// Every series the code records is documented, and the document lists no
/// series the code does not record.
#[test]
fn every_metric_in_the_code_is_documented() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut recorded = std::collections::BTreeSet::new();
    // Every crate of the workspace (a new crate cannot be forgotten here).
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let members = manifest
        .lines()
        .find_map(|l| l.trim().strip_prefix("members = ["))
        .expect("the workspace's members line");
    for member in members.split('"').skip(1).step_by(2) {
        collect_metric_names(&root.join(member).join("src"), &mut recorded);
    }
    assert!(
        recorded.contains("weft_queue_redis_depth"),
        "the scan finds the metrics: {recorded:?}"
    );
    let doc = metrics_doc();
    for name in &recorded {
        assert!(
            doc.contains(&format!("`{name}`")),
            "{name} is recorded but not in docs/metrics.md"
        );
    }
    let listed: Vec<&str> = doc
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|w| w.starts_with("weft_") && !w.contains(' '))
        .collect();
    for name in listed {
        assert!(
            recorded.contains(name),
            "docs/metrics.md lists {name}, which nothing records"
        );
    }
}

pub fn metrics_doc() -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/metrics.md");
    std::fs::read_to_string(&path).expect("docs/metrics.md")
}

/// Series names in a Prometheus text exposition (histograms by their base name).
pub fn exposed_series(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| l.starts_with("weft_"))
        .map(|l| {
            let name = l.split(['{', ' ']).next().unwrap();
            ["_bucket", "_sum", "_count"]
                .iter()
                .find_map(|suffix| name.strip_suffix(suffix))
                .unwrap_or(name)
                .to_string()
        })
        .collect()
}

/// `"weft_…"` right after `counter!(`, `gauge!(` or `histogram!(` in `.rs` files.
fn collect_metric_names(dir: &std::path::Path, names: &mut std::collections::BTreeSet<String>) {
    for entry in std::fs::read_dir(dir).unwrap().map(Result::unwrap) {
        let path = entry.path();
        if path.is_dir() {
            collect_metric_names(&path, names);
            continue;
        }
        if path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        for macro_name in ["counter!(", "gauge!(", "histogram!("] {
            for (at, _) in text.match_indices(macro_name) {
                let rest = text[at + macro_name.len()..].trim_start();
                if let Some(quoted) = rest.strip_prefix('"')
                    && let Some(end) = quoted.find('"')
                {
                    names.insert(quoted[..end].to_string());
                }
            }
        }
    }
}

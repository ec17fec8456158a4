//! The OpenAPI document is part of the contract: it is checked in
//! (`openapi.json` at the repository root, for clients and reviewers), a change
//! to the generated document fails here until the file is regenerated, and
//! every route the gateway serves must be in it.
//!
//! Regenerate with `UPDATE_OPENAPI=1 cargo test -p weft-gateway --test openapi`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn generated() -> String {
    let spec = weft_gateway::openapi_spec();
    let mut json = serde_json::to_string_pretty(&spec).expect("spec serialises");
    json.push('\n');
    json
}

#[test]
fn checked_in_document_is_current() {
    let file = root().join("openapi.json");
    let now = generated();
    if std::env::var_os("UPDATE_OPENAPI").is_some() {
        std::fs::write(&file, &now).unwrap();
        return;
    }
    let checked_in = std::fs::read_to_string(&file).unwrap_or_default();
    assert!(
        checked_in == now,
        "openapi.json differs from the document the code generates; review the change and run \
         UPDATE_OPENAPI=1 cargo test -p weft-gateway --test openapi"
    );
}

/// `(method, path)` of every `.route("path", get(..).post(..))` in the gateway's
/// source: the routes it serves.
fn served_routes() -> BTreeSet<(String, String)> {
    let mut out = BTreeSet::new();
    let mut files = vec![root().join("gateway/src")];
    while let Some(path) = files.pop() {
        if path.is_dir() {
            files.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
            continue;
        }
        if path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let source = std::fs::read_to_string(&path).unwrap();
        for (i, _) in source.match_indices(".route(") {
            let call = balanced(&source[i + ".route(".len()..]);
            let Some(path) = call.split('"').nth(1) else {
                continue;
            };
            for method in ["get", "post", "put", "patch", "delete"] {
                let called = call.match_indices(&format!("{method}(")).any(|(at, _)| {
                    !call[..at]
                        .chars()
                        .next_back()
                        .is_some_and(|c| c.is_alphanumeric() || c == '_')
                });
                if called {
                    out.insert((method.to_owned(), path.to_owned()));
                }
            }
        }
    }
    out
}

/// The text up to the parenthesis closing the one just opened.
fn balanced(s: &str) -> &str {
    let mut depth = 1;
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return &s[..i];
                }
            }
            _ => {}
        }
    }
    s
}

#[test]
fn every_route_is_documented() {
    let spec = serde_json::to_value(weft_gateway::openapi_spec()).unwrap();
    let documented: BTreeSet<(String, String)> = spec["paths"]
        .as_object()
        .unwrap()
        .iter()
        .flat_map(|(path, item)| {
            item.as_object()
                .unwrap()
                .keys()
                .map(move |method| (method.clone(), path.clone()))
        })
        .collect();
    let served = served_routes();
    assert!(
        served.len() > 20,
        "the route scan found too little: {served:?}"
    );
    // Not part of the API: Prometheus text and the document itself.
    let operational = ["/metrics", "/openapi.json"];
    let missing: Vec<_> = served
        .iter()
        .filter(|(_, path)| !operational.contains(&path.as_str()))
        .filter(|route| !documented.contains(*route))
        .collect();
    assert!(
        missing.is_empty(),
        "routes missing from the OpenAPI document: {missing:?}"
    );
}

//! Rebuild when the web UI is rebuilt: `web/dist` is embedded into release
//! binaries at compile time, and without this a `cargo build` made before
//! `npm run build` kept serving the old (or no) UI.

fn main() {
    let dist = std::path::Path::new("../web/dist");
    // A missing path would make Cargo rerun this script on every build; an empty
    // folder (ignored by git) is tracked like any other.
    if !dist.exists() {
        let _ = std::fs::create_dir_all(dist);
    }
    println!("cargo:rerun-if-changed=../web/dist");
}

//! HTML pages as Markdown (web_fetch), with htmd: an HTML parser rather than
//! patterns. htmd walks the DOM recursively, so a page nested deeply enough
//! overflows the stack: it runs only inside `weft extract` (see `isolate`).

/// Readable Markdown of an HTML page, without scripts, styles and navigation;
/// the `<title>` becomes a `Title:` line on top.
pub fn html_to_markdown(html: &str) -> Result<String, String> {
    let converter = htmd::HtmlToMarkdown::builder()
        .skip_tags(vec![
            "script", "style", "noscript", "template", "iframe", "svg", "canvas", "nav", "footer",
            "button", "select", "input", "textarea",
        ])
        .add_handler(
            vec!["title"],
            |h: &dyn htmd::element_handler::Handlers, el: htmd::Element| {
                let text = h.walk_children(el.node).content;
                let title = text.split_whitespace().collect::<Vec<_>>().join(" ");
                (!title.is_empty()).then(|| format!("\n\nTitle: {title}\n\n").into())
            },
        )
        .build();
    converter
        .convert(html)
        .map_err(|e| format!("could not convert the page to Markdown: {e}"))
}

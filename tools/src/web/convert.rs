//! What `web_fetch` makes of a body: HTML becomes Markdown (htmd, an HTML
//! parser rather than patterns), PDF becomes its text (pdf-extract), text
//! stays text. Anything else — images, archives, executables — is refused,
//! since the model could do nothing with it.
//!
//! The converters are synchronous and, for big or hostile input, slow; they
//! run on the blocking pool. pdf-extract panics on some malformed files, so a
//! panic there is caught and reported as an unreadable PDF.

/// How a body is read, from its `Content-Type` (or, without one, its bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyKind {
    Html,
    Pdf,
    Text,
}

impl BodyKind {
    /// The kind a `Content-Type` essence declares; `Ok(None)` when it says
    /// nothing useful (absent, `application/octet-stream`) and the bytes must
    /// tell; `Err(mime)` for a type the tool does not read.
    pub fn from_mime(mime: Option<&str>) -> Result<Option<BodyKind>, String> {
        let Some(mime) = mime.map(|m| m.trim().to_ascii_lowercase()) else {
            return Ok(None);
        };
        let kind = match mime.as_str() {
            "text/html" | "application/xhtml+xml" => BodyKind::Html,
            "application/pdf" => BodyKind::Pdf,
            "application/json"
            | "application/xml"
            | "application/javascript"
            | "application/x-ndjson" => BodyKind::Text,
            m if m.starts_with("text/") || m.ends_with("+json") || m.ends_with("+xml") => {
                BodyKind::Text
            }
            "" | "application/octet-stream" => return Ok(None),
            _ => return Err(mime),
        };
        Ok(Some(kind))
    }

    /// The kind of an undeclared body, from its first bytes; `None` for
    /// binary data.
    pub fn sniff(body: &[u8]) -> Option<BodyKind> {
        let head = &body[..body.len().min(1024)];
        if head.starts_with(b"%PDF-") {
            return Some(BodyKind::Pdf);
        }
        if head.contains(&0) {
            return None;
        }
        let head = String::from_utf8_lossy(head).to_ascii_lowercase();
        let head = head.trim_start();
        if head.starts_with("<!doctype html") || head.starts_with("<html") {
            Some(BodyKind::Html)
        } else {
            Some(BodyKind::Text)
        }
    }
}

/// Bytes in the declared charset (UTF-8 when none or unknown; a BOM wins).
pub fn decode(bytes: &[u8], charset: Option<&str>) -> String {
    let encoding = charset
        .and_then(|c| encoding_rs::Encoding::for_label(c.trim().as_bytes()))
        .unwrap_or(encoding_rs::UTF_8);
    encoding.decode(bytes).0.into_owned()
}

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

/// The text of a PDF.
pub fn pdf_to_text(bytes: &[u8]) -> Result<String, String> {
    let text = pdf_extract::extract_text_from_mem(bytes)
        .map_err(|e| format!("could not read the PDF: {e}"))?;
    Ok(tidy_pdf_text(&text))
}

/// pdf-extract keeps the page's vertical gaps as runs of blank lines.
fn tidy_pdf_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut blank = 0;
    for line in text.lines().map(str::trim_end) {
        if line.is_empty() {
            blank += 1;
            continue;
        }
        if !out.is_empty() {
            out.push_str(if blank > 0 { "\n\n" } else { "\n" });
        }
        blank = 0;
        out.push_str(line);
    }
    out
}

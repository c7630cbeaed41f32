//! A response body as text the model reads: the charset decoded, HTML made readable Markdown
//! (the article, then Markdown), JSON pretty-printed, text kept.

use encoding_rs::{Encoding, UTF_8};

/// What a body is, from its `Content-Type` and, without one, its first bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// HTML or XHTML.
    Html,
    /// JSON.
    Json,
    /// A PDF document.
    Pdf,
    /// Text of another kind (plain, Markdown, XML, CSS, source code).
    Text,
    /// Something else (an image, an archive).
    Binary,
}

/// The media type without parameters, in lower case (`text/html`).
pub fn media_type(content_type: Option<&str>) -> Option<String> {
    content_type
        .and_then(|c| c.split(';').next())
        .map(|m| m.trim().to_ascii_lowercase())
        .filter(|m| !m.is_empty())
}

/// The kind of a body.
pub fn kind(content_type: Option<&str>, body: &[u8]) -> Kind {
    match media_type(content_type).as_deref() {
        Some("text/html" | "application/xhtml+xml") => Kind::Html,
        Some("application/json") => Kind::Json,
        Some(m) if m.ends_with("+json") => Kind::Json,
        Some("application/pdf") => Kind::Pdf,
        Some(m)
            if m.starts_with("text/")
                || m.ends_with("+xml")
                || matches!(
                    m,
                    "application/xml"
                        | "application/javascript"
                        | "application/x-sh"
                        | "application/toml"
                        | "application/yaml"
                        | "application/x-yaml"
                ) =>
        {
            Kind::Text
        }
        Some("application/octet-stream") | None => sniff(body),
        Some(_) => Kind::Binary,
    }
}

fn sniff(body: &[u8]) -> Kind {
    let head = &body[..body.len().min(1024)];
    let text = String::from_utf8_lossy(head)
        .trim_start()
        .to_ascii_lowercase();
    if head.starts_with(b"%PDF-") {
        Kind::Pdf
    } else if text.starts_with("<!doctype html") || text.starts_with("<html") {
        Kind::Html
    } else if (text.starts_with('{') || text.starts_with('['))
        && serde_json::from_slice::<serde_json::Value>(body).is_ok()
    {
        Kind::Json
    } else if head.contains(&0) {
        Kind::Binary
    } else {
        Kind::Text
    }
}

/// The charset `Content-Type` declares (`charset=ISO-8859-1`).
fn declared(content_type: Option<&str>) -> Option<&'static Encoding> {
    content_type?.split(';').skip(1).find_map(|param| {
        let (key, value) = param.split_once('=')?;
        (key.trim().eq_ignore_ascii_case("charset"))
            .then(|| Encoding::for_label(value.trim().trim_matches('"').as_bytes()))
            .flatten()
    })
}

/// The charset an HTML document's `<meta charset>` or `<meta http-equiv="Content-Type">`
/// declares in its first 1024 bytes (where the HTML standard looks).
fn meta_charset(body: &[u8]) -> Option<&'static Encoding> {
    let head = String::from_utf8_lossy(&body[..body.len().min(1024)]).to_ascii_lowercase();
    let mut rest = head.as_str();
    while let Some(at) = rest.find("charset") {
        rest = &rest[at + "charset".len()..];
        let value = rest.trim_start().strip_prefix('=')?.trim_start();
        let value = value.trim_start_matches(['"', '\'']);
        let end = value
            .find(|c: char| !(c.is_ascii_alphanumeric() || "-_:.".contains(c)))
            .unwrap_or(value.len());
        if let Some(encoding) = Encoding::for_label(&value.as_bytes()[..end]) {
            return Some(encoding);
        }
    }
    None
}

/// The body as text: a byte-order mark first, then the declared charset (the header's, else an
/// HTML document's own), else UTF-8. Bytes the charset cannot decode become U+FFFD; the second
/// value names the charset used.
pub fn decode(content_type: Option<&str>, kind: Kind, body: &[u8]) -> (String, &'static str) {
    let encoding = Encoding::for_bom(body)
        .map(|(e, _)| e)
        .or_else(|| declared(content_type))
        .or_else(|| (kind == Kind::Html).then(|| meta_charset(body)).flatten())
        .unwrap_or(UTF_8);
    // The standard's replacement for UTF-16 declared in a document's own meta is UTF-8.
    let (text, used, _) = encoding.decode(body);
    (text.into_owned(), used.name())
}

/// A page converted: its title, when it has one, and the Markdown.
pub struct Converted {
    /// The article's title.
    pub title: Option<String>,
    /// The text the model reads.
    pub text: String,
    /// How it was made, for the header (`the article, as Markdown`).
    pub how: &'static str,
}

/// HTML to Markdown: the article readability finds (navigation, headers, footers and sidebars
/// dropped), else the whole body without scripts, styles and navigation.
///
/// The page is parsed once, into the DOM dom_smoothie works on, and both ways make Markdown from
/// that DOM (dom_query's serializer): the article's, which dom_smoothie writes in its Markdown
/// text mode, and the whole page's, from a copy of the tree kept aside before readability changes
/// it (copying a tree costs a small part of parsing the page again).
pub fn html(html: &str, url: &str) -> Converted {
    let config = dom_smoothie::Config {
        max_elements_to_parse: 100_000,
        text_mode: dom_smoothie::TextMode::Markdown,
        ..Default::default()
    };
    let page = dom_query::Document::from(html);
    let whole = page.clone();
    let article = dom_smoothie::Readability::with_document(page, Some(url), Some(config))
        .ok()
        .and_then(|mut r| r.parse().ok())
        .filter(|a| !a.text_content.trim().is_empty());
    if let Some(article) = article {
        let title = Some(article.title.trim().to_owned()).filter(|t| !t.is_empty());
        return Converted {
            title,
            text: tidy(&article.text_content),
            how: "the article, as Markdown",
        };
    }
    let skip = [
        "script", "style", "noscript", "nav", "header", "footer", "aside", "head", "svg", "iframe",
        "form",
    ];
    Converted {
        title: None,
        text: tidy(&whole.md(Some(&skip))),
        how: "the whole page, as Markdown (no article found)",
    }
}

/// Pretty-printed JSON, or `None` when the text is not JSON (cut by the size limit).
pub fn json(text: &str) -> Option<String> {
    let value: serde_json::Value = serde_json::from_str(text).ok()?;
    serde_json::to_string_pretty(&value).ok()
}

/// Runs of blank lines to one, trailing blanks removed.
fn tidy(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut blank = 0;
    for line in text.lines() {
        let line = line.trim_end();
        if line.is_empty() {
            blank += 1;
            if blank > 1 {
                continue;
            }
        } else {
            blank = 0;
        }
        out.push_str(line);
        out.push('\n');
    }
    out.trim().to_owned() + "\n"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charsets_from_header_meta_and_bom() {
        let latin = b"<p>caf\xe9</p>";
        assert_eq!(
            decode(Some("text/html; charset=ISO-8859-1"), Kind::Html, latin).0,
            "<p>café</p>"
        );
        let meta = b"<html><head><meta charset=\"windows-1252\"></head><p>caf\xe9 \x80</p>";
        let (text, used) = decode(Some("text/html"), Kind::Html, meta);
        assert!(text.contains("café €"), "{text}");
        assert_eq!(used, "windows-1252");
        let equiv =
            b"<meta http-equiv=\"Content-Type\" content=\"text/html; charset=iso-8859-1\">\xe9";
        assert!(decode(None, Kind::Html, equiv).0.ends_with('é'));
        assert_eq!(decode(None, Kind::Text, "é".as_bytes()).1, "UTF-8");
        let bom = b"\xef\xbb\xbfhi";
        assert_eq!(
            decode(Some("text/plain; charset=latin1"), Kind::Text, bom).0,
            "hi"
        );
    }

    #[test]
    fn kinds() {
        assert_eq!(kind(Some("text/html; charset=utf-8"), b""), Kind::Html);
        assert_eq!(kind(Some("application/vnd.api+json"), b""), Kind::Json);
        assert_eq!(kind(Some("application/pdf"), b""), Kind::Pdf);
        assert_eq!(kind(Some("image/png"), b""), Kind::Binary);
        assert_eq!(kind(None, b"%PDF-1.7"), Kind::Pdf);
        assert_eq!(kind(None, b"  <!DOCTYPE html><p>"), Kind::Html);
        assert_eq!(kind(None, b"{\"a\": 1}"), Kind::Json);
        assert_eq!(kind(None, b"plain"), Kind::Text);
    }

    /// A page with its chrome around an article of each kind of block the model reads.
    fn page(filler: &str) -> String {
        let para = "A bounded channel applies back pressure when it is full, so a fast producer \
                    waits for a slow consumer instead of filling memory with values no one reads.";
        format!(
            "<html><head><title>Tokio channels</title><script>var hidden = 1;</script></head><body>\
             <nav><ul><li><a href=\"/\">Home</a></li><li><a href=\"/docs\">Docs index</a></li></ul></nav>\
             <article><h2>Kinds of channels</h2><p>{para} {para}</p>\
             <ul><li><code>mpsc</code>: many producers</li><li><code>oneshot</code>: one value</li></ul>\
             <ol><li>Create the channel.</li><li>Clone the sender.</li></ol>\
             <p>{para}</p><pre><code>let (tx, rx) = mpsc::channel(32);\nrx.recv().await;</code></pre>\
             <table><thead><tr><th>Channel</th><th>Producers</th></tr></thead>\
             <tbody><tr><td>mpsc</td><td>many</td></tr></tbody></table>\
             <p>See <a href=\"/tutorial/select\">select</a> for more.</p></article>\
             <footer>Copyright 2026</footer>{filler}</body></html>"
        )
    }

    /// The blocks of [`page`]'s article, with the link as it is written: readability makes the
    /// article's links absolute, the whole page keeps them as the page has them.
    fn markdown_blocks(text: &str, link: &str) {
        for block in [
            "## Kinds of channels",
            "- `mpsc`: many producers\n- `oneshot`: one value\n",
            "1. Create the channel.\n2. Clone the sender.\n",
            "```\nlet (tx, rx) = mpsc::channel(32);\nrx.recv().await;\n```",
            "| Channel | Producers |\n| ------- | --------- |\n| mpsc | many |",
            link,
        ] {
            assert!(text.contains(block), "{block:?} missing: {text}");
        }
        assert!(!text.contains("hidden"), "{text}");
        assert!(!text.contains('<'), "{text}");
    }

    #[test]
    fn the_article_and_the_whole_page_are_markdown() {
        let url = "https://example.org/post";
        let article = html(&page(""), url);
        assert_eq!(article.how, "the article, as Markdown");
        assert_eq!(article.title.as_deref(), Some("Tokio channels"));
        markdown_blocks(
            &article.text,
            "[select](https://example.org/tutorial/select)",
        );
        for chrome in ["Docs index", "Copyright"] {
            assert!(!article.text.contains(chrome), "{chrome}: {}", article.text);
        }
        // Over readability's element limit: the whole page, without its navigation and footer.
        let whole = html(&page(&"<span></span>".repeat(100_001)), url);
        assert_eq!(whole.how, "the whole page, as Markdown (no article found)");
        assert_eq!(whole.title, None);
        markdown_blocks(&whole.text, "[select](/tutorial/select)");
        for chrome in ["Docs index", "Copyright"] {
            assert!(!whole.text.contains(chrome), "{chrome}: {}", whole.text);
        }
    }
}

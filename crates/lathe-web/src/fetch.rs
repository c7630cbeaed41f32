//! `web_fetch`: one URL, as text the model can read, one page of lines at a time.

use std::path::PathBuf;

use lathe_runtime::paging::{Pager, page_text};
use lathe_runtime::tool::{ResultExt, ToolError, ToolResult};
use lathe_runtime::{Effect, Session, Tool, ToolContext, ToolHints, ToolKind, ToolOutput};
use schemars::JsonSchema;
use serde::Deserialize;
use sha2::{Digest, Sha256};
use url::Url;

use crate::convert::{self, Kind};
use crate::guard::refusal_in;
use crate::{WebState, state};

/// Fetches a web page (HTTP GET) and returns it as text: HTML as readable Markdown (the
/// article, without navigation), JSON pretty-printed, plain text as it is. Use it to read
/// documentation, an API reference or an issue the user points to; use web_search to find
/// pages. Each host is a permission the user grants; loopback and private addresses are
/// refused unless the user allows the host. Long pages come in numbered lines like read_file:
/// call again with the same url and `offset` to read on (served from the copy already fetched).
#[derive(Debug, Deserialize, JsonSchema)]
pub struct WebFetchInput {
    /// The URL, with http:// or https://.
    pub url: String,
    /// The first line to show (1-based), to read on in a long page. Default 1.
    pub offset: Option<i64>,
    /// How many lines to show. By default, as many as fit in one result.
    pub limit: Option<i64>,
}

/// The `web_fetch` tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct WebFetchTool;

/// The URL of a call, when it is one web_fetch can fetch; else why not.
fn parse_url(text: &str) -> Result<Url, String> {
    let text = text.trim();
    let url = Url::parse(text).map_err(|e| {
        format!("`{text}` is not a URL ({e}): give a full URL such as https://docs.rs/serde")
    })?;
    match url.scheme() {
        "http" | "https" if url.host_str().is_some_and(|h| !h.is_empty()) => Ok(url),
        "http" | "https" => Err(format!("`{text}` names no host")),
        other => Err(format!(
            "web_fetch fetches only http:// and https:// URLs, not {other}:; to read a local \
             file, use read_file"
        )),
    }
}

const PAGER: Pager<'static> = Pager {
    tool: "web_fetch (with the same url)",
    what: "the page",
};

impl Tool for WebFetchTool {
    const NAME: &'static str = "web_fetch";
    // Few tasks need it: behind `more_tools` in the compact profile (small windows).
    const ON_DEMAND: bool = true;
    const ALIASES: &'static [&'static str] = &["fetch_url", "webfetch"];
    type Input = WebFetchInput;

    fn kind(&self) -> ToolKind {
        ToolKind::Read
    }

    fn hints(&self) -> ToolHints {
        ToolHints {
            read_only: true,
            destructive: false,
            idempotent: true,
            open_world: true,
        }
    }

    fn effects(&self, input: &Self::Input, _session: &Session) -> Vec<Effect> {
        match parse_url(&input.url) {
            Ok(url) => vec![Effect::Fetch {
                host: url.host_str().unwrap_or_default().to_owned(),
            }],
            // Nothing is fetched: the call only says what is wrong with the URL.
            Err(_) => vec![Effect::OwnState { changes: false }],
        }
    }

    fn title(&self, input: &Self::Input) -> String {
        format!("web_fetch {}", input.url.trim())
    }

    async fn run(&self, input: Self::Input, ctx: ToolContext) -> ToolResult {
        let url = checked(&input)?;
        let session = &ctx.session;
        let cache = cache_path(session, &url);
        let reading_on = input.offset.is_some_and(|o| o > 1);
        if reading_on && let Ok(saved) = std::fs::read_to_string(&cache) {
            let (header, page) = saved.split_once("\n\n").unwrap_or(("", &saved));
            return paged(session, &url, header, page, &input, true).into_result();
        }
        let web = state(session);
        let fetched = tokio::select! {
            fetched = get(&web, url.clone()) => fetched,
            () = ctx.cancel.cancelled() => return Err(ToolError::new("the fetch was stopped")),
        };
        let page = match fetched? {
            Fetched::Page(page) => page,
            Fetched::Elsewhere(output) => return Ok(output),
        };
        let Page {
            url: final_url,
            status,
            content_type,
            body,
            cut,
            redirects,
        } = page;
        let kind = convert::kind(content_type.as_deref(), &body);
        let media = convert::media_type(content_type.as_deref())
            .unwrap_or_else(|| "no content type".into());
        let size = human(body.len() as u64);
        let mut notes = notes(&web, &url, cut, redirects);
        let (text, how) = match kind {
            Kind::Binary => {
                return Err(ToolError::new(format!(
                    "{final_url} is {size} of {media}, which web_fetch does not show as text"
                ))
                .with_meta("url", final_url.as_str())
                .with_meta("content_type", media));
            }
            Kind::Pdf => return pdf(&ctx, &final_url, &body, cut).await,
            Kind::Json | Kind::Text | Kind::Html => {
                let (decoded, charset) = convert::decode(content_type.as_deref(), kind, &body);
                if charset != "UTF-8" {
                    notes.push(format!("decoded from {charset}"));
                }
                readable(kind, decoded, &final_url).await?
            }
        };
        let mut header = format!("{final_url} ({media}, {size}; {how})");
        if !notes.is_empty() {
            header.push_str(&format!("\n({})", notes.join("; ")));
        }
        if !status.is_success() {
            header = format!(
                "HTTP {} {} from {header}",
                status.as_u16(),
                status.canonical_reason().unwrap_or("")
            );
        }
        let page = if text.trim().is_empty() {
            "(the page has no text)\n".to_owned()
        } else {
            text
        };
        if let Some(dir) = cache.parent() {
            let _ = std::fs::create_dir_all(dir);
            let _ = std::fs::write(&cache, format!("{header}\n\n{page}"));
        }
        let mut output = paged(session, &final_url, &header, &page, &input, false);
        // A page that is not a success is an error the model reads, with the page and its
        // metadata.
        if !status.is_success() {
            output.is_error = true;
        }
        output
            .with_meta("http_status", status.as_u16())
            .with_meta("content_type", media)
            .with_meta("cut", cut)
            .into_result()
    }
}

/// The URL of a call whose arguments are right; wrong paging arguments are said before
/// anything is fetched.
fn checked(input: &WebFetchInput) -> Result<Url, ToolError> {
    let url = parse_url(&input.url).map_err(ToolError::new)?;
    if let Some(n) = input.offset.filter(|n| *n < 0) {
        return Err(ToolError::new(format!(
            "offset must be a line number of 1 or more (the first line is 1), got {n}"
        )));
    }
    if let Some(n) = input.limit.filter(|n| *n < 1) {
        return Err(ToolError::new(format!(
            "limit must be 1 or more (the most lines to show), got {n}"
        )));
    }
    Ok(url)
}

/// What the header says about how the page of `url` was read: cut at the size limit,
/// redirected.
fn notes(web: &WebState, url: &Url, cut: bool, redirects: u32) -> Vec<String> {
    let mut notes = Vec::new();
    if cut {
        notes.push(format!(
            "the page is larger than the limit of {}: only its first {} were read ([web] \
             max_bytes raises the limit)",
            human(web.config.max_bytes),
            human(web.config.max_bytes)
        ));
    }
    if redirects > 0 {
        notes.push(format!(
            "redirected {redirects} time{} from {url}",
            if redirects == 1 { "" } else { "s" }
        ));
    }
    notes
}

/// The text of a page of `kind` (HTML, JSON or text), `decoded`, as the model reads it, and how
/// it was made: HTML as Markdown (on a blocking thread), JSON pretty-printed.
async fn readable(
    kind: Kind,
    decoded: String,
    final_url: &Url,
) -> Result<(String, &'static str), ToolError> {
    Ok(match kind {
        Kind::Html => {
            let base = final_url.to_string();
            let c = tokio::task::spawn_blocking(move || convert::html(&decoded, &base))
                .await
                .or_model(|_| format!("the HTML of {final_url} could not be converted"))?;
            let text = match c.title {
                Some(title) if !c.text.starts_with("# ") => format!("# {title}\n\n{}", c.text),
                _ => c.text,
            };
            (text, c.how)
        }
        Kind::Json => match convert::json(&decoded) {
            Some(pretty) => (pretty, "JSON, pretty-printed"),
            None => (decoded, "JSON that does not parse, as it came"),
        },
        _ => (decoded, "text"),
    })
}

/// The lines of `page` the call asks for (by default, as many as fit in one result) after the
/// header.
fn paged(
    session: &Session,
    url: &Url,
    header: &str,
    page: &str,
    input: &WebFetchInput,
    saved: bool,
) -> ToolOutput {
    let offset = input.offset.unwrap_or(1).max(1);
    let limit = input.limit.or_else(|| {
        // Lines from `offset` that fit the budget, with room for the numbers and the notes.
        let budget = session
            .config()
            .result_budget
            .saturating_sub(header.len() + 600);
        let mut used = 0usize;
        let mut lines = 0i64;
        for line in page.lines().skip((offset - 1) as usize) {
            let cost = line.chars().count().min(2000) + 8;
            if used + cost > budget && lines > 0 {
                break;
            }
            used += cost;
            lines += 1;
        }
        Some(lines.max(1))
    });
    let shown = url.to_string();
    let body = page_text(page, &shown, PAGER, input.offset, limit).unwrap_or_else(ToolOutput::from);
    let mut text = String::from(header);
    if saved {
        text.push_str(
            "\n(from the copy fetched earlier in this session; call without offset to fetch it \
             again)",
        );
    }
    text.push_str("\n\n");
    text.push_str(&body.text);
    let mut output = if body.is_error {
        ToolOutput::error(text)
    } else {
        ToolOutput::ok(text)
    };
    output.metadata = body.metadata;
    output.with_meta("url", shown)
}

/// Where the converted page of `url` is kept for paging.
fn cache_path(session: &Session, url: &Url) -> PathBuf {
    let digest = Sha256::digest(url.as_str().as_bytes());
    let name: String = digest[..12].iter().map(|b| format!("{b:02x}")).collect();
    session.state_dir().join("web").join(format!("{name}.md"))
}

/// A PDF is saved in the session's state directory and read as `read_document` reads it (its
/// pages, the gaps of pages without text, the paging note); the saved copy is where
/// `read_document` reads on.
async fn pdf(ctx: &ToolContext, url: &Url, body: &[u8], cut: bool) -> ToolResult {
    let path = cache_path(&ctx.session, url).with_extension("pdf");
    if let Some(dir) = path.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    if cut {
        return Err(ToolError::new(format!(
            "{url} is a PDF larger than the size limit ([web] max_bytes): a PDF cut short \
             cannot be read, so nothing was kept"
        )));
    }
    std::fs::write(&path, body)
        .or_model(|err| format!("{url} is a PDF, but it cannot be saved: {err}"))?;
    let shown = path.display().to_string();
    let head = format!(
        "{url} is a PDF ({}), saved as {shown}; read_document reads it again (pages, offset):",
        human(body.len() as u64)
    );
    let Some(reader) = lathe_runtime::documents::reader() else {
        // This runtime has no document converter: the model reads the saved file itself.
        return Ok(ToolOutput::ok(format!(
            "{head} no document reader is built into this runtime"
        ))
        .with_path(shown)
        .with_meta("url", url.as_str()));
    };
    let (session, cancel, saved) = (
        std::sync::Arc::clone(&ctx.session),
        ctx.cancel.clone(),
        shown.clone(),
    );
    let read = tokio::task::spawn_blocking(move || reader(&session, &saved, &cancel)).await;
    // Read or not, the result says where the PDF was saved.
    let mut output = match read {
        Ok(Ok(output)) => output,
        Ok(Err(error)) => ToolOutput::from(error),
        Err(err) => ToolOutput::error(format!("reading the PDF stopped unexpectedly: {err}")),
    };
    output.text = format!("{head}\n\n{}", output.text);
    output
        .with_path(shown)
        .with_meta("url", url.as_str())
        .into_result()
}

/// A response, read up to the size limit.
struct Page {
    url: Url,
    status: reqwest::StatusCode,
    content_type: Option<String>,
    body: Vec<u8>,
    cut: bool,
    redirects: u32,
}

/// Where a fetch ended.
enum Fetched {
    /// The page.
    Page(Page),
    /// A redirect to another host, which the call does not follow: the result says where it
    /// leads.
    Elsewhere(ToolOutput),
}

/// Fetches `url`, following redirects on the same host one hop at a time (each hop checked by
/// the guard); a redirect to another host ends the call with where it leads.
async fn get(web: &WebState, mut url: Url) -> Result<Fetched, ToolError> {
    let client = web.client().map_err(ToolError::new)?;
    let host = url.host_str().unwrap_or_default().to_owned();
    let mut redirects = 0;
    loop {
        let this_host = url.host_str().unwrap_or_default().to_owned();
        if let Err(refusal) = web.guard.check_host(&this_host).await {
            return Err(refused(&refusal.to_string(), &url));
        }
        let response = client
            .get(url.clone())
            .send()
            .await
            .map_err(|e| match refusal_in(&e) {
                Some(refusal) => refused(&refusal.to_string(), &url),
                None => ToolError::new(format!("cannot fetch {url}: {}", describe(&e))),
            })?;
        let status = response.status();
        if status.is_redirection()
            && let Some(location) = response
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|l| l.to_str().ok())
        {
            let next = url.join(location).map_err(|e| {
                ToolError::new(format!(
                    "{url} redirects to `{location}`, which is not a URL ({e})"
                ))
            })?;
            if !matches!(next.scheme(), "http" | "https") {
                return Err(ToolError::new(format!(
                    "{url} redirects to {next}, which web_fetch does not follow (only http and \
                     https)"
                )));
            }
            if redirects >= web.config.max_redirects {
                return Err(ToolError::new(format!(
                    "{url} redirected more than {} times (the last one to {next}); stopped \
                     there ([web] max_redirects raises the limit)",
                    web.config.max_redirects
                ))
                .with_meta("url", next.as_str()));
            }
            let next_host = next.host_str().unwrap_or_default();
            if !next_host.eq_ignore_ascii_case(&host) {
                if let Err(refusal) = web.guard.check_host(next_host).await {
                    return Err(refused(
                        &format!("{url} redirects to {next}, and {refusal}"),
                        &next,
                    ));
                }
                return Ok(Fetched::Elsewhere(
                    ToolOutput::ok(format!(
                        "{url} redirects to {next}, on another host ({next_host}), which this \
                         call does not follow: to read it, call web_fetch with that URL \
                         (fetching from {next_host} is a permission of its own)"
                    ))
                    .with_meta("url", url.as_str())
                    .with_meta("redirect", next.as_str()),
                ));
            }
            redirects += 1;
            url = next;
            continue;
        }
        let content_type = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|c| c.to_str().ok())
            .map(str::to_owned);
        let (body, cut) = read_body(response, web.config.max_bytes, &url).await?;
        return Ok(Fetched::Page(Page {
            url,
            status,
            content_type,
            body,
            cut,
            redirects,
        }));
    }
}

/// The body up to `max` bytes; `true` when there was more (the rest is not read).
async fn read_body(
    mut response: reqwest::Response,
    max: u64,
    url: &Url,
) -> Result<(Vec<u8>, bool), ToolError> {
    let max = usize::try_from(max).unwrap_or(usize::MAX);
    let mut body = Vec::new();
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                let room = max - body.len();
                if chunk.len() > room {
                    body.extend_from_slice(&chunk[..room]);
                    return Ok((body, true));
                }
                body.extend_from_slice(&chunk);
            }
            Ok(None) => return Ok((body, false)),
            Err(e) => {
                return Err(ToolError::new(format!(
                    "the body of {url} broke off after {}: {}",
                    human(body.len() as u64),
                    describe(&e)
                )));
            }
        }
    }
}

fn refused(text: &str, url: &Url) -> ToolError {
    ToolError::new(format!("not fetched: {text}"))
        .with_meta("url", url.as_str())
        .with_meta("refused", true)
}

/// A reqwest error with its causes, on one line (`timed out`, `connection refused`).
fn describe(err: &reqwest::Error) -> String {
    let mut text = if err.is_timeout() {
        "timed out ([web] timeout sets the seconds a fetch may take)".to_owned()
    } else {
        err.to_string()
    };
    let mut source = std::error::Error::source(err);
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

/// Bytes for people (`12.3 KB`).
pub(crate) fn human(bytes: u64) -> String {
    match bytes {
        b if b < 1024 => format!("{b} bytes"),
        b if b < 1024 * 1024 => format!("{:.1} KB", b as f64 / 1024.0),
        b => format!("{:.1} MiB", b as f64 / (1024.0 * 1024.0)),
    }
}

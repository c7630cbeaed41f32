//! `web_search`: a query to the configured SearXNG-compatible backend, answered with titles,
//! URLs and snippets.

use lathe_runtime::tool::{ToolError, ToolResult};
use lathe_runtime::{Effect, Session, Tool, ToolContext, ToolHints, ToolKind, ToolOutput};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use url::Url;

use crate::guard::refusal_in;
use crate::state;

/// Searches the web and returns results as title, URL and snippet. Use it to find pages
/// (documentation, an error message, a crate), then read the ones that matter with
/// web_fetch.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct WebSearchInput {
    /// What to search for.
    pub query: String,
    /// How many results to return, 1 to 20. Default 8.
    pub limit: Option<u32>,
}

/// The `web_search` tool: offered only when `[web] search_url` is configured.
#[derive(Debug, Clone, Copy, Default)]
pub struct WebSearchTool;

/// The most results one call returns.
const MAX_RESULTS: u32 = 20;

/// The longest snippet shown, in characters.
const MAX_SNIPPET: usize = 400;

fn backend(session: &Session) -> Option<Url> {
    state(session)
        .config
        .search_url
        .as_deref()
        .and_then(|u| Url::parse(u).ok())
}

impl Tool for WebSearchTool {
    const NAME: &'static str = "web_search";
    // Few tasks need it: behind `more_tools` in the compact profile (small windows).
    const ON_DEMAND: bool = true;
    const ALIASES: &'static [&'static str] = &["websearch", "search_web"];
    type Input = WebSearchInput;

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

    fn offered(&self, session: &Session) -> bool {
        backend(session).is_some()
    }

    fn effects(&self, _input: &Self::Input, session: &Session) -> Vec<Effect> {
        match backend(session) {
            Some(url) => vec![Effect::Fetch {
                host: url.host_str().unwrap_or_default().to_owned(),
            }],
            // Nothing is fetched: the call says no backend is configured.
            None => vec![Effect::OwnState { changes: false }],
        }
    }

    fn title(&self, input: &Self::Input) -> String {
        format!("web_search {}", input.query.trim())
    }

    async fn run(&self, input: Self::Input, ctx: ToolContext) -> ToolResult {
        let web = state(&ctx.session);
        let Some(mut url) = web
            .config
            .search_url
            .as_deref()
            .and_then(|u| Url::parse(u).ok())
        else {
            return Err(ToolError::new(match &web.config.search_url {
                Some(bad) => format!(
                    "[web] search_url `{bad}` is not a URL; the user can set it to a \
                     SearXNG instance such as http://127.0.0.1:8888/search"
                ),
                None => "no search backend is configured: the user can set [web] search_url \
                         to a SearXNG instance (such as http://127.0.0.1:8888/search); until \
                         then, fetch pages you know with web_fetch"
                    .to_owned(),
            }));
        };
        let query = input.query.trim();
        if query.is_empty() {
            return Err(ToolError::new("the query is empty: say what to search for"));
        }
        let limit = input.limit.unwrap_or(8).clamp(1, MAX_RESULTS) as usize;
        url.query_pairs_mut()
            .append_pair("q", query)
            .append_pair("format", "json");
        let client = web.client().map_err(ToolError::new)?;
        let request = async {
            let response = client.get(url.clone()).send().await?;
            let status = response.status();
            let body = response.bytes().await?;
            Ok::<_, reqwest::Error>((status, body))
        };
        let (status, body) = tokio::select! {
            r = request => match r {
                Ok(r) => r,
                Err(e) => {
                    let why = refusal_in(&e).map_or_else(|| e.to_string(), |r| r.to_string());
                    return Err(ToolError::new(format!(
                        "the search backend {} did not answer: {why}",
                        url.host_str().unwrap_or_default()
                    )));
                }
            },
            () = ctx.cancel.cancelled() => return Err(ToolError::new("the search was stopped")),
        };
        if !status.is_success() {
            return Err(ToolError::new(format!(
                "the search backend answered HTTP {}{}",
                status.as_u16(),
                if status.as_u16() == 403 {
                    " (a SearXNG instance needs `json` in `search.formats` of its settings)"
                } else {
                    ""
                }
            )));
        }
        let Ok(value) = serde_json::from_slice::<Value>(&body) else {
            return Err(ToolError::new(
                "the search backend did not answer with JSON: is [web] search_url a \
                 SearXNG-compatible endpoint (`/search`, answering `format=json`)?",
            ));
        };
        let results: Vec<(String, String, String)> = value["results"]
            .as_array()
            .map(|list| {
                list.iter()
                    .filter_map(|r| {
                        let url = r["url"].as_str()?.trim().to_owned();
                        let title = r["title"].as_str().unwrap_or(&url).trim().to_owned();
                        let snippet = r["content"].as_str().unwrap_or("").trim().to_owned();
                        Some((one_line(&title, 200), url, one_line(&snippet, MAX_SNIPPET)))
                    })
                    .take(limit)
                    .collect()
            })
            .unwrap_or_default();
        if results.is_empty() {
            return Ok(
                ToolOutput::ok(format!("no results for \"{query}\"")).with_meta("results", 0)
            );
        }
        let mut text = format!("results for \"{query}\":\n");
        for (i, (title, url, snippet)) in results.iter().enumerate() {
            text.push_str(&format!("\n{}. {title}\n   {url}\n", i + 1));
            if !snippet.is_empty() {
                text.push_str(&format!("   {snippet}\n"));
            }
        }
        text.push_str("\nread a page with web_fetch");
        Ok(ToolOutput::ok(text)
            .with_found(format!(
                "{} result{}",
                results.len(),
                if results.len() == 1 { "" } else { "s" }
            ))
            .with_meta("results", results.len()))
    }
}

/// Text on one line, at most `max` characters.
fn one_line(text: &str, max: usize) -> String {
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.chars().count() <= max {
        return line;
    }
    let cut: String = line.chars().take(max).collect();
    format!("{cut}…")
}

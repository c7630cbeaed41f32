//! lathe-web: the web tools of Lathe's runtime, usable alone, by the agent and over MCP.
//!
//! * [`WebFetchTool`] (`web_fetch`: `url`, `offset`, `limit`) fetches a page with a timeout, a
//!   redirect limit and a size limit, decodes the charset the server declares (or the page's
//!   own `<meta charset>`), and answers with readable Markdown for HTML (the article, found by
//!   a readability extractor, then converted), pretty-printed JSON, or the text as it is. Long
//!   pages are paged by lines like `read_file`; the converted page is kept in the session's
//!   state directory, so paging does not fetch again.
//! * [`WebSearchTool`] (`web_search`: `query`, `limit`) asks a SearXNG-compatible JSON backend
//!   (`[web] search_url`); it is offered only when one is configured.
//!
//! Fetching is a permission: each call's effect is [`Effect::Fetch`](lathe_runtime::Effect) with
//! the host, which the gate judges with `fetch(HOST)` rules. Loopback, private, link-local,
//! shared (CGNAT), metadata, unspecified and multicast addresses are refused unless an allow
//! rule names the host or the address ([`address::restricted`]): checked on the addresses DNS
//! returns, in the resolver the connection itself uses (so the address connected to is the one
//! checked), and on every redirect, which is followed by the tool one hop at a time. A redirect
//! to another host is not followed: the model reads where it leads and fetches it with a call
//! of its own, which the gate judges for that host.
//!
//! ```no_run
//! # fn demo(session: &lathe_runtime::Session) {
//! // The registry of a front end: usually the built-in tools (`lathe_tools::builtin()`).
//! let mut registry = lathe_runtime::Registry::new();
//! lathe_web::register(&mut registry);
//! lathe_web::configure(session, lathe_web::WebConfig::default(), &Default::default());
//! # }
//! ```
#![deny(missing_docs)]

use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use lathe_policy::{AnalysisContext, PermissionsConfig, Rule};
use lathe_runtime::{Registry, Session};
use serde::{Deserialize, Serialize};

pub mod address;
mod convert;
mod fetch;
mod guard;
mod search;

pub use fetch::{WebFetchInput, WebFetchTool};
pub use guard::Refusal;
pub use search::{WebSearchInput, WebSearchTool};

/// The `[web]` table of the configuration.
///
/// ```toml
/// [web]
/// timeout = 30            # seconds for a whole fetch
/// max_bytes = 5242880     # bytes read of a body; the rest is cut, and the result says so
/// max_redirects = 5
/// search_url = "http://127.0.0.1:8888/search"   # a SearXNG instance: web_search is offered
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WebConfig {
    /// Seconds a fetch may take, connection and body included. By default, 30.
    pub timeout: u64,
    /// The most bytes of a body read; a longer one is cut there. By default, 5 MiB.
    pub max_bytes: u64,
    /// Redirects followed before giving up. By default, 5.
    pub max_redirects: u32,
    /// A SearXNG-compatible search endpoint (`https://searx.example/search`): queried with
    /// `?q=QUERY&format=json`. Without it, `web_search` is not offered.
    pub search_url: Option<String>,
}

impl Default for WebConfig {
    fn default() -> Self {
        WebConfig {
            timeout: 30,
            max_bytes: 5 * 1024 * 1024,
            max_redirects: 5,
            search_url: None,
        }
    }
}

/// What the web tools of one session use: the configuration, the guard, one HTTP client.
pub(crate) struct WebState {
    pub(crate) config: WebConfig,
    pub(crate) guard: Arc<guard::Guard>,
    client: OnceLock<Result<reqwest::Client, String>>,
}

impl WebState {
    fn new(config: WebConfig, permissions: &PermissionsConfig) -> Self {
        let ctx = AnalysisContext::new("/", "/");
        let rules = permissions
            .allow
            .iter()
            .chain(&permissions.ask)
            .filter_map(|r| Rule::parse(r, &ctx).ok())
            .collect();
        let mut exempt = guard::proxy_hosts();
        if let Some(host) = config
            .search_url
            .as_deref()
            .and_then(|u| url::Url::parse(u).ok())
            .and_then(|u| u.host_str().map(str::to_owned))
        {
            exempt.push(host);
        }
        WebState {
            config,
            guard: Arc::new(guard::Guard::new(rules, exempt)),
            client: OnceLock::new(),
        }
    }

    /// The session's client: no automatic redirects (the tool follows them, checking each),
    /// proxies from the environment, every name resolved through the guard.
    pub(crate) fn client(&self) -> Result<&reqwest::Client, String> {
        self.client
            .get_or_init(|| {
                reqwest::Client::builder()
                    .redirect(reqwest::redirect::Policy::none())
                    .timeout(Duration::from_secs(self.config.timeout.max(1)))
                    .connect_timeout(Duration::from_secs(self.config.timeout.clamp(1, 10)))
                    .user_agent(concat!("lathe/", env!("CARGO_PKG_VERSION"), " (web_fetch)"))
                    .dns_resolver(Arc::new(guard::GuardedResolver(Arc::clone(&self.guard))))
                    .build()
                    .map_err(|e| format!("cannot set up the HTTP client: {e}"))
            })
            .as_ref()
            .map_err(Clone::clone)
    }
}

struct Slot(Mutex<Arc<WebState>>);

/// Sets up the web tools for `session`: the `[web]` configuration, and the `[permissions]`
/// rules whose `fetch(HOST)` rules in `allow` or `ask` let a host reach a restricted address
/// (the gate still judges each fetch by all the rules). Without it, the
/// defaults apply (no search backend, no restricted address reachable).
pub fn configure(session: &Session, config: WebConfig, permissions: &PermissionsConfig) {
    let state = Arc::new(WebState::new(config, permissions));
    let slot = session.extension(|| Slot(Mutex::new(Arc::clone(&state))));
    *slot.0.lock().unwrap_or_else(PoisonError::into_inner) = state;
}

pub(crate) fn state(session: &Session) -> Arc<WebState> {
    let slot = session.extension(|| {
        Slot(Mutex::new(Arc::new(WebState::new(
            WebConfig::default(),
            &PermissionsConfig::default(),
        ))))
    });
    Arc::clone(&slot.0.lock().unwrap_or_else(PoisonError::into_inner))
}

/// Adds `web_fetch` and `web_search` to a registry.
pub fn register(registry: &mut Registry) {
    registry.register(WebFetchTool);
    registry.register(WebSearchTool);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allow_and_ask_rules_name_hosts_for_the_guard_deny_rules_do_not() {
        let loopback = "127.0.0.1".parse().unwrap();
        let with = |permissions: PermissionsConfig| {
            WebState::new(WebConfig::default(), &permissions)
                .guard
                .check("localhost", loopback)
                .is_ok()
        };
        let rule = || vec!["fetch(localhost)".to_owned()];
        assert!(with(PermissionsConfig {
            allow: rule(),
            ..PermissionsConfig::default()
        }));
        assert!(with(PermissionsConfig {
            ask: rule(),
            ..PermissionsConfig::default()
        }));
        assert!(!with(PermissionsConfig {
            deny: rule(),
            ..PermissionsConfig::default()
        }));
        // The configured search backend is the user's own.
        let search = WebState::new(
            WebConfig {
                search_url: Some("http://localhost:8888/search".into()),
                ..WebConfig::default()
            },
            &PermissionsConfig::default(),
        );
        assert!(search.guard.check("localhost", loopback).is_ok());
    }

    /// The connection itself goes through the guard: a request that skipped the tool's own
    /// check (as a name whose DNS answer changed after it would) still cannot reach loopback.
    #[tokio::test]
    async fn the_client_resolves_through_the_guard() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let web = WebState::new(WebConfig::default(), &PermissionsConfig::default());
        let err = web
            .client()
            .unwrap()
            .get(format!("http://localhost:{port}/"))
            .send()
            .await
            .unwrap_err();
        let refusal = guard::refusal_in(&err).unwrap_or_else(|| panic!("not refused: {err:?}"));
        assert_eq!(refusal.host, "localhost");
        assert_eq!(refusal.range, "loopback");
        // Named by a rule, the same request connects (and the listener sees it).
        let allowed = WebState::new(
            WebConfig::default(),
            &PermissionsConfig {
                allow: vec!["fetch(localhost)".into()],
                ..PermissionsConfig::default()
            },
        );
        let accept = std::thread::spawn(move || listener.accept().map(|_| ()));
        let _ = allowed
            .client()
            .unwrap()
            .get(format!("http://localhost:{port}/"))
            .timeout(Duration::from_millis(200))
            .send()
            .await;
        accept.join().unwrap().unwrap();
    }
}

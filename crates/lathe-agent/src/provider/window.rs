//! The window the server really has, and the sign that it cut a prompt.
//!
//! Lathe's window is configured (`[model] context_window`, by default 32,768 tokens), but the
//! server decides: Ollama caps `num_ctx` at the model's trained context length, a llama.cpp
//! server started with `-c 4096` has 4,096 tokens per slot whatever the client thinks, vLLM
//! refuses more than `max_model_len`. [`Provider::served_window`](super::Provider::served_window)
//! asks the server (the OpenAI-compatible ones at `/props`, `/v1/models`, `/api/v0/models`),
//! and [`WindowChoice`] takes the smaller of the two, with one note when the server's is
//! smaller.
//!
//! A server that has a smaller window than the request may cut the prompt instead of refusing
//! it (Ollama drops the oldest messages and reports the tokens it kept): [`Truncation::detect`]
//! tells that from the server's own count of the prompt.

use serde_json::Value;

use super::http::HttpClient;

/// The window Lathe keeps the conversation within: the configured one, or the server's when
/// that is smaller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WindowChoice {
    /// The window to use, in tokens.
    pub window: u32,
    /// What the configuration says (or the default).
    pub configured: u32,
    /// What the server says it has, when it says.
    pub served: Option<u32>,
}

impl WindowChoice {
    /// The smaller of `configured` and `served` (a served window of 0 is no answer).
    pub fn new(configured: u32, served: Option<u32>) -> Self {
        let served = served.filter(|&s| s > 0);
        WindowChoice {
            window: served.map_or(configured, |s| s.min(configured)),
            configured,
            served,
        }
    }

    /// What to tell the user, once, when the server's window is smaller than the configured
    /// one: `the server's window is 4,096 tokens, smaller than the configured 32,768; using
    /// 4,096 (set [model] context_window or --context-window to silence this)`.
    pub fn note(&self) -> Option<String> {
        let served = self.served.filter(|&s| s < self.configured)?;
        Some(format!(
            "the server's window is {} tokens, smaller than the configured {}; using {} (set \
             [model] context_window or --context-window to silence this)",
            thousands(u64::from(served)),
            thousands(u64::from(self.configured)),
            thousands(u64::from(self.window)),
        ))
    }
}

/// A server counted fewer prompt tokens than there are by more than any estimate is off:
/// it cut the prompt to fit its window (Ollama keeps the newest messages that fit, and the
/// model answers without the rest).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Truncation {
    /// The estimated tokens of the request sent.
    pub sent: u64,
    /// The prompt tokens the server reported.
    pub reported: u64,
}

/// A server's count under this share of the estimate is a cut, not an estimate that was off:
/// the estimate (3.5 bytes a token) is high by at most a third for prose and low for code.
const TRUNCATED_BELOW_PERCENT: u64 = 50;
/// ...and it must be short by at least this many tokens (a tiny prompt's count varies more).
const TRUNCATED_BY_AT_LEAST: u64 = 256;
/// A server that cuts a prompt keeps a window's worth of it, and no server has a window this
/// small; a lower count is the count of the part not cached (older Ollama and LM Studio
/// report that), not a cut.
const KEPT_AT_LEAST: u64 = 512;

impl Truncation {
    /// A cut when the server reported `reported` prompt tokens for a request estimated at
    /// `sent`: under half, and by at least 256 tokens. A count under 512 is no cut (a server
    /// that cuts keeps a window's worth; old servers count only the part they had not cached).
    pub fn detect(sent: u64, reported: u64) -> Option<Truncation> {
        let cut = reported >= KEPT_AT_LEAST
            && reported * 100 < sent * TRUNCATED_BELOW_PERCENT
            && sent - reported >= TRUNCATED_BY_AT_LEAST;
        cut.then_some(Truncation { sent, reported })
    }

    /// The warning for the user, naming the window Lathe assumed.
    pub fn warning(&self, window: u64) -> String {
        format!(
            "the model server read only {} of the about {} prompt tokens sent: it cut the prompt \
             to fit a window smaller than the {} tokens Lathe assumed, so the model did not see \
             all of it. Set [model] context_window (or --context-window) to the server's window \
             (for Ollama, the model's context length; for llama.cpp, its -c)",
            thousands(self.reported),
            thousands(self.sent),
            thousands(window)
        )
    }
}

/// `32768` -> `32,768`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The window an OpenAI-compatible server serves `model` with, asked the ways the servers
/// answer, first answer wins:
/// - llama.cpp: `GET /props`, `default_generation_settings.n_ctx` (per slot: `-c` divided by
///   `--parallel`), or `n_ctx` at the top in older builds;
/// - vLLM: `GET {base}/models`, the model's `max_model_len`;
/// - LM Studio: `GET /api/v0/models`, the model's `loaded_context_length` (as loaded), else
///   its `max_context_length`.
///
/// Each is asked once, without retries; a server that answers none of them has no known
/// window (`None`), and the configured one stands.
pub(crate) async fn served_window_openai(http: &HttpClient, model: &str) -> Option<u32> {
    let base = http.base_url().trim_end_matches('/').to_owned();
    let root = server_root(&base);
    if let Some(props) = http.probe_json(&format!("{root}/props")).await
        && let Some(n) = llama_cpp_window(&props)
    {
        return Some(n);
    }
    if let Some(models) = http.probe_json(&format!("{base}/models")).await
        && let Some(n) = listed_window(&models, model, &["max_model_len"])
    {
        return Some(n);
    }
    if let Some(models) = http.probe_json(&format!("{root}/api/v0/models")).await
        && let Some(n) = listed_window(
            &models,
            model,
            &["loaded_context_length", "max_context_length"],
        )
    {
        return Some(n);
    }
    None
}

/// `http://host:8080/v1` -> `http://host:8080`: where `/props` and `/api/v0` live.
fn server_root(base: &str) -> String {
    match reqwest::Url::parse(base) {
        Ok(mut url) => {
            url.set_path("");
            url.set_query(None);
            url.as_str().trim_end_matches('/').to_owned()
        }
        Err(_) => base.trim_end_matches("/v1").to_owned(),
    }
}

fn positive(value: &Value) -> Option<u32> {
    value
        .as_u64()
        .filter(|&n| n > 0)
        .map(|n| u32::try_from(n).unwrap_or(u32::MAX))
}

/// llama.cpp's `/props`: the slot's `n_ctx`.
fn llama_cpp_window(props: &Value) -> Option<u32> {
    positive(&props["default_generation_settings"]["n_ctx"]).or_else(|| positive(&props["n_ctx"]))
}

/// A model list (`{"data": [...]}`): the first of `fields` the entry of `model` has (the only
/// entry, when no id matches and there is one).
fn listed_window(list: &Value, model: &str, fields: &[&str]) -> Option<u32> {
    let entries = list["data"].as_array()?;
    let entry = entries
        .iter()
        .find(|m| m["id"].as_str() == Some(model))
        .or(match entries.as_slice() {
            [only] => Some(only),
            _ => None,
        })?;
    fields.iter().find_map(|field| positive(&entry[*field]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_smaller_window_wins_and_only_a_smaller_server_is_told() {
        let smaller = WindowChoice::new(32_768, Some(4_096));
        assert_eq!(smaller.window, 4_096);
        assert_eq!(
            smaller.note().unwrap(),
            "the server's window is 4,096 tokens, smaller than the configured 32,768; using \
             4,096 (set [model] context_window or --context-window to silence this)"
        );
        let larger = WindowChoice::new(8_192, Some(131_072));
        assert_eq!((larger.window, larger.note()), (8_192, None));
        let unknown = WindowChoice::new(8_192, None);
        assert_eq!((unknown.window, unknown.note()), (8_192, None));
        assert_eq!(WindowChoice::new(8_192, Some(0)).window, 8_192);
    }

    #[test]
    fn a_cut_is_a_count_under_half_of_what_was_sent() {
        assert_eq!(
            Truncation::detect(6_000, 2_000),
            Some(Truncation {
                sent: 6_000,
                reported: 2_000
            })
        );
        // An estimate that is off, a tiny prompt, a missing count: no cut.
        assert_eq!(Truncation::detect(6_000, 4_500), None);
        assert_eq!(Truncation::detect(400, 100), None);
        assert_eq!(Truncation::detect(6_000, 0), None);
        assert_eq!(Truncation::detect(6_000, 300), None);
        assert_eq!(Truncation::detect(6_000, 7_000), None);
    }

    #[test]
    fn numbers_get_thousands_separators() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(4_096), "4,096");
        assert_eq!(thousands(1_234_567), "1,234,567");
    }

    #[test]
    fn answers_of_each_server_kind() {
        assert_eq!(
            llama_cpp_window(&json!({"default_generation_settings": {"n_ctx": 4096}})),
            Some(4096)
        );
        assert_eq!(llama_cpp_window(&json!({"n_ctx": 2048})), Some(2048));
        assert_eq!(llama_cpp_window(&json!({"error": "no"})), None);
        let vllm = json!({"data": [{"id": "a", "max_model_len": 8192}, {"id": "b", "max_model_len": 4096}]});
        assert_eq!(listed_window(&vllm, "b", &["max_model_len"]), Some(4096));
        assert_eq!(listed_window(&vllm, "c", &["max_model_len"]), None);
        let lm = json!({"data": [{"id": "m", "max_context_length": 32768, "loaded_context_length": 4096}]});
        let fields = ["loaded_context_length", "max_context_length"];
        assert_eq!(listed_window(&lm, "m", &fields), Some(4096));
        assert_eq!(
            listed_window(
                &json!({"data": [{"id": "m", "max_context_length": 32768}]}),
                "x",
                &fields
            ),
            Some(32768)
        );
        assert_eq!(server_root("http://h:8080/v1"), "http://h:8080");
        assert_eq!(server_root("http://h:1234/api/openai"), "http://h:1234");
    }
}

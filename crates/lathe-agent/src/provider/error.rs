//! Errors from talking to a model server, kept structured: callers branch on the variant (and
//! the HTTP status), never on the message text.

use std::time::Duration;

use super::ProviderKind;
use crate::text::cut;

/// Something went wrong talking to the model server.
#[derive(Debug, thiserror::Error)]
pub enum ProviderError {
    /// Nothing accepted the connection.
    #[error("{}", no_server_message(*.kind, .url))]
    NoServer {
        /// The base URL that was tried.
        url: String,
        /// The protocol that was asked for: what to start there differs.
        kind: ProviderKind,
    },
    /// The host name of the base URL does not resolve: a typo or no network, not a server
    /// that is down.
    #[error(
        "cannot resolve the host name '{host}' of the model server at {url}: check the name in --base-url (or OLLAMA_HOST, OPENAI_BASE_URL, [model] base_url) and the network"
    )]
    UnknownHost {
        /// The host name.
        host: String,
        /// The base URL that was tried.
        url: String,
    },
    /// The server refused the request for want of a valid key (401 or 403).
    #[error("{}", unauthorized_message(*.status, .url, .body, *.key_sent))]
    Unauthorized {
        /// 401 or 403.
        status: u16,
        /// The server.
        url: String,
        /// What the server said, cut to a readable length.
        body: String,
        /// Whether a key was sent at all.
        key_sent: bool,
    },
    /// The server at the URL speaks the other protocol: an OpenAI-compatible server (or
    /// Ollama's `/v1`) reached with the Ollama provider.
    #[error(
        "the server at {url} does not answer Ollama's API (/api/...) but answers the OpenAI-compatible one: pass --provider openai{}",
        if url.trim_end_matches('/').ends_with("/v1") { ", or drop the /v1 from the URL to use Ollama's own API" } else { "" }
    )]
    WrongProtocol {
        /// The base URL that was tried.
        url: String,
    },
    /// The server does not have the model.
    #[error("{}", unknown_model_message(.model, .url, .available))]
    UnknownModel {
        /// The model asked for.
        model: String,
        /// The server.
        url: String,
        /// The models the server has.
        available: Vec<String>,
    },
    /// The server refused a request because it carried tools.
    #[error("model '{model}' does not support native tool calls: {message}")]
    ToolsUnsupported {
        /// The model.
        model: String,
        /// What the server said.
        message: String,
    },
    /// The server answered with an error status.
    #[error("model server answered http {status}: {body}")]
    Http {
        /// Status code.
        status: u16,
        /// The body (the server's `error` message when it sent JSON), cut to a readable length.
        body: String,
        /// The server's `Retry-After`, when it sent one.
        retry_after: Option<Duration>,
    },
    /// The server refused the request as longer than the model's context window. Recognised
    /// by status and shape (`context_overflow` in the source): llama.cpp's `exceed_context_size_error`,
    /// OpenAI's `context_length_exceeded` code, vLLM's, LM Studio's and Ollama's 400s.
    #[error("{}", overflow_message(*.status, *.prompt_tokens, *.window, .body))]
    ContextOverflow {
        /// The status (400 from every server seen so far).
        status: u16,
        /// The prompt's tokens as the server counted them, when it said.
        prompt_tokens: Option<u64>,
        /// The server's window in tokens, when it said.
        window: Option<u64>,
        /// What the server said, cut to a readable length.
        body: String,
    },
    /// The connection failed after it was made and before a response (reset, closed).
    #[error("connection to the model server at {url} failed: {message}")]
    Transport {
        /// The server.
        url: String,
        /// What happened.
        message: String,
    },
    /// The stream reported an error after output had started (the server's own message).
    #[error("the model stream failed: {0}")]
    MidStream(String),
    /// The connection broke, or the body ended, after output had started and before the model
    /// finished: the answer is cut, and asking again may work.
    #[error("connection to the model lost mid-answer: {0}")]
    ConnectionLost(String),
    /// Nothing arrived for longer than the idle timeout while waiting for the answer.
    #[error(
        "the model sent nothing for {} s, the idle timeout (raise [model] idle_timeout if the model is slow to start)",
        .after.as_secs()
    )]
    Stalled {
        /// How long it was silent.
        after: Duration,
    },
    /// The server sent something that is not the expected wire format.
    #[error("unexpected response from the model server: {0}")]
    Protocol(String),
    /// The configuration cannot work (a base URL that does not parse).
    #[error("invalid model server configuration: {0}")]
    Config(String),
}

impl ProviderError {
    /// Whether a request that failed this way, before any output, may be sent again.
    pub fn is_transient(&self) -> bool {
        match self {
            ProviderError::Transport { .. } => true,
            ProviderError::Http { status, .. } => RETRYABLE_STATUSES.contains(status),
            _ => false,
        }
    }

    /// Whether the answer was cut by the connection (lost, or silent past the idle timeout)
    /// rather than refused by the server: the turn may be asked for again.
    pub fn is_lost_mid_stream(&self) -> bool {
        matches!(
            self,
            ProviderError::ConnectionLost(_) | ProviderError::Stalled { .. }
        )
    }

    /// What the user reads while a transient failure is retried: why, and how long the wait is.
    pub(crate) fn retry_notice(&self, wait: Duration, retry: u32, retries: u32) -> String {
        let why = match self {
            ProviderError::Http { status: 429, .. } => {
                "model server rate-limited the request (429)".to_string()
            }
            ProviderError::Http { status, .. } if *status == 503 => {
                "model server busy (503)".to_string()
            }
            ProviderError::Http { status, .. } => format!("model server unavailable ({status})"),
            ProviderError::Transport { .. } => "connection to the model server failed".to_string(),
            other => other.to_string(),
        };
        format!(
            "{why}: retrying in {} (attempt {retry} of {retries})",
            seconds(wait)
        )
    }
}

/// `2 s`, `0.5 s`: whole seconds when the wait is whole.
fn seconds(wait: Duration) -> String {
    let ms = wait.as_millis();
    if ms.is_multiple_of(1000) {
        format!("{} s", ms / 1000)
    } else {
        format!("{:.1} s", wait.as_secs_f64())
    }
}

fn no_server_message(kind: ProviderKind, url: &str) -> String {
    match kind {
        ProviderKind::Ollama => format!(
            "no model server at {url}: start Ollama (ollama serve), or pass --base-url with the address of a running server"
        ),
        ProviderKind::OpenAi => format!(
            "no model server at {url}: start an OpenAI-compatible server there (llama-server -m MODEL.gguf --port 8080, vllm serve MODEL), or pass --base-url with the address of a running one"
        ),
    }
}

fn unauthorized_message(status: u16, url: &str, body: &str, key_sent: bool) -> String {
    let what = if key_sent {
        "refused the API key"
    } else {
        "needs an API key and none was sent"
    };
    let body = if body.is_empty() {
        String::new()
    } else {
        format!(": {body}")
    };
    format!(
        "the model server at {url} {what} (http {status}{body}); set OPENAI_API_KEY, or api_key under [model] in the configuration"
    )
}

fn overflow_message(status: u16, prompt: Option<u64>, window: Option<u64>, body: &str) -> String {
    let counts = match (prompt, window) {
        (Some(p), Some(w)) => format!(" ({p} prompt tokens for a window of {w})"),
        (None, Some(w)) => format!(" (a window of {w} tokens)"),
        (Some(p), None) => format!(" ({p} prompt tokens)"),
        (None, None) => String::new(),
    };
    format!(
        "the model server refused the request as longer than the model's context window{counts} (http {status}: {body})"
    )
}

/// What a server's error answer says about a request too long for its window: `Some((prompt
/// tokens, window))` (each when the server gave it) when the answer is a context overflow,
/// `None` when it is something else. By shape first, then by the server's own wording where
/// its shape has no field for it (found in the servers' code and issues):
/// - llama.cpp: 400 `{"error":{"code":400,"type":"exceed_context_size_error","n_prompt_tokens":
///   4476,"n_ctx":4096,"message":"request (4476 tokens) exceeds the available context size
///   (4096 tokens), ..."}}`: the type and the counts.
/// - OpenAI and servers copying it: `{"error":{"code":"context_length_exceeded",...}}`.
/// - vLLM: 400 `{"object":"error","message":"This model's maximum context length is 16384
///   tokens. However, you requested 122946 tokens (112946 in the messages, 10000 in the
///   completion)...","type":"BadRequestError","code":400}` (newer releases: `{"error":{...}}`
///   with `param: "input_tokens"` and "your prompt contains at least N input tokens").
/// - LM Studio: 400 `{"error":"Trying to keep the first 15857 tokens when context the
///   overflows. However, the model is loaded with context length of only 4096 tokens, ..."}`,
///   or "Reached context length of 32000 tokens".
/// - Ollama (when it does not truncate): 400 `{"error":"the input length exceeds the context
///   length"}`.
pub(crate) fn context_overflow(status: u16, body: &str) -> Option<(Option<u64>, Option<u64>)> {
    if !matches!(status, 400 | 413 | 422 | 500) {
        return None;
    }
    let value: serde_json::Value = serde_json::from_str(body).ok()?;
    let error = value.get("error");
    let number = |v: Option<&serde_json::Value>| v.and_then(serde_json::Value::as_u64);
    if let Some(e) = error.filter(|e| e.is_object()) {
        let kind = e.get("type").and_then(|t| t.as_str()).unwrap_or("");
        let code = e.get("code").and_then(|t| t.as_str()).unwrap_or("");
        if kind == "exceed_context_size_error"
            || (e.get("n_prompt_tokens").is_some() && e.get("n_ctx").is_some())
        {
            return Some((number(e.get("n_prompt_tokens")), number(e.get("n_ctx"))));
        }
        let message = e.get("message").and_then(|m| m.as_str()).unwrap_or("");
        if code == "context_length_exceeded" {
            return Some(overflow_counts(message));
        }
        // vLLM's newer shape: an OpenAI error object with its own wording.
        if status == 400 && says_overflow(message) {
            return Some(overflow_counts(message));
        }
        return None;
    }
    // vLLM's older shape: `{"object":"error","message":...}`.
    if value.get("object").and_then(|o| o.as_str()) == Some("error")
        && let Some(message) = value.get("message").and_then(|m| m.as_str())
    {
        return says_overflow(message).then(|| overflow_counts(message));
    }
    // Ollama's and LM Studio's `{"error":"..."}`.
    let message = error.and_then(|e| e.as_str())?;
    says_overflow(message).then(|| overflow_counts(message))
}

/// Whether a server's message (of a shape with no field for it) says the prompt overflowed.
fn says_overflow(message: &str) -> bool {
    const PHRASES: &[&str] = &[
        "maximum context length",
        "exceeds the context length",
        "exceeds the available context size",
        "context the overflows",
        "context overflow",
        "reached context length",
        "input length exceeds",
        "prompt is too long",
    ];
    let lower = message.to_ascii_lowercase();
    PHRASES.iter().any(|p| lower.contains(p))
}

/// The prompt tokens and the window named in an overflow message, when it names them (the
/// patterns in order of preference: vLLM's "you requested N tokens" counts the output too).
fn overflow_counts(message: &str) -> (Option<u64>, Option<u64>) {
    static PATTERNS: std::sync::LazyLock<(Vec<regex::Regex>, Vec<regex::Regex>)> =
        std::sync::LazyLock::new(|| {
            let compile = |patterns: &[&str]| {
                patterns
                    .iter()
                    .map(|p| regex::Regex::new(p).expect("the overflow patterns are valid"))
                    .collect()
            };
            (
                compile(&[
                    r"(\d+) in the messages",
                    r"(?i)at least (\d+) input tokens",
                    r"(?i)keep the first (\d+) tokens",
                    r"(?i)request \((\d+) tokens\)",
                    r"(?i)you requested (\d+) tokens",
                ]),
                compile(&[
                    r"(?i)maximum context length is (\d+)",
                    r"(?i)context length of (?:only )?(\d+)",
                    r"(?i)context size \((\d+) tokens\)",
                ]),
            )
        });
    let first = |patterns: &[regex::Regex]| {
        patterns.iter().find_map(|re| {
            re.captures(message)
                .and_then(|c| c.get(1))
                .and_then(|m| m.as_str().parse::<u64>().ok())
        })
    };
    (first(&PATTERNS.0), first(&PATTERNS.1))
}

/// Statuses that mean "try again shortly": a proxy or server that is starting, overloaded or
/// restarting. A 500 is not here: Ollama uses it for model load failures that do not heal.
pub(crate) const RETRYABLE_STATUSES: &[u16] = &[429, 502, 503, 504];

fn unknown_model_message(model: &str, url: &str, available: &[String]) -> String {
    if available.is_empty() {
        format!(
            "model '{model}' is not on the model server at {url}, which has no models: pull one (ollama pull {model})"
        )
    } else {
        format!(
            "model '{model}' is not on the model server at {url}; it has: {} (use one of these, or pull it)",
            available.join(", ")
        )
    }
}

/// Whether an error body says the server cannot take `tools` for this model. Servers only say
/// so in prose, so this is the one place that reads their words:
/// - Ollama (native and `/v1`): `registry.ollama.ai/library/gemma:2b does not support tools`
/// - vLLM: `"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set`
/// - llama.cpp without `--jinja`: `tools param requires --jinja flag`
pub(crate) fn refuses_tools(body: &str) -> bool {
    const PHRASES: &[&str] = &[
        "does not support tools",
        "--enable-auto-tool-choice",
        "tools param requires --jinja",
        "tool calling is not supported",
        "tools are not supported",
    ];
    let lower = body.to_ascii_lowercase();
    PHRASES.iter().any(|p| lower.contains(p))
}

/// Whether an error answer to a request with a named `tool_choice` says the server does not
/// take one. What servers do, as found in their code and issues:
/// - llama.cpp's server reads only the string forms (`auto`, `none`, `required`): the object
///   form falls back to `auto` with a warning in its log (HTTP 200), and builds that check it
///   answer 400 or 500 with a message naming `tool_choice` (`Invalid tool_choice: ...`).
/// - vLLM forces a named function with guided decoding; tool parsers that cannot answer 400
///   (older releases 500: ``Invalid value for `tool_choice` ``).
/// - LM Studio answers 400 naming `tool_choice`.
///
/// So: a client error or a 500 whose message names the tool choice.
pub(crate) fn refuses_tool_choice(status: u16, body: &str) -> bool {
    let lower = body.to_ascii_lowercase();
    matches!(status, 400 | 422 | 500)
        && (lower.contains("tool_choice") || lower.contains("tool choice"))
}

/// The readable message in an error body: Ollama's `{"error": "..."}`, OpenAI's
/// `{"error": {"message": ...}}`, vLLM's `{"message": ...}`, or the text itself, cut to
/// `MAX_ERROR_BODY` characters.
pub(crate) fn error_message(body: &str) -> String {
    let text = match serde_json::from_str::<serde_json::Value>(body) {
        Ok(v) => {
            let msg = v
                .get("error")
                .and_then(|e| {
                    e.as_str().map(str::to_string).or_else(|| {
                        e.get("message")
                            .and_then(|m| m.as_str())
                            .map(str::to_string)
                    })
                })
                .or_else(|| {
                    v.get("message")
                        .and_then(|m| m.as_str())
                        .map(str::to_string)
                })
                .or_else(|| v.get("detail").and_then(|m| m.as_str()).map(str::to_string));
            msg.unwrap_or_else(|| body.trim().to_string())
        }
        Err(_) => body.trim().to_string(),
    };
    cut(&text, MAX_ERROR_BODY)
}

/// Error bodies are shown to users; an HTML error page should not flood the terminal.
const MAX_ERROR_BODY: usize = 600;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_users_can_act_on() {
        let e = ProviderError::NoServer {
            url: "http://127.0.0.1:11434".into(),
            kind: ProviderKind::Ollama,
        };
        assert!(e.to_string().contains("(ollama serve)"));
        let e = ProviderError::NoServer {
            url: "http://127.0.0.1:8080/v1".into(),
            kind: ProviderKind::OpenAi,
        };
        assert!(!e.to_string().contains("ollama"), "{e}");
        let e = ProviderError::UnknownModel {
            model: "x".into(),
            url: "u".into(),
            available: vec!["a".into(), "b".into()],
        };
        assert!(e.to_string().contains("it has: a, b"));
        let e = ProviderError::UnknownModel {
            model: "x".into(),
            url: "u".into(),
            available: vec![],
        };
        assert!(e.to_string().contains("no models"));
    }

    #[test]
    fn tool_refusals_from_each_server() {
        assert!(refuses_tools(
            "registry.ollama.ai/library/gemma:2b does not support tools"
        ));
        assert!(refuses_tools(
            "\"auto\" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set"
        ));
        assert!(refuses_tools("tools param requires --jinja flag"));
        assert!(!refuses_tools("model is loading"));
    }

    #[test]
    fn tool_choice_refusals() {
        assert!(refuses_tool_choice(500, "Invalid tool_choice: [object]"));
        assert!(refuses_tool_choice(
            400,
            "Invalid value for `tool_choice`: only \"auto\" is supported"
        ));
        assert!(refuses_tool_choice(
            422,
            "named tool choice is not supported"
        ));
        assert!(!refuses_tool_choice(503, "tool_choice: loading"));
        assert!(!refuses_tool_choice(400, "context length exceeded"));
    }

    #[test]
    fn error_messages_are_extracted_from_each_shape() {
        assert_eq!(error_message(r#"{"error":"boom"}"#), "boom");
        assert_eq!(
            error_message(r#"{"error":{"message":"bad","type":"x"}}"#),
            "bad"
        );
        assert_eq!(
            error_message(r#"{"object":"error","message":"vllm"}"#),
            "vllm"
        );
        assert_eq!(error_message("plain\n"), "plain");
        assert_eq!(
            error_message(&"é".repeat(700)).chars().count(),
            MAX_ERROR_BODY + 1
        );
    }

    #[test]
    fn context_overflows_from_each_server() {
        let llama = r#"{"error":{"code":400,"message":"request (4476 tokens) exceeds the available context size (4096 tokens), try increasing it","type":"exceed_context_size_error","n_prompt_tokens":4476,"n_ctx":4096}}"#;
        assert_eq!(context_overflow(400, llama), Some((Some(4476), Some(4096))));
        let vllm = r#"{"object":"error","message":"This model's maximum context length is 16384 tokens. However, you requested 122946 tokens (112946 in the messages, 10000 in the completion). Please reduce the length of the messages or completion.","type":"BadRequestError","param":null,"code":400}"#;
        assert_eq!(
            context_overflow(400, vllm),
            Some((Some(112946), Some(16384)))
        );
        let vllm_new = r#"{"error":{"message":"This model's maximum context length is 131072 tokens. However, you requested 128000 output tokens and your prompt contains at least 3073 input tokens, for a total of at least 131073 tokens.","type":"BadRequestError","param":"input_tokens","code":400}}"#;
        assert_eq!(
            context_overflow(400, vllm_new),
            Some((Some(3073), Some(131072)))
        );
        let lmstudio = r#"{"error":"Trying to keep the first 15857 tokens when context the overflows. However, the model is loaded with context length of only 4096 tokens, which is not enough. Try to load the model with a larger context length, or provide a shorter input"}"#;
        assert_eq!(
            context_overflow(400, lmstudio),
            Some((Some(15857), Some(4096)))
        );
        let ollama = r#"{"error":"the input length exceeds the context length"}"#;
        assert_eq!(context_overflow(400, ollama), Some((None, None)));
        let openai = r#"{"error":{"message":"This model's maximum context length is 8192 tokens.","type":"invalid_request_error","code":"context_length_exceeded"}}"#;
        assert_eq!(context_overflow(400, openai), Some((None, Some(8192))));
        // Other errors, and the same words under a status that is not a refusal, are not.
        assert_eq!(
            context_overflow(400, r#"{"error":"model is loading"}"#),
            None
        );
        assert_eq!(context_overflow(503, ollama), None);
        assert_eq!(context_overflow(400, "maximum context length"), None);
        assert_eq!(
            context_overflow(
                400,
                r#"{"error":{"message":"bad tool_choice","type":"invalid_request_error"}}"#
            ),
            None
        );
    }

    #[test]
    fn retry_notices() {
        let http = |status| ProviderError::Http {
            status,
            body: String::new(),
            retry_after: None,
        };
        assert_eq!(
            http(503).retry_notice(Duration::from_secs(2), 1, 3),
            "model server busy (503): retrying in 2 s (attempt 1 of 3)"
        );
        assert_eq!(
            http(502).retry_notice(Duration::from_millis(500), 2, 3),
            "model server unavailable (502): retrying in 0.5 s (attempt 2 of 3)"
        );
    }

    #[test]
    fn transient_errors() {
        let http = |status| ProviderError::Http {
            status,
            body: String::new(),
            retry_after: None,
        };
        assert!(http(503).is_transient());
        assert!(http(502).is_transient());
        assert!(!http(500).is_transient());
        assert!(!http(400).is_transient());
        assert!(
            ProviderError::Transport {
                url: "u".into(),
                message: "reset".into()
            }
            .is_transient()
        );
        assert!(
            !ProviderError::NoServer {
                url: "u".into(),
                kind: ProviderKind::Ollama
            }
            .is_transient()
        );
        assert!(!ProviderError::MidStream("x".into()).is_transient());
    }
}

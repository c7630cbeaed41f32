//! One connection to an MCP server (rmcp's client): starting it, calling its tools with
//! progress and cancellation, and starting it again once after it stopped.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, ClientConfig, ClientRequest, ProgressNotificationParam,
    ServerResult,
};
use rmcp::service::{NotificationContext, Peer, PeerRequestOptions, RoleClient, RunningService};
use rmcp::{ClientHandler, ServiceExt};
use serde_json::Value;
use tokio::io::AsyncReadExt;

use lathe_runtime::{
    ProgressSink, ToolContext, ToolError, ToolImage, ToolOutput, ToolProgress, ToolResult,
};

use lathe_config::mcp::{ServerConfig, Transport};

/// The calls in flight that listen for progress, by progress token (as JSON text).
type Listeners = Arc<Mutex<HashMap<String, ProgressSink>>>;

/// A server's elicitation request: a form it wants the user to fill.
pub struct Elicitation {
    /// The server's name.
    pub server: String,
    /// What it asks, in its words.
    pub message: String,
    /// The form: a JSON Schema object of flat properties.
    pub schema: Value,
}

/// Puts an [`Elicitation`] to the user: the content when they filled it, `None` when they
/// declined (or nobody can be asked).
pub type Elicit =
    Arc<dyn Fn(Elicitation) -> futures::future::BoxFuture<'static, Option<Value>> + Send + Sync>;

/// What Lathe tells servers about itself, and what it does with their requests: progress goes
/// to the call's listener; elicitation goes to the user when there is one to ask (chat), and
/// is declined otherwise.
#[derive(Clone)]
struct Handler {
    name: String,
    listeners: Listeners,
    elicit: Option<Elicit>,
}

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        let mut info = ClientConfig::default();
        info.client_info.name = "lathe".to_owned();
        info.client_info.version = env!("CARGO_PKG_VERSION").to_owned();
        if let Ok(capabilities) =
            serde_json::from_value(serde_json::json!({"elicitation": {"form": {}}}))
        {
            info.capabilities = capabilities;
        }
        info
    }

    async fn create_elicitation(
        &self,
        request: rmcp::model::ElicitRequestParams,
        _context: rmcp::service::RequestContext<RoleClient>,
    ) -> Result<rmcp::model::ElicitResult, rmcp::ErrorData> {
        let request = serde_json::to_value(&request).unwrap_or_default();
        let answer = match (&self.elicit, request.get("requestedSchema")) {
            (Some(elicit), Some(schema)) => {
                elicit(Elicitation {
                    server: self.name.clone(),
                    message: request["message"].as_str().unwrap_or_default().to_owned(),
                    schema: schema.clone(),
                })
                .await
            }
            _ => None,
        };
        let result = match answer {
            Some(content) => serde_json::json!({"action": "accept", "content": content}),
            None => serde_json::json!({"action": "decline"}),
        };
        serde_json::from_value(result)
            .map_err(|e| rmcp::ErrorData::internal_error(e.to_string(), None))
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let key = serde_json::to_string(&params.progress_token).unwrap_or_default();
        let sink = self
            .listeners
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&key)
            .cloned();
        if let Some(sink) = sink {
            let mut text = match params.total {
                Some(total) => format!("progress {}/{}", params.progress, total),
                None => format!("progress {}", params.progress),
            };
            if let Some(message) = params.message.filter(|m| !m.is_empty()) {
                text = format!("{text}: {message}");
            }
            // As output, so that front ends show it live (a status line is for logs only).
            text.push('\n');
            sink(ToolProgress::Output { text });
        }
    }
}

/// A tool a server offers, as it described it.
#[derive(Debug, Clone)]
pub struct RemoteTool {
    /// Its name on the server.
    pub name: String,
    /// Its description.
    pub description: String,
    /// Its input schema, as sent.
    pub schema: Value,
    /// The server's `readOnlyHint`.
    pub read_only: bool,
}

/// One configured server and its connection.
pub struct Server {
    /// The name in `[mcp_servers.NAME]`.
    pub name: String,
    /// Its entry.
    pub config: ServerConfig,
    root: PathBuf,
    listeners: Listeners,
    client: tokio::sync::Mutex<Option<RunningService<RoleClient, Handler>>>,
    restarted: AtomicBool,
    elicit: Option<Elicit>,
}

impl Server {
    /// A server not started yet.
    pub fn new(name: &str, config: ServerConfig, root: &Path, elicit: Option<Elicit>) -> Server {
        Server {
            name: name.to_owned(),
            config,
            root: root.to_path_buf(),
            listeners: Arc::default(),
            client: tokio::sync::Mutex::new(None),
            restarted: AtomicBool::new(false),
            elicit,
        }
    }

    /// Starts the server and lists its tools, within its start-up timeout; the reason when
    /// it cannot.
    pub async fn start(&self) -> Result<Vec<RemoteTool>, String> {
        let (client, tools) = self.connect().await?;
        *self.client.lock().await = Some(client);
        Ok(tools)
    }

    /// Ends the connection (a stdio server's process is killed).
    pub async fn stop(&self) {
        if let Some(client) = self.client.lock().await.take() {
            let _ = client.cancel().await;
        }
    }

    async fn connect(
        &self,
    ) -> Result<(RunningService<RoleClient, Handler>, Vec<RemoteTool>), String> {
        let timeout = self.config.startup_timeout();
        let stderr = Arc::new(Mutex::new(String::new()));
        let connecting = self.connect_within(Arc::clone(&stderr));
        let result = match tokio::time::timeout(timeout, connecting).await {
            Ok(result) => result,
            Err(_) => Err(format!(
                "it did not start and list its tools within {} s (raise startup_timeout_sec if it is slow)",
                timeout.as_secs_f64()
            )),
        };
        result.map_err(|reason| {
            let said = stderr.lock().unwrap_or_else(|e| e.into_inner()).clone();
            let said = said.trim();
            if said.is_empty() {
                reason
            } else {
                let last: Vec<&str> = said.lines().rev().take(3).collect();
                let last: Vec<&str> = last.into_iter().rev().collect();
                format!("{reason}; it wrote: {}", last.join(" | "))
            }
        })
    }

    async fn connect_within(
        &self,
        stderr: Arc<Mutex<String>>,
    ) -> Result<(RunningService<RoleClient, Handler>, Vec<RemoteTool>), String> {
        let handler = Handler {
            name: self.name.clone(),
            listeners: Arc::clone(&self.listeners),
            elicit: self.elicit.clone(),
        };
        let client = match self.config.transport(&self.name)? {
            Transport::Stdio { command } => {
                let mut cmd = tokio::process::Command::new(command);
                cmd.args(&self.config.args).envs(&self.config.env);
                cmd.env(super::DEPTH_VAR, (super::depth() + 1).to_string());
                cmd.current_dir(match &self.config.cwd {
                    Some(dir) => self.root.join(dir),
                    None => self.root.clone(),
                });
                let (transport, err) = rmcp::transport::TokioChildProcess::builder(cmd)
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .map_err(|e| format!("cannot start `{command}`: {e}"))?;
                if let Some(mut err) = err {
                    tokio::spawn(async move {
                        let mut buf = [0u8; 4096];
                        while let Ok(n) = err.read(&mut buf).await {
                            if n == 0 {
                                break;
                            }
                            let mut kept = stderr.lock().unwrap_or_else(|e| e.into_inner());
                            kept.push_str(&String::from_utf8_lossy(&buf[..n]));
                            if kept.len() > 8192 {
                                let mut cut = kept.len() - 4096;
                                while !kept.is_char_boundary(cut) {
                                    cut += 1;
                                }
                                kept.drain(..cut);
                            }
                        }
                    });
                }
                handler
                    .serve(transport)
                    .await
                    .map_err(|e| format!("the MCP handshake failed: {e}"))?
            }
            Transport::Http { url } => {
                use rmcp::transport::StreamableHttpClientTransport;
                use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
                let mut config = StreamableHttpClientTransportConfig::with_uri(url.to_owned());
                if let Some(var) = &self.config.bearer_token_env {
                    let token = std::env::var(var).map_err(|_| {
                        format!("the environment variable {var} (bearer_token_env) is not set: export it, or remove bearer_token_env")
                    })?;
                    config = config.auth_header(token);
                }
                let mut headers = HashMap::new();
                for (key, value) in &self.config.headers {
                    let key = hyper::header::HeaderName::try_from(key.as_str())
                        .map_err(|_| format!("header name '{key}' is not valid"))?;
                    let value = hyper::header::HeaderValue::try_from(value.as_str())
                        .map_err(|_| format!("the value of header '{key}' is not valid"))?;
                    headers.insert(key, value);
                }
                config = config.custom_headers(headers);
                handler
                    .serve(StreamableHttpClientTransport::from_config(config))
                    .await
                    .map_err(|e| format!("cannot reach {url}: {e}"))?
            }
        };
        let tools = client
            .list_all_tools()
            .await
            .map_err(|e| format!("it did not list its tools: {e}"))?;
        let tools = tools
            .into_iter()
            .filter_map(|tool| {
                let value = serde_json::to_value(&tool).ok()?;
                Some(RemoteTool {
                    name: value["name"].as_str()?.to_owned(),
                    description: value["description"].as_str().unwrap_or_default().to_owned(),
                    schema: value["inputSchema"].clone(),
                    read_only: value["annotations"]["readOnlyHint"].as_bool() == Some(true),
                })
            })
            .collect();
        Ok((client, tools))
    }

    /// The connection for a call: the one open, else (once per session) a new one.
    async fn peer(&self) -> Result<Peer<RoleClient>, String> {
        let mut client = self.client.lock().await;
        if let Some(open) = client.as_ref() {
            if !open.is_closed() && !open.peer().is_transport_closed() {
                return Ok(open.peer().clone());
            }
            *client = None;
        }
        if self.restarted.swap(true, Ordering::SeqCst) {
            return Err(format!(
                "the MCP server `{}` stopped again after it was restarted once; its tools are out of service for the rest of this session. Carry on without them, or tell the user to check the server",
                self.name
            ));
        }
        tracing::warn!("MCP server `{}` stopped; starting it again", self.name);
        let (open, _) = self.connect().await.map_err(|reason| {
            format!(
                "the MCP server `{}` had stopped and could not be started again: {reason}",
                self.name
            )
        })?;
        let peer = open.peer().clone();
        *client = Some(open);
        Ok(peer)
    }

    /// Calls the server's tool `tool`: progress goes to `ctx`'s listener, and when `ctx` is
    /// cancelled the server gets `notifications/cancelled`. A result the server marks an error
    /// is an `Err`, with its content.
    pub async fn call(&self, tool: &str, arguments: Value, ctx: &ToolContext) -> ToolResult {
        let peer = self.peer().await.map_err(ToolError::new)?;
        let mut params = CallToolRequestParams::new(tool.to_owned());
        if let Value::Object(arguments) = arguments {
            params = params.with_arguments(arguments);
        }
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        let mut handle = peer
            .send_request_with_option(request, PeerRequestOptions::no_options())
            .await
            .map_err(|err| self.stopped(&err.to_string()))?;
        let key = serde_json::to_string(&handle.progress_token).unwrap_or_default();
        if let Some(sink) = &ctx.progress {
            self.listeners
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(key.clone(), Arc::clone(sink));
        }
        let answer = tokio::select! {
            answer = &mut handle.rx => Some(answer),
            () = ctx.cancel.cancelled() => None,
        };
        self.listeners
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&key);
        match answer {
            None => {
                let _ = handle.cancel(Some("stopped by the user".to_owned())).await;
                Err(ToolError::new(format!(
                    "stopped: the call was cancelled, and the MCP server `{}` was told so",
                    self.name
                )))
            }
            Some(Err(_)) => Err(self.stopped("the connection closed")),
            Some(Ok(Err(err))) => match err {
                rmcp::ServiceError::McpError(error) => Err(ToolError::new(format!(
                    "the MCP server `{}` refused the call: {}",
                    self.name, error.message
                ))),
                other => Err(self.stopped(&other.to_string())),
            },
            Some(Ok(Ok(ServerResult::CallToolResult(result)))) => {
                output(serde_json::to_value(&result).unwrap_or_default()).into_result()
            }
            Some(Ok(Ok(other))) => {
                output(serde_json::to_value(&other).unwrap_or_default()).into_result()
            }
        }
    }

    /// The error for a call the server stopped during (`why`).
    fn stopped(&self, why: &str) -> ToolError {
        ToolError::new(format!(
            "the MCP server `{}` stopped during the call ({why}); the call may or may not have taken effect. It is started again on the next call of one of its tools",
            self.name
        ))
    }
}

/// A `tools/call` result (as JSON, so that rmcp's types may change) as a tool output: text
/// blocks as they are, images for the model to see, resources by their text or address,
/// structured content as JSON.
pub fn output(result: Value) -> ToolOutput {
    let mut parts = Vec::new();
    let mut images = Vec::new();
    for block in result["content"].as_array().into_iter().flatten() {
        match block["type"].as_str() {
            Some("text") => parts.push(block["text"].as_str().unwrap_or_default().to_owned()),
            Some("image") => {
                let media_type = block["mimeType"].as_str().unwrap_or("image/png").to_owned();
                parts.push(format!("[image {media_type}]"));
                images.push(ToolImage {
                    media_type,
                    data: block["data"].as_str().unwrap_or_default().to_owned(),
                });
            }
            Some("resource") => {
                let resource = &block["resource"];
                match resource["text"].as_str() {
                    Some(text) => parts.push(text.to_owned()),
                    None => parts.push(format!(
                        "[resource {} ({}), binary, not shown]",
                        resource["uri"].as_str().unwrap_or("?"),
                        resource["mimeType"].as_str().unwrap_or("no type")
                    )),
                }
            }
            Some("resource_link") => parts.push(format!(
                "[resource link {}]",
                block["uri"].as_str().unwrap_or("?")
            )),
            Some(other) => parts.push(format!("[{other} content, not shown]")),
            None => {}
        }
    }
    let structured = result.get("structuredContent").filter(|v| !v.is_null());
    if parts.is_empty()
        && let Some(structured) = structured
    {
        parts.push(serde_json::to_string_pretty(structured).unwrap_or_default());
    }
    let text = parts.join("\n");
    let mut out = if result["isError"].as_bool() == Some(true) {
        ToolOutput::error(text)
    } else {
        ToolOutput::ok(text)
    };
    if let Some(structured) = structured {
        out = out.with_meta("structured_content", structured.clone());
    }
    for image in images {
        out = out.with_image(image);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn results_become_text_images_and_structured_content() {
        let out = output(json!({"content": [
            {"type": "text", "text": "hello"},
            {"type": "image", "data": "AAAA", "mimeType": "image/gif"},
            {"type": "resource", "resource": {"uri": "file:///a", "text": "inside"}},
            {"type": "resource_link", "uri": "file:///b", "name": "b"},
            {"type": "audio", "data": "x", "mimeType": "audio/wav"}
        ]}));
        assert!(!out.is_error);
        assert_eq!(
            out.text,
            "hello\n[image image/gif]\ninside\n[resource link file:///b]\n[audio content, not shown]"
        );
        assert_eq!(
            out.images,
            vec![ToolImage {
                media_type: "image/gif".into(),
                data: "AAAA".into()
            }]
        );
        let out = output(json!({"content": [], "structuredContent": {"n": 1}, "isError": true}));
        assert!(out.is_error);
        assert_eq!(out.text, "{\n  \"n\": 1\n}");
        assert_eq!(out.metadata.extra["structured_content"], json!({"n": 1}));
    }
}

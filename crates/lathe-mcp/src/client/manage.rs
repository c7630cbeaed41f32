//! `lathe mcp list|add|remove`: the servers of the configuration, their state and tools, and
//! entries written to (or removed from) the user's configuration file, keeping the rest of it
//! as it was (comments included).

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, Subcommand};

use lathe_config::CommonArgs;
use lathe_config::mcp::{self, ServerConfig};
use lathe_config::setup::Setup;

/// `lathe mcp list|add|remove`.
#[derive(Debug, Subcommand)]
pub enum McpAction {
    /// The configured MCP servers: each one started, with its state and tools.
    List,
    /// Add a server to your configuration (~/.config/lathe/config.toml):
    /// `lathe mcp add NAME -- COMMAND ARGS...` or `lathe mcp add NAME --url URL`.
    Add(AddArgs),
    /// Remove a server from your configuration.
    Remove(RemoveArgs),
}

/// `lathe mcp add`.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  lathe mcp add github --env GITHUB_TOKEN=ghp_x -- npx -y @modelcontextprotocol/server-github\n  lathe mcp add docs --url https://docs.example.com/mcp --header 'X-Team: core'\n  lathe mcp add app -- ssh host lathe mcp --workspace /srv/app"
)]
pub struct AddArgs {
    /// The server's name: letters, digits, `_` and `-` (its tools are mcp__NAME__TOOL).
    pub name: String,
    /// The program and its arguments, after `--`.
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
    /// A streamable HTTP endpoint instead of a program.
    #[arg(long, conflicts_with = "command")]
    pub url: Option<String>,
    /// An environment variable for the program, KEY=VALUE (repeatable).
    #[arg(long = "env", short = 'e', value_name = "KEY=VALUE")]
    pub env: Vec<String>,
    /// An HTTP header, 'Name: value' (repeatable).
    #[arg(long = "header", value_name = "NAME: VALUE", requires = "url")]
    pub headers: Vec<String>,
    /// The environment variable holding a bearer token for --url.
    #[arg(long, value_name = "VAR", requires = "url")]
    pub bearer_token_env: Option<String>,
    /// Believe the server's readOnlyHint: its read-only tools run without asking.
    #[arg(long)]
    pub trusted: bool,
}

/// `lathe mcp remove`.
#[derive(Debug, Args)]
pub struct RemoveArgs {
    /// The server's name.
    pub name: String,
}

/// Runs one of the subcommands.
pub async fn run(common: &CommonArgs, action: McpAction) -> anyhow::Result<ExitCode> {
    match action {
        McpAction::List => list(common).await,
        McpAction::Add(args) => {
            let file = user_file()?;
            add(&file, args)?;
            Ok(ExitCode::SUCCESS)
        }
        McpAction::Remove(args) => {
            let file = user_file()?;
            remove(&file, &args.name)?;
            println!("removed MCP server `{}` from {}", args.name, file.display());
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn user_file() -> anyhow::Result<PathBuf> {
    lathe_config::config::user_file().context(
        "cannot tell where your configuration directory is: set LATHE_CONFIG_DIR (or HOME)",
    )
}

async fn list(common: &CommonArgs) -> anyhow::Result<ExitCode> {
    let setup = Setup::load(common)?;
    if setup.config.mcp_servers.is_empty() {
        println!(
            "no MCP servers configured; add one with `lathe mcp add NAME -- COMMAND ARGS...` or `lathe mcp add NAME --url URL`"
        );
        return Ok(ExitCode::SUCCESS);
    }
    let started = super::start(&setup, None).await;
    let mut out = std::io::stdout().lock();
    let mut failed = false;
    for one in &started {
        let name = &one.server.name;
        let how = match (&one.server.config.command, &one.server.config.url) {
            (Some(command), _) => {
                let mut line = vec![command.clone()];
                line.extend(one.server.config.args.iter().cloned());
                format!("stdio: {}", line.join(" "))
            }
            (None, Some(url)) => format!("http: {url}"),
            (None, None) => String::new(),
        };
        let trusted = if one.server.config.trusted {
            ", trusted"
        } else {
            ""
        };
        match &one.tools {
            Ok(tools) => {
                writeln!(
                    out,
                    "{name}: connected, {} tools ({how}{trusted})",
                    tools.len()
                )?;
                for tool in tools {
                    let about = lathe_agent::text::cut(
                        lathe_agent::text::first_line(&tool.description),
                        70,
                    );
                    let read = if tool.read_only { " [read-only]" } else { "" };
                    writeln!(
                        out,
                        "  {}{read}  {}",
                        super::tool_name(name, &tool.name),
                        lathe_config::sanitize::sanitize(&about)
                    )?;
                }
            }
            Err(reason) => {
                failed = true;
                writeln!(
                    out,
                    "{name}: failed: {} ({how})",
                    lathe_config::sanitize::sanitize(reason)
                )?;
            }
        }
    }
    drop(out);
    super::stop(&started).await;
    Ok(if failed {
        ExitCode::from(lathe_config::EXIT_FAILURE)
    } else {
        ExitCode::SUCCESS
    })
}

/// The entry `args` describe.
fn entry(args: &AddArgs) -> anyhow::Result<ServerConfig> {
    let mut env = BTreeMap::new();
    for pair in &args.env {
        let Some((key, value)) = pair.split_once('=').filter(|(k, _)| !k.is_empty()) else {
            anyhow::bail!("--env '{pair}' is not KEY=VALUE");
        };
        env.insert(key.to_owned(), value.to_owned());
    }
    let mut headers = BTreeMap::new();
    for header in &args.headers {
        let Some((key, value)) = header.split_once(':').filter(|(k, _)| !k.trim().is_empty())
        else {
            anyhow::bail!("--header '{header}' is not 'Name: value'");
        };
        headers.insert(key.trim().to_owned(), value.trim().to_owned());
    }
    if args.url.is_none() && args.command.is_empty() {
        anyhow::bail!(
            "give the server's program after `--` (lathe mcp add {0} -- COMMAND ARGS...) or its address (lathe mcp add {0} --url URL)",
            args.name
        );
    }
    if args.url.is_some() && !env.is_empty() {
        anyhow::bail!("--env is for a program the server runs as; a --url server gets none");
    }
    let config = ServerConfig {
        command: args.command.first().cloned(),
        args: args.command.iter().skip(1).cloned().collect(),
        env,
        url: args.url.clone(),
        headers,
        bearer_token_env: args.bearer_token_env.clone(),
        trusted: args.trusted,
        ..ServerConfig::default()
    };
    let mut one = BTreeMap::new();
    one.insert(args.name.clone(), config.clone());
    mcp::check(&one).map_err(|e| anyhow::anyhow!("{e}"))?;
    Ok(config)
}

/// The file as a document to edit (empty when it does not exist).
fn document(file: &Path) -> anyhow::Result<toml_edit::DocumentMut> {
    let text = match std::fs::read_to_string(file) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(err) => return Err(err).with_context(|| format!("cannot read {}", file.display())),
    };
    text.parse()
        .with_context(|| format!("invalid config file {}: fix it first", file.display()))
}

/// Adds `args`' server to `file`.
pub fn add(file: &Path, args: AddArgs) -> anyhow::Result<()> {
    let config = entry(&args)?;
    let mut doc = document(file)?;
    let servers = doc
        .entry("mcp_servers")
        .or_insert_with(|| {
            let mut table = toml_edit::Table::new();
            table.set_implicit(true);
            toml_edit::Item::Table(table)
        })
        .as_table_mut()
        .with_context(|| format!("`mcp_servers` in {} is not a table", file.display()))?;
    if servers.contains_key(&args.name) {
        anyhow::bail!(
            "an MCP server `{0}` is already in {1}: remove it first (lathe mcp remove {0}), or pick another name",
            args.name,
            file.display()
        );
    }
    let text = toml::to_string(&config).context("cannot write the entry")?;
    let entry: toml_edit::DocumentMut = text.parse().context("cannot write the entry")?;
    servers.insert(&args.name, toml_edit::Item::Table(entry.as_table().clone()));
    write_atomically(file, &doc.to_string())?;
    println!("added MCP server `{}` to {}", args.name, file.display());
    Ok(())
}

/// Removes the server `name` from `file`.
pub fn remove(file: &Path, name: &str) -> anyhow::Result<()> {
    let mut doc = document(file)?;
    let removed = doc
        .get_mut("mcp_servers")
        .and_then(|s| s.as_table_like_mut())
        .and_then(|s| s.remove(name));
    if removed.is_none() {
        anyhow::bail!(
            "no MCP server `{name}` in {}; `lathe mcp list` shows the configured ones",
            file.display()
        );
    }
    if doc
        .get("mcp_servers")
        .and_then(|s| s.as_table_like())
        .is_some_and(|s| s.is_empty())
    {
        doc.remove("mcp_servers");
    }
    write_atomically(file, &doc.to_string())
}

/// Writes `text` to `file` through a temporary file in the same directory and a rename, so a
/// reader sees the old file or the new one, never half of one.
fn write_atomically(file: &Path, text: &str) -> anyhow::Result<()> {
    let dir = file.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let temp = dir.join(format!(
        ".{}.{}.tmp",
        file.file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("config"),
        std::process::id()
    ));
    let written = (|| {
        let mut out = std::fs::File::create(&temp)?;
        out.write_all(text.as_bytes())?;
        out.sync_all()?;
        if let Ok(meta) = std::fs::metadata(file) {
            std::fs::set_permissions(&temp, meta.permissions())?;
        }
        std::fs::rename(&temp, file)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    written.with_context(|| format!("cannot write {}", file.display()))
}

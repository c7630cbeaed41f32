//! `lathe memory show|edit|clear`: the project's memory (`.lathe/memory.md`, or `[memory] path`),
//! which every new session's system prompt holds after `AGENTS.md`, managed by the user. The
//! model changes it only with `update_memory`, which asks each time; these commands are the
//! user's own and ask nothing (but `clear`, on a terminal).

use std::io::{IsTerminal, Write};
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, Subcommand};

use lathe_runtime::Workspace;
use lathe_runtime::memory::{MAX_MEMORY_BYTES, MemoryFile, MemoryText};

use crate::EXIT_FAILURE;
use crate::cli::CommonArgs;
use lathe_config::setup::Setup;

/// `lathe memory`.
#[derive(Debug, Args)]
pub struct MemoryArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: MemoryCommand,
}

/// The `lathe memory` commands.
#[derive(Debug, Subcommand)]
pub enum MemoryCommand {
    /// Print the memory file (or say where it would be kept).
    Show,
    /// Open the memory file in $VISUAL or $EDITOR; it is written back atomically.
    Edit,
    /// Empty the memory file (asks on a terminal; --yes without one).
    Clear {
        /// Clear without asking.
        #[arg(long, short)]
        yes: bool,
    },
}

/// Runs `lathe memory ...`.
pub fn run(common: &CommonArgs, args: MemoryArgs) -> anyhow::Result<ExitCode> {
    let setup = Setup::load(common)?;
    let workspace = Workspace::new(&setup.root)
        .with_context(|| format!("cannot open workspace {}", setup.root.display()))?;
    let memory =
        MemoryFile::open(workspace, setup.config.memory.path()).map_err(anyhow::Error::msg)?;
    match args.command {
        MemoryCommand::Show => show(&memory),
        MemoryCommand::Edit => edit(&memory),
        MemoryCommand::Clear { yes } => clear(&memory, yes),
    }
}

fn show(memory: &MemoryFile) -> anyhow::Result<ExitCode> {
    let mut out = std::io::stdout().lock();
    let Some(text) = memory.text().map_err(anyhow::Error::msg)? else {
        writeln!(
            out,
            "No project memory yet. It would be kept in {} (the agent adds to it with \
             update_memory, each change asked about; or write it with `lathe memory edit`).",
            memory.target().abs().display()
        )?;
        return Ok(ExitCode::SUCCESS);
    };
    // On a terminal, what a model wrote cannot move the cursor or retitle the window.
    if out.is_terminal() {
        write!(out, "{}", crate::render::sanitize(&text))?;
    } else {
        write!(out, "{text}")?;
    }
    if text.len() > MAX_MEMORY_BYTES {
        eprintln!(
            "lathe: the memory is {} bytes; sessions see only its first {MAX_MEMORY_BYTES} \
             (shorten it with `lathe memory edit`)",
            text.len()
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// The editor the user chose: `$VISUAL`, else `$EDITOR`.
fn editor() -> Option<String> {
    ["VISUAL", "EDITOR"]
        .iter()
        .filter_map(|name| std::env::var(name).ok())
        .find(|value| !value.trim().is_empty())
}

fn edit(memory: &MemoryFile) -> anyhow::Result<ExitCode> {
    let Some(editor) = editor() else {
        anyhow::bail!(
            "no editor is set: set $VISUAL or $EDITOR (for example `EDITOR=nano lathe memory \
             edit`), or edit {} yourself",
            memory.target().abs().display()
        );
    };
    let before = memory.text().map_err(anyhow::Error::msg)?;
    // The copy the editor works on, outside the workspace, private (0600); removed unless kept.
    let mut copy = tempfile::Builder::new()
        .prefix(&format!("lathe-memory-{}-", std::process::id()))
        .suffix(".md")
        .tempfile()
        .context("cannot create a file to edit")?;
    copy.write_all(before.as_deref().unwrap_or_default().as_bytes())
        .with_context(|| format!("cannot write {}", copy.path().display()))?;
    // As git runs it: the editor may carry arguments (`code --wait`).
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("{editor} \"$1\""))
        .arg("sh")
        .arg(copy.path())
        .status()
        .with_context(|| format!("cannot start the editor `{editor}`"))?;
    if !status.success() {
        eprintln!("lathe: the editor `{editor}` exited with {status}; the memory was not changed");
        return Ok(ExitCode::from(EXIT_FAILURE));
    }
    let edited = std::fs::read(copy.path())
        .with_context(|| format!("cannot read back {}", copy.path().display()))?;
    let Ok(edited) = String::from_utf8(edited) else {
        let (_, kept) = copy.keep()?;
        anyhow::bail!(
            "the edited memory is not UTF-8 text, so it was not saved; your version is in {}",
            kept.display()
        );
    };
    if Some(edited.as_str()) == before.as_deref() || (before.is_none() && edited.is_empty()) {
        println!("The memory was not changed.");
        return Ok(ExitCode::SUCCESS);
    }
    // A session may have changed it meanwhile (an approved update_memory): never lose either.
    if memory.text().map_err(anyhow::Error::msg)? != before {
        let (_, kept) = copy.keep()?;
        anyhow::bail!(
            "the memory file {} changed while you edited it, so it was not overwritten; your \
             version is in {}: merge it and run `lathe memory edit` again",
            memory.shown(),
            kept.display()
        );
    }
    memory.write(&edited).map_err(anyhow::Error::msg)?;
    let entries = MemoryText::parse(&edited).entries().len();
    println!(
        "Saved the memory {} ({entries} entr{}); new sessions read it.",
        memory.shown(),
        if entries == 1 { "y" } else { "ies" }
    );
    if edited.len() > MAX_MEMORY_BYTES {
        eprintln!(
            "lathe: the memory is {} bytes; sessions see only its first {MAX_MEMORY_BYTES}",
            edited.len()
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn clear(memory: &MemoryFile, yes: bool) -> anyhow::Result<ExitCode> {
    let text = memory
        .text()
        .map_err(anyhow::Error::msg)?
        .unwrap_or_default();
    if text.trim().is_empty() {
        println!("The memory {} is already empty.", memory.shown());
        return Ok(ExitCode::SUCCESS);
    }
    let entries = MemoryText::parse(&text).entries().len();
    if !yes {
        if !std::io::stdin().is_terminal() {
            anyhow::bail!(
                "stdin is not a terminal, so nobody can be asked: pass --yes to clear the memory \
                 {} ({} bytes)",
                memory.shown(),
                text.len()
            );
        }
        print!(
            "Clear the memory {} ({entries} entr{}, {} bytes)? [y/N] ",
            memory.shown(),
            if entries == 1 { "y" } else { "ies" },
            text.len()
        );
        std::io::stdout().flush()?;
        if !lathe_config::trust::read_yes() {
            println!("Not cleared.");
            return Ok(ExitCode::from(EXIT_FAILURE));
        }
    }
    memory.write("").map_err(anyhow::Error::msg)?;
    println!(
        "Cleared the memory {} ({entries} entr{} removed).",
        memory.shown(),
        if entries == 1 { "y" } else { "ies" }
    );
    Ok(ExitCode::SUCCESS)
}

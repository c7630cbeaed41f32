//! The system prompt: where the model is, what it may do and how, and the project's own
//! instructions from `AGENTS.md`.
//!
//! For a model without native tool calling, the `<tool_call>` protocol and the tool definitions
//! are appended to this prompt by [`crate::provider::AutoProtocol`] when it switches the model
//! to the text protocol, so the prompt and the protocol can never disagree about the tools.

use std::io::Read;
use std::path::Path;

/// The project's instruction file, read from the user's configuration directory, the
/// repository root and every directory down to the working directory.
pub const PROJECT_INSTRUCTIONS_FILE: &str = "AGENTS.md";
/// Read where a directory has no `AGENTS.md` (the name another agent's users already wrote).
pub const FALLBACK_INSTRUCTIONS_FILE: &str = "CLAUDE.md";
/// `AGENTS.md` beyond this many bytes is cut: it is read on every request, and a huge one would
/// crowd out the work itself.
pub const MAX_PROJECT_INSTRUCTIONS_BYTES: usize = 32 * 1024;

/// Everything the system prompt is built from.
#[derive(Debug, Clone, Default)]
pub struct PromptInputs {
    /// The workspace root, as an absolute path.
    pub workspace: String,
    /// `linux x86_64`.
    pub platform: String,
    /// Today, `2025-05-01`.
    pub date: String,
    /// The tool names, in registry order.
    pub tools: Vec<String>,
    /// The project's own instructions (`AGENTS.md`).
    pub project_instructions: Option<String>,
    /// The project's memory ([`load_memory`]), after the instructions.
    pub memory: Option<ProjectMemory>,
}

impl PromptInputs {
    /// Inputs for `workspace` today on this machine, with the instructions
    /// ([`gather_instructions`]) for the process's working directory; without the project's
    /// memory, which [`PromptInputs::for_session`] adds.
    pub fn for_workspace(workspace: &Path, tools: Vec<String>) -> Self {
        let cwd = std::env::current_dir().unwrap_or_else(|_| workspace.to_path_buf());
        PromptInputs {
            workspace: workspace.display().to_string(),
            platform: format!("{} {}", std::env::consts::OS, std::env::consts::ARCH),
            date: today(),
            tools,
            project_instructions: gather_instructions(
                workspace,
                &cwd,
                user_config_dir().as_deref(),
            ),
            memory: None,
        }
    }
}

impl PromptInputs {
    /// [`PromptInputs::for_workspace`] for the session's workspace, with the session's project
    /// memory ([`load_memory`]), read now: a new session sees the memory as it is when it
    /// starts.
    pub fn for_session(session: &lathe_runtime::Session, tools: Vec<String>) -> Self {
        PromptInputs {
            memory: load_memory(session),
            ..PromptInputs::for_workspace(session.workspace().root(), tools)
        }
    }
}

/// The project's memory as the system prompt holds it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProjectMemory {
    /// The memory file, relative to the workspace root.
    pub path: String,
    /// Its text, cut to [`MAX_MEMORY_BYTES`](lathe_runtime::memory::MAX_MEMORY_BYTES)
    /// with a note saying how much was shown.
    pub text: String,
}

/// The session's memory file (`.lathe/memory.md`, or the configured `[memory] path`), cut to
/// [`MAX_MEMORY_BYTES`](lathe_runtime::memory::MAX_MEMORY_BYTES) at a line's end
/// with a note saying so; `None` when there is none or it holds only blank lines. It is read
/// inside the workspace only: a memory file that is a symbolic link leading out is not read
/// (the prompt says why instead).
pub fn load_memory(session: &lathe_runtime::Session) -> Option<ProjectMemory> {
    use lathe_runtime::memory::{self, MAX_MEMORY_BYTES};
    let path = memory::memory_path(session);
    let workspace = session.workspace();
    let unreadable = |why: String| {
        tracing::warn!("the project memory {path} was not read: {why}");
        Some(ProjectMemory {
            path: path.clone(),
            text: format!("[the memory file {path} could not be read: {why}]"),
        })
    };
    let target = match memory::resolve(workspace, &path) {
        Ok(target) => target,
        Err(why) => return unreadable(why),
    };
    let (mut bytes, total) = match memory::read(workspace, &target, MAX_MEMORY_BYTES + 1) {
        Ok(Some(read)) => read,
        Ok(None) => return None,
        Err(err) => return unreadable(err.to_string()),
    };
    let cut = bytes.len() > MAX_MEMORY_BYTES;
    if cut {
        bytes.truncate(MAX_MEMORY_BYTES);
        // End on a whole line, so that no entry is shown half.
        if let Some(end) = bytes.iter().rposition(|b| *b == b'\n') {
            bytes.truncate(end + 1);
        }
    }
    let shown = bytes.len();
    let mut text = String::from_utf8_lossy(&bytes).trim_end().to_owned();
    if text.trim().is_empty() && !cut {
        return None;
    }
    if cut {
        text.push_str(&format!(
            "\n[memory cut: {shown} of {total} bytes shown; see {path}]"
        ));
    }
    Some(ProjectMemory { path, text })
}

/// Lathe's directory in the user's configuration (`$XDG_CONFIG_HOME/lathe`, else
/// `~/.config/lathe`), when there is a home.
pub fn user_config_dir() -> Option<std::path::PathBuf> {
    let non_empty = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    non_empty("XDG_CONFIG_HOME")
        .map(std::path::PathBuf::from)
        .or_else(|| non_empty("HOME").map(|home| Path::new(&home).join(".config")))
        .map(|dir| dir.join("lathe"))
}

/// The instructions for work in `cwd`, most general first and nearest last: the user's own
/// (`AGENTS.md` in `user_dir`), then each directory from the repository root containing `cwd`
/// (or `workspace`, outside a repository) down to `cwd`, each its `AGENTS.md` or else its
/// `CLAUDE.md`. One file is given as it is; several each under the path it came from.
pub fn gather_instructions(
    workspace: &Path,
    cwd: &Path,
    user_dir: Option<&Path>,
) -> Option<String> {
    let mut found: Vec<(std::path::PathBuf, String)> = Vec::new();
    if let Some(dir) = user_dir
        && let Some(text) = read_instructions(&dir.join(PROJECT_INSTRUCTIONS_FILE))
    {
        found.push((dir.join(PROJECT_INSTRUCTIONS_FILE), text));
    }
    let cwd = if cwd.starts_with(workspace) {
        cwd
    } else {
        workspace
    };
    let top = cwd
        .ancestors()
        .find(|dir| dir.join(".git").exists())
        .unwrap_or(workspace);
    let mut chain: Vec<&Path> = cwd
        .ancestors()
        .take_while(|dir| dir.starts_with(top))
        .collect();
    chain.reverse();
    for dir in chain {
        for name in [PROJECT_INSTRUCTIONS_FILE, FALLBACK_INSTRUCTIONS_FILE] {
            let path = dir.join(name);
            if let Some(text) = read_instructions(&path) {
                found.push((path, text));
                break;
            }
        }
    }
    match found.len() {
        0 => None,
        1 => found.pop().map(|(_, text)| text),
        _ => Some(
            found
                .iter()
                .map(|(path, text)| format!("## From {}\n\n{text}", path.display()))
                .collect::<Vec<_>>()
                .join("\n\n"),
        ),
    }
}

/// Today's date in UTC, `YYYY-MM-DD`.
pub fn today() -> String {
    let stamp = lathe_store::Timestamp::now().to_string();
    stamp.get(..10).unwrap_or(&stamp).to_owned()
}

/// The content of an instruction file, cut to [`MAX_PROJECT_INSTRUCTIONS_BYTES`] with a note, or
/// `None` when there is none (or it is empty or unreadable).
fn read_instructions(path: &Path) -> Option<String> {
    let file = std::fs::File::open(path).ok()?;
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    let mut bytes = Vec::new();
    file.take(MAX_PROJECT_INSTRUCTIONS_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .ok()?;
    let cut = bytes.len() > MAX_PROJECT_INSTRUCTIONS_BYTES;
    bytes.truncate(MAX_PROJECT_INSTRUCTIONS_BYTES);
    let mut text = String::from_utf8_lossy(&bytes).into_owned();
    if cut {
        // Do not end on half a character.
        while text.ends_with('\u{FFFD}') {
            text.pop();
        }
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        text.push_str(&format!(
            "\n[{name} is longer; the rest was cut. Read it with read_file if you need it.]"
        ));
    }
    let trimmed = text.trim();
    (!trimmed.is_empty()).then(|| trimmed.to_owned())
}

/// The system prompt in the full profile.
pub fn system_prompt(inputs: &PromptInputs) -> String {
    system_prompt_for(inputs, lathe_runtime::Profile::Full)
}

/// The system prompt in `profile`: [`Profile::Compact`](lathe_runtime::Profile::Compact) (small
/// windows) keeps the same rules in fewer words and leaves out the tool list, which the
/// definitions already give.
pub fn system_prompt_for(inputs: &PromptInputs, profile: lathe_runtime::Profile) -> String {
    if profile == lathe_runtime::Profile::Compact {
        return compact_system_prompt(inputs);
    }
    let mut prompt = String::with_capacity(4096);
    prompt.push_str(
        "You are Lathe, a coding agent working in the user's project on their machine. You do \
         the task with the tools below: read the code, change files, run commands, check your \
         work. Be direct and brief in what you write to the user.\n\n",
    );
    prompt.push_str("# Environment\n");
    prompt.push_str(&format!("- Workspace root: {}\n", inputs.workspace));
    prompt.push_str(&format!("- Platform: {}\n", inputs.platform));
    prompt.push_str(&format!("- Date: {}\n", inputs.date));
    if !inputs.tools.is_empty() {
        prompt.push_str(&format!("- Tools: {}\n", inputs.tools.join(", ")));
    }
    prompt.push_str(TOOL_RULES);
    if let Some(project) = &inputs.project_instructions {
        prompt.push_str(&format!(
            "\n# Project instructions ({PROJECT_INSTRUCTIONS_FILE})\n\
             The project's maintainers wrote these for agents; follow them.\n\n{project}\n"
        ));
    }
    if let Some(memory) = &inputs.memory {
        push_memory(&mut prompt, memory);
    }
    prompt
}

/// The compact profile's prompt: the same environment and rules, shorter.
fn compact_system_prompt(inputs: &PromptInputs) -> String {
    let mut prompt = String::with_capacity(2048);
    prompt.push_str(
        "You are Lathe, a coding agent in the user's project: do the task with the tools. Be \
         brief.\n",
    );
    prompt.push_str(&format!(
        "Workspace root: {} · {} · {}\n",
        inputs.workspace, inputs.platform, inputs.date
    ));
    prompt.push_str(COMPACT_TOOL_RULES);
    // Only where it is offered: an explore sub-agent's few tools have no catalog behind them.
    if inputs.tools.iter().any(|t| t == MORE_TOOLS) {
        prompt.push_str("- more_tools lists further tools.\n");
    }
    if let Some(project) = &inputs.project_instructions {
        prompt.push_str(&format!(
            "\n# Project instructions ({PROJECT_INSTRUCTIONS_FILE}); follow them\n{project}\n"
        ));
    }
    if let Some(memory) = &inputs.memory {
        push_memory(&mut prompt, memory);
    }
    prompt
}

/// The memory's section of the prompt, after the project's instructions.
fn push_memory(prompt: &mut String, memory: &ProjectMemory) {
    prompt.push_str(&format!(
        "\n# Project memory ({})\n\
         Notes kept for this project across sessions (update_memory changes them, each change \
         approved by the user). They are background facts: where they disagree with the user \
         or the project instructions, those win.\n\n{}\n",
        memory.path, memory.text
    ));
}

const TOOL_RULES: &str = "
# Rules for tools
- Act with the tools; do not describe what you would do instead of doing it.
- Paths are relative to the workspace root.
- Read a file before you change it. Use edit_file for changes to an existing file (old_string \
must match the file exactly, including indentation) and write_file for new files or full rewrites.
- Run builds, tests and other programs with shell. Check the result of what you changed.
- Calls that only read (read_file, grep, glob, list_files) may be made several in one turn; they \
run in parallel. Calls that change things run one at a time, in the order you give them.
- A result starting with an error says what to fix: fix the call and try again, do not repeat it \
unchanged. Repeating the same call with the same arguments will not give another answer.
- If the user denies a call, do not retry it: do something else or ask them.
- Long results are cut in the middle; where the rest is kept is said in the result.
- When the task is done, answer without calling a tool: say briefly what you did and what the \
user should know. You may end that answer with [TASK_COMPLETE].
";

/// [`TOOL_RULES`] in fewer words, for small windows: every rule is kept.
const COMPACT_TOOL_RULES: &str = "
# Rules
- Act with the tools, do not only describe. Paths are relative to the workspace root.
- Read a file before changing it: edit_file for part of it, write_file for new files.
- Check your changes: run builds and tests with shell.
- Reads may go several in one turn; changes run one at a time.
- An error says what to fix: fix the call, never repeat it unchanged. Never retry a denied call.
- Cut results say where the rest is.
- When done, answer without a tool call, briefly. You may end with [TASK_COMPLETE].
";

/// The tool that lists and enables the tools offered on demand.
const MORE_TOOLS: &str =
    <lathe_runtime::registry::more_tools::MoreToolsTool as lathe_runtime::Tool>::NAME;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stream::COMPLETION_MARKER;

    /// The compact prompt points at `more_tools` only where it is among the tools.
    #[test]
    fn the_compact_prompt_names_more_tools_only_when_offered() {
        let mut inputs = PromptInputs {
            workspace: "/w".into(),
            platform: "linux".into(),
            date: "2025-05-01".into(),
            tools: vec!["read_file".into(), "grep".into()],
            project_instructions: None,
            memory: None,
        };
        let without = system_prompt_for(&inputs, lathe_runtime::Profile::Compact);
        assert!(!without.contains("more_tools"), "{without}");
        inputs.tools.push("more_tools".into());
        let with = system_prompt_for(&inputs, lathe_runtime::Profile::Compact);
        assert!(with.contains("more_tools lists further tools"), "{with}");
    }

    #[test]
    fn the_compact_prompt_keeps_the_rules_and_the_marker() {
        let inputs = PromptInputs {
            workspace: "/home/me/proj".into(),
            platform: "linux x86_64".into(),
            date: "2025-05-01".into(),
            tools: vec!["read_file".into(), "shell".into()],
            project_instructions: Some("use make".into()),
            memory: None,
        };
        let full = system_prompt(&inputs);
        let compact = system_prompt_for(&inputs, lathe_runtime::Profile::Compact);
        assert!(compact.len() * 2 < full.len(), "{}", compact.len());
        for needed in [
            "/home/me/proj",
            "linux x86_64",
            "2025-05-01",
            "edit_file",
            "write_file",
            "shell",
            "denied",
            "use make",
            COMPLETION_MARKER,
        ] {
            assert!(compact.contains(needed), "{needed}: {compact}");
        }
    }

    #[test]
    fn prompt_names_the_workspace_platform_date_and_tools() {
        let inputs = PromptInputs {
            workspace: "/home/me/proj".into(),
            platform: "linux x86_64".into(),
            date: "2025-05-01".into(),
            tools: vec!["read_file".into(), "shell".into()],
            project_instructions: None,
            memory: None,
        };
        let prompt = system_prompt(&inputs);
        assert!(prompt.contains("Workspace root: /home/me/proj"));
        assert!(prompt.contains("Platform: linux x86_64"));
        assert!(prompt.contains("Date: 2025-05-01"));
        assert!(prompt.contains("Tools: read_file, shell"));
        assert!(prompt.contains(COMPLETION_MARKER));
        assert!(!prompt.contains("<tool_call>"));
        assert!(!prompt.contains(PROJECT_INSTRUCTIONS_FILE));
    }

    #[test]
    fn project_instructions_are_included() {
        let inputs = PromptInputs {
            project_instructions: Some("Run `make check` before finishing.".into()),
            ..PromptInputs::default()
        };
        let prompt = system_prompt(&inputs);
        assert!(prompt.contains("(AGENTS.md)"));
        assert!(prompt.contains("Run `make check` before finishing."));
    }

    #[test]
    fn agents_md_is_read_and_cut() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(read_instructions(&dir.path().join("AGENTS.md")), None);
        std::fs::write(dir.path().join("AGENTS.md"), "  \n").unwrap();
        assert_eq!(read_instructions(&dir.path().join("AGENTS.md")), None);
        std::fs::write(dir.path().join("AGENTS.md"), "Use tabs.\n").unwrap();
        assert_eq!(
            read_instructions(&dir.path().join("AGENTS.md")).as_deref(),
            Some("Use tabs.")
        );
        let huge = "é".repeat(MAX_PROJECT_INSTRUCTIONS_BYTES);
        std::fs::write(dir.path().join("AGENTS.md"), huge).unwrap();
        let text = read_instructions(&dir.path().join("AGENTS.md")).unwrap();
        assert!(text.len() < MAX_PROJECT_INSTRUCTIONS_BYTES + 200);
        assert!(text.ends_with("Read it with read_file if you need it.]"));
        assert!(!text.contains('\u{FFFD}'));
    }

    #[test]
    fn instructions_come_from_the_user_the_repository_and_each_directory_down() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        let sub = repo.join("crates/app");
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::create_dir_all(&sub).unwrap();
        let user = dir.path().join("config/lathe");
        std::fs::create_dir_all(&user).unwrap();
        assert_eq!(gather_instructions(&repo, &sub, Some(&user)), None);
        std::fs::write(repo.join("AGENTS.md"), "Repo rules.\n").unwrap();
        // One file: as it is.
        assert_eq!(
            gather_instructions(&repo, &sub, Some(&user)).as_deref(),
            Some("Repo rules.")
        );
        std::fs::write(user.join("AGENTS.md"), "Mine.\n").unwrap();
        std::fs::write(
            repo.join("crates/CLAUDE.md"),
            "Crates, by the other name.\n",
        )
        .unwrap();
        std::fs::write(sub.join("AGENTS.md"), "App rules.\n").unwrap();
        std::fs::write(sub.join("CLAUDE.md"), "Not read: AGENTS.md is here.\n").unwrap();
        let all = gather_instructions(&repo, &sub, Some(&user)).unwrap();
        let order: Vec<usize> = [
            "Mine.",
            "Repo rules.",
            "Crates, by the other name.",
            "App rules.",
        ]
        .iter()
        .map(|t| {
            all.find(t)
                .unwrap_or_else(|| panic!("{t} missing from {all}"))
        })
        .collect();
        assert!(order.windows(2).all(|w| w[0] < w[1]), "{all}");
        assert!(!all.contains("Not read"), "{all}");
        assert!(all.contains(&format!("## From {}", sub.join("AGENTS.md").display())));
        // A working directory outside the workspace reads the workspace's chain only.
        let elsewhere = dir.path().join("elsewhere");
        std::fs::create_dir_all(&elsewhere).unwrap();
        std::fs::write(elsewhere.join("AGENTS.md"), "Elsewhere.\n").unwrap();
        let text = gather_instructions(&repo, &elsewhere, None).unwrap();
        assert_eq!(text, "Repo rules.");
    }

    fn memory_session(dir: &Path) -> std::sync::Arc<lathe_runtime::Session> {
        let ws = dir.join("ws");
        std::fs::create_dir_all(ws.join(".lathe")).unwrap();
        let workspace = lathe_runtime::Workspace::new(&ws).unwrap();
        lathe_runtime::Session::new(workspace, Default::default(), dir.join("state")).unwrap()
    }

    #[test]
    fn the_memory_follows_the_project_instructions() {
        let dir = tempfile::tempdir().unwrap();
        let session = memory_session(dir.path());
        let ws = session.workspace().root().to_path_buf();
        assert_eq!(load_memory(&session), None, "no file");
        std::fs::write(ws.join(".lathe/memory.md"), "\n  \n").unwrap();
        assert_eq!(load_memory(&session), None, "only blank lines");
        std::fs::write(ws.join(".lathe/memory.md"), "- Use tabs.\n").unwrap();
        std::fs::write(ws.join("AGENTS.md"), "Run make check.\n").unwrap();
        let inputs = PromptInputs::for_session(&session, vec![]);
        let prompt = system_prompt(&inputs);
        let agents = prompt.find("Run make check.").expect("AGENTS.md");
        let heading = prompt
            .find("# Project memory (.lathe/memory.md)")
            .expect("the heading");
        let entry = prompt.find("- Use tabs.").expect("the entry");
        assert!(agents < heading && heading < entry, "{prompt}");
    }

    #[test]
    fn a_large_memory_is_cut_at_a_line_with_a_note() {
        use lathe_runtime::memory::MAX_MEMORY_BYTES;
        let dir = tempfile::tempdir().unwrap();
        let session = memory_session(dir.path());
        let ws = session.workspace().root().to_path_buf();
        let text: String = (0..MAX_MEMORY_BYTES / 50 + 10)
            .map(|i| format!("- entry {i:04} {}\n", "é".repeat(18)))
            .collect();
        std::fs::write(ws.join(".lathe/memory.md"), &text).unwrap();
        let memory = load_memory(&session).unwrap();
        let (shown, note) = memory.text.rsplit_once('\n').unwrap();
        assert!(text.starts_with(&format!("{shown}\n")), "whole lines only");
        assert_eq!(
            note,
            format!(
                "[memory cut: {} of {} bytes shown; see .lathe/memory.md]",
                shown.len() + 1,
                text.len()
            )
        );
        assert!(shown.len() < MAX_MEMORY_BYTES);
    }

    #[test]
    fn a_memory_file_leading_out_of_the_workspace_is_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let session = memory_session(dir.path());
        let ws = session.workspace().root().to_path_buf();
        std::fs::write(dir.path().join("secret"), "TOKEN=x\n").unwrap();
        std::os::unix::fs::symlink(dir.path().join("secret"), ws.join(".lathe/memory.md")).unwrap();
        let memory = load_memory(&session).unwrap();
        assert!(!memory.text.contains("TOKEN"), "{}", memory.text);
        assert!(
            memory
                .text
                .starts_with("[the memory file .lathe/memory.md could not be read:"),
            "{}",
            memory.text
        );
    }

    #[test]
    fn today_looks_like_a_date() {
        let date = today();
        assert_eq!(date.len(), 10);
        assert_eq!(&date[4..5], "-");
    }
}

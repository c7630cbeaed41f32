//! Project commands: prompt templates behind `/NAME`, in `.lathe/commands/NAME.md` of the
//! workspace and `commands/NAME.md` of the user's configuration directory.
//!
//! A template is Markdown with optional front matter between `---` lines (`description`,
//! `argument-hint`, `allowed-tools`, `model`). `$ARGUMENTS` becomes what followed the name,
//! `$1` to `$9` its words (double quotes group words). A template without `$ARGUMENTS` gets the
//! arguments appended. `lathe chat` runs them as `/NAME args`, `lathe exec /NAME args` too, and
//! `lathe mcp` offers them as MCP prompts. A workspace command is text, not code: it needs no
//! trust, and its `allowed-tools` can only narrow what the run may call.

use std::path::{Path, PathBuf};

/// Where a command was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// The workspace's `.lathe/commands/`.
    Workspace,
    /// The user's configuration directory's `commands/`.
    User,
}

impl Scope {
    fn label(self) -> &'static str {
        match self {
            Scope::Workspace => "workspace",
            Scope::User => "user",
        }
    }
}

/// One command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProjectCommand {
    /// The name after `/` (the file name without `.md`; `dir:name` for `dir/name.md`).
    pub name: String,
    /// One line for `/help` and MCP's `prompts/list`.
    pub description: Option<String>,
    /// What the arguments are, for `/help` (`argument-hint`).
    pub argument_hint: Option<String>,
    /// The only tools a run of this command may call (`allowed-tools`), when set.
    pub allowed_tools: Option<Vec<String>>,
    /// The model a run of this command uses (`model`), when set.
    pub model: Option<String>,
    /// The template.
    pub body: String,
    /// The file.
    pub path: PathBuf,
    /// Where it was found.
    pub scope: Scope,
}

/// The commands of a workspace and its user, and what could not be read.
#[derive(Debug, Clone, Default)]
pub struct Commands {
    commands: Vec<ProjectCommand>,
    /// Files that are not commands, each with why (shown once, never fatal).
    pub problems: Vec<String>,
}

/// The largest template read, in bytes.
const MAX_TEMPLATE: u64 = 256 * 1024;

impl Commands {
    /// The commands of `workspace` and of the user (`LATHE_CONFIG_DIR` or the XDG configuration
    /// directory). A workspace command hides a user command of the same name.
    pub fn load(workspace: &Path) -> Commands {
        let mut dirs = vec![(Scope::Workspace, workspace.join(".lathe").join("commands"))];
        if let Some(config) = crate::state::config_dir() {
            dirs.push((Scope::User, config.join("commands")));
        }
        Commands::load_from(&dirs)
    }

    /// The commands in `dirs`, the first directory winning a name.
    pub fn load_from(dirs: &[(Scope, PathBuf)]) -> Commands {
        let mut commands = Commands::default();
        for (scope, dir) in dirs {
            let mut found = Vec::new();
            collect(dir, dir, *scope, &mut found, &mut commands.problems);
            found.sort_by(|a, b| a.name.cmp(&b.name));
            for command in found {
                if commands.get(&command.name).is_none() {
                    commands.commands.push(command);
                }
            }
        }
        commands
    }

    /// The command `name` (`/` stripped, case as written, then folded).
    pub fn get(&self, name: &str) -> Option<&ProjectCommand> {
        let name = name.strip_prefix('/').unwrap_or(name);
        self.commands.iter().find(|c| c.name == name).or_else(|| {
            self.commands
                .iter()
                .find(|c| c.name.eq_ignore_ascii_case(name))
        })
    }

    /// Every command, by name.
    pub fn all(&self) -> &[ProjectCommand] {
        &self.commands
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.commands.is_empty()
    }

    /// The lines `/help` adds: `/NAME HINT  description (workspace)`.
    pub fn help(&self) -> String {
        let mut text = String::new();
        for command in &self.commands {
            let mut usage = format!("/{}", command.name);
            if let Some(hint) = &command.argument_hint {
                usage.push(' ');
                usage.push_str(hint);
            }
            let about = command.description.as_deref().unwrap_or("(no description)");
            text.push_str(&format!(
                "{usage:<16} {about} ({} command)\n",
                command.scope.label()
            ));
        }
        text
    }

    /// `/NAME args` in `text` when NAME is one of these commands: the command and the
    /// arguments (trimmed).
    pub fn invocation<'a>(&'a self, text: &'a str) -> Option<(&'a ProjectCommand, &'a str)> {
        let (name, args) = split_invocation(text)?;
        Some((self.get(name)?, args))
    }

    /// The names, for messages: `/review, /fix-issue`.
    pub fn names(&self) -> String {
        self.commands
            .iter()
            .map(|c| format!("/{}", c.name))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// `/NAME rest` when `text` starts with `/` and a name (letters, digits, `-`, `_`, `:`, `.`,
/// no `/`): the name and the rest, trimmed. `/etc/hosts` and `// comment` are not.
pub fn split_invocation(text: &str) -> Option<(&str, &str)> {
    let rest = text.trim_start().strip_prefix('/')?;
    let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
    let name = &rest[..end];
    let valid = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | ':' | '.'));
    valid.then(|| (name, rest[end..].trim()))
}

fn collect(
    root: &Path,
    dir: &Path,
    scope: Scope,
    found: &mut Vec<ProjectCommand>,
    problems: &mut Vec<String>,
) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() {
            // One level of namespaces: `frontend/test.md` is `/frontend:test`.
            if dir == root {
                collect(root, &path, scope, found, problems);
            }
            continue;
        }
        if path.extension().is_none_or(|e| e != "md") {
            continue;
        }
        match read_command(root, &path, scope) {
            Ok(command) => found.push(command),
            Err(why) => problems.push(format!("{}: {why}", path.display())),
        }
    }
}

fn read_command(root: &Path, path: &Path, scope: Scope) -> Result<ProjectCommand, String> {
    let stem = path
        .file_stem()
        .and_then(|s| s.to_str())
        .ok_or("the name is not UTF-8")?;
    let name = match path
        .parent()
        .filter(|p| *p != root)
        .and_then(|p| p.file_name())
    {
        Some(space) => format!("{}:{stem}", space.to_string_lossy()),
        None => stem.to_owned(),
    };
    if split_invocation(&format!("/{name}")).is_none_or(|(n, rest)| n != name || !rest.is_empty()) {
        return Err(format!(
            "`{name}` cannot be a command name (letters, digits, `-`, `_`, `.` only)"
        ));
    }
    // Follows no link out of the directory: a command is a file in it.
    let meta = std::fs::symlink_metadata(path).map_err(|e| e.to_string())?;
    if !meta.is_file() {
        return Err("not a regular file".to_owned());
    }
    if meta.len() > MAX_TEMPLATE {
        return Err(format!(
            "{} bytes; a command template may have at most {MAX_TEMPLATE}",
            meta.len()
        ));
    }
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read it: {e}"))?;
    let (front, body) = split_front_matter(&text);
    let mut command = ProjectCommand {
        name,
        description: None,
        argument_hint: None,
        allowed_tools: None,
        model: None,
        body: body.to_owned(),
        path: path.to_path_buf(),
        scope,
    };
    for line in front.lines() {
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let value = unquote(value.trim());
        if value.is_empty() {
            continue;
        }
        match key.trim().to_ascii_lowercase().as_str() {
            "description" => command.description = Some(value.to_owned()),
            "argument-hint" | "argument_hint" => command.argument_hint = Some(value.to_owned()),
            "model" => command.model = Some(value.to_owned()),
            "allowed-tools" | "allowed_tools" => {
                let list = value.trim_start_matches('[').trim_end_matches(']');
                let tools: Vec<String> = list
                    .split(',')
                    .map(|t| unquote(t.trim()).to_owned())
                    .filter(|t| !t.is_empty())
                    .collect();
                command.allowed_tools = Some(tools);
            }
            _ => {}
        }
    }
    if command.description.is_none() {
        command.description = body
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .map(|l| lathe_runtime::text::one_line(l.trim_start_matches('#').trim(), 80));
    }
    Ok(command)
}

/// The front matter (without its `---` lines) and the body.
fn split_front_matter(text: &str) -> (&str, &str) {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let Some(rest) = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
    else {
        return ("", text);
    };
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end() == "---" {
            return (&rest[..offset], &rest[offset + line.len()..]);
        }
        offset += line.len();
    }
    // No closing line: all of it is the template.
    ("", text)
}

fn unquote(value: &str) -> &str {
    for quote in ['"', '\''] {
        if let Some(inner) = value
            .strip_prefix(quote)
            .and_then(|v| v.strip_suffix(quote))
        {
            return inner;
        }
    }
    value
}

/// The words of `args`, double quotes grouping words (`"two words" three`).
fn words(args: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut quoted = false;
    let mut any = false;
    for c in args.chars() {
        match c {
            '"' => {
                quoted = !quoted;
                any = true;
            }
            c if c.is_whitespace() && !quoted => {
                if any {
                    words.push(std::mem::take(&mut word));
                    any = false;
                }
            }
            c => {
                word.push(c);
                any = true;
            }
        }
    }
    if any {
        words.push(word);
    }
    words
}

impl ProjectCommand {
    /// The prompt for `args`: `$ARGUMENTS` and `$1`..`$9` filled in (a missing word is empty);
    /// a template that uses neither gets non-empty arguments appended.
    pub fn expand(&self, args: &str) -> String {
        let args = args.trim();
        let words = words(args);
        let mut out = String::with_capacity(self.body.len() + args.len());
        let mut rest = self.body.as_str();
        let mut used_arguments = false;
        while let Some(at) = rest.find('$') {
            out.push_str(&rest[..at]);
            let after = &rest[at + 1..];
            if let Some(tail) = after.strip_prefix("ARGUMENTS") {
                out.push_str(args);
                used_arguments = true;
                rest = tail;
            } else if let Some(digit) = after.chars().next().filter(|c| ('1'..='9').contains(c)) {
                let n = digit as usize - '1' as usize;
                out.push_str(words.get(n).map(String::as_str).unwrap_or(""));
                used_arguments = true;
                rest = &after[1..];
            } else {
                out.push('$');
                rest = after;
            }
        }
        out.push_str(rest);
        let mut prompt = out.trim().to_owned();
        if !used_arguments && !args.is_empty() {
            prompt.push_str("\n\nARGUMENTS: ");
            prompt.push_str(args);
        }
        prompt
    }

    /// The tools a run of this command may call, from `offered` (the registry's names):
    /// `allowed-tools` narrows, never widens (names that are no tool are dropped), and `None`
    /// when the command sets no limit. Names match exactly, ignoring case, or as a `*` glob
    /// (`mcp__github__*`).
    pub fn narrowed(&self, offered: &[&str]) -> Option<Vec<String>> {
        let allowed = self.allowed_tools.as_ref()?;
        Some(
            offered
                .iter()
                .filter(|name| allowed.iter().any(|pattern| matches(pattern, name)))
                .map(|name| (*name).to_owned())
                .collect(),
        )
    }

    /// Why other tools are refused during a run of this command.
    pub fn why_narrowed(&self) -> String {
        format!(
            "the command /{} allows only the tools in its allowed-tools",
            self.name
        )
    }
}

/// `pattern` (a tool name, a `*` glob, or Claude Code's `Tool(...)` form, whose argument part is
/// ignored) against `name`, ignoring case.
fn matches(pattern: &str, name: &str) -> bool {
    let pattern = pattern.split('(').next().unwrap_or(pattern).trim();
    let (pattern, name) = (pattern.to_ascii_lowercase(), name.to_ascii_lowercase());
    match pattern.split_once('*') {
        None => pattern == name,
        Some((head, tail)) => {
            name.len() >= head.len() + tail.len() && name.starts_with(head) && name.ends_with(tail)
        }
    }
}

/// Narrows what `agent`'s session may call to `command`'s `allowed-tools`, when it has them
/// (lifted with `Session::allow_only(None)`).
pub fn narrow(command: &ProjectCommand, agent: &lathe_agent::Agent) {
    let runner = agent.executor().runner();
    let names = runner.registry().names();
    if let Some(allowed) = command.narrowed(&names) {
        runner
            .session()
            .allow_only(Some((allowed, command.why_narrowed())));
    }
}

/// The task `lathe exec` runs for `task`: a project command's prompt when `task` is `/NAME
/// args` and NAME is one (with the command), `task` itself when it does not start with `/` or
/// is no command name (`/etc/hosts ...`), and an error naming the commands for `/NAME` with
/// no such command.
pub fn exec_task(
    commands: &Commands,
    task: String,
) -> anyhow::Result<(String, Option<ProjectCommand>)> {
    if !task.starts_with('/') {
        return Ok((task, None));
    }
    let Some((name, args)) = split_invocation(&task) else {
        return Ok((task, None));
    };
    let Some(command) = commands.get(name) else {
        let known = if commands.is_empty() {
            "there are none (put a template in .lathe/commands/NAME.md)".to_owned()
        } else {
            format!("the commands are {}", commands.names())
        };
        anyhow::bail!(
            "no project command /{}: {known}; to send a task that starts with `/`, start it \
             with a space",
            crate::sanitize::sanitize(name)
        );
    };
    Ok((command.expand(args), Some(command.clone())))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn command(body: &str) -> ProjectCommand {
        ProjectCommand {
            name: "t".into(),
            description: None,
            argument_hint: None,
            allowed_tools: None,
            model: None,
            body: body.into(),
            path: PathBuf::new(),
            scope: Scope::Workspace,
        }
    }

    #[test]
    fn arguments_and_positions_are_filled_in_and_appended_when_unused() {
        let c = command("Fix issue #$1 in $2.\nAll: $ARGUMENTS. Cost: $5 or $x.\n");
        assert_eq!(
            c.expand(r#"42 "src/a b.rs" tail"#),
            "Fix issue #42 in src/a b.rs.\nAll: 42 \"src/a b.rs\" tail. Cost:  or $x."
        );
        assert_eq!(
            command("Review the diff.").expand("carefully"),
            "Review the diff.\n\nARGUMENTS: carefully"
        );
        assert_eq!(command("Review $ARGUMENTS.").expand(""), "Review .");
        assert_eq!(command("Review.").expand("  "), "Review.");
    }

    #[test]
    fn invocations_are_names_not_paths() {
        assert_eq!(split_invocation("/review  src "), Some(("review", "src")));
        assert_eq!(split_invocation("/front:test"), Some(("front:test", "")));
        assert_eq!(split_invocation("/etc/hosts explain"), None);
        assert_eq!(split_invocation("// note"), None);
        assert_eq!(split_invocation("/ spaced"), None);
        assert_eq!(split_invocation("review"), None);
    }

    #[test]
    fn front_matter_sets_the_fields_and_the_body_stays() {
        let dir = tempfile::tempdir().unwrap();
        let commands = dir.path().join("commands");
        std::fs::create_dir_all(commands.join("ops")).unwrap();
        std::fs::write(
            commands.join("review.md"),
            "---\ndescription: \"Review a change\"\nargument-hint: [file]\nallowed-tools: \
             [read_file, 'grep', mcp__gh__*]\nmodel: qwen3:8b\n---\nReview $ARGUMENTS.\n",
        )
        .unwrap();
        std::fs::write(
            commands.join("ops/deploy.md"),
            "# Deploy the app\n\nSteps.\n",
        )
        .unwrap();
        std::fs::write(commands.join("bad name.md"), "x").unwrap();
        std::fs::write(commands.join("notes.txt"), "not a command").unwrap();
        let loaded = Commands::load_from(&[(Scope::Workspace, commands.clone())]);
        let review = loaded.get("/review").unwrap();
        assert_eq!(review.description.as_deref(), Some("Review a change"));
        assert_eq!(review.argument_hint.as_deref(), Some("[file]"));
        assert_eq!(review.model.as_deref(), Some("qwen3:8b"));
        assert_eq!(
            review.allowed_tools.as_deref(),
            Some(&["read_file".to_owned(), "grep".into(), "mcp__gh__*".into()][..])
        );
        assert_eq!(review.body, "Review $ARGUMENTS.\n");
        let deploy = loaded.get("ops:deploy").unwrap();
        assert_eq!(deploy.description.as_deref(), Some("Deploy the app"));
        assert_eq!(loaded.names(), "/ops:deploy, /review");
        assert_eq!(loaded.problems.len(), 1, "{:?}", loaded.problems);
        assert!(loaded.problems[0].contains("cannot be a command name"));
        assert_eq!(
            review.narrowed(&[
                "read_file",
                "grep",
                "shell",
                "mcp__gh__issues",
                "Write_File"
            ]),
            Some(vec![
                "read_file".to_owned(),
                "grep".into(),
                "mcp__gh__issues".into()
            ])
        );
        assert_eq!(deploy.narrowed(&["shell"]), None);
    }

    #[test]
    fn the_workspace_wins_a_name_and_unclosed_front_matter_is_body() {
        let dir = tempfile::tempdir().unwrap();
        let (ws, user) = (dir.path().join("ws"), dir.path().join("user"));
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::create_dir_all(&user).unwrap();
        std::fs::write(ws.join("review.md"), "workspace review").unwrap();
        std::fs::write(user.join("review.md"), "user review").unwrap();
        std::fs::write(user.join("mine.md"), "---\ndescription: x\nno end").unwrap();
        let loaded = Commands::load_from(&[(Scope::Workspace, ws), (Scope::User, user)]);
        assert_eq!(loaded.get("review").unwrap().body, "workspace review");
        assert_eq!(
            loaded.get("MINE").unwrap().body,
            "---\ndescription: x\nno end"
        );
        assert_eq!(loaded.all().len(), 2);
        assert!(loaded.help().contains("/mine"));
        assert!(loaded.help().contains("(user command)"));
    }
}

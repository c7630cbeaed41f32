//! Walks the tree-sitter syntax tree and finds every simple command a script would run.

use std::collections::{HashMap, HashSet};

use tree_sitter::Node;

use crate::analysis::{Finding, SimpleCommand};
use crate::context::AnalysisContext;
use crate::dispatch::{Invocation, dispatch, risky_env};
use crate::redirect::{Follower, RedirectSpec};
use crate::severity::Severity;
use crate::word::Word;

/// `bash -c "bash -c \"...\""` nesting deeper than this is not followed: it is rare in honest
/// commands and unbounded recursion would let a crafted command exhaust the stack.
pub(crate) const MAX_SCRIPT_DEPTH: usize = 8;
/// Syntax trees deeper than this are not walked further, for the same reason.
pub(crate) const MAX_NODE_DEPTH: usize = 200;

/// Variable values longer than this are treated as unknown: `x=$x$x` repeated would
/// otherwise double the text at every step.
const MAX_VALUE_LEN: usize = 4096;

/// The value to remember for a variable.
pub(crate) fn capped(value: &Word) -> Option<String> {
    value.value.clone().filter(|v| v.len() <= MAX_VALUE_LEN)
}

/// What the shell knows at a point of the script.
#[derive(Debug, Clone)]
pub(crate) struct Scope {
    /// The current directory; None once a `cd` to an unknown place ran.
    pub cwd: Option<String>,
    /// Variables assigned in the script: Some(value) when the value is literal.
    pub vars: HashMap<String, Option<String>>,
    /// Shell functions defined so far.
    pub functions: HashSet<String>,
    /// Variables whose value is not known but is a number (`n=$((n+1))`): harmless where bash
    /// evaluates a value as arithmetic.
    pub numbers: HashSet<String>,
    /// Variables declared with `-i`: every value assigned to them is evaluated as arithmetic.
    pub integers: HashSet<String>,
    /// Associative arrays (`declare -A`): their subscripts are strings, not arithmetic.
    pub assoc: HashSet<String>,
    /// Namerefs (`declare -n`): a value assigned to one names a variable.
    pub namerefs: HashSet<String>,
}

impl Scope {
    pub fn new(ctx: &AnalysisContext) -> Self {
        Scope {
            cwd: Some(ctx.cwd().to_string()),
            vars: HashMap::new(),
            functions: HashSet::new(),
            numbers: HashSet::new(),
            integers: HashSet::new(),
            assoc: HashSet::new(),
            namerefs: HashSet::new(),
        }
    }

    /// The value of a variable, if the script alone decides it.
    pub fn var(&self, name: &str, ctx: &AnalysisContext) -> Option<String> {
        if let Some(v) = self.vars.get(name) {
            return v.clone();
        }
        match name {
            "HOME" => Some(ctx.home().to_string()),
            "PWD" => self.cwd.clone(),
            _ => None,
        }
    }
}

/// Where a command's standard input comes from.
#[derive(Debug, Clone)]
pub(crate) enum Stdin {
    /// Whatever Lathe gives it (no redirection, not in a pipeline).
    Terminal,
    /// An earlier stage of a pipeline; `download` when a network download feeds it.
    Pipe { download: bool },
    /// `< file`.
    File(Word),
    /// A here-document with this body.
    Heredoc { body: String },
    /// `<<< word`.
    Herestring(Word),
}

/// What surrounds the commands of a nested script: the wrappers that run it and what they
/// impose (`sudo` makes everything inside critical).
#[derive(Debug, Clone, Default)]
pub(crate) struct Frame {
    pub texts: Vec<String>,
    pub imposed: Vec<(Severity, String)>,
    /// Set inside `xargs` / `find -exec`: a destructive command runs once per input item.
    pub per_item: Option<String>,
}

/// What the walk collects.
#[derive(Debug, Default)]
pub(crate) struct Output {
    pub commands: Vec<SimpleCommand>,
    pub findings: Vec<Finding>,
    pub parse_error: bool,
    /// Hidden-code bookkeeping for the whole command line (see `hidden.rs`).
    pub hidden: crate::hidden::Tracker,
}

impl Output {
    pub fn finding(&mut self, severity: Severity, reason: impl Into<String>) {
        let reason = reason.into();
        if !self.findings.iter().any(|f| f.reason == reason) {
            self.findings.push(Finding { severity, reason });
        }
    }

    /// Whether any command recorded since `from` downloads from the network.
    pub fn downloads_since(&self, from: usize) -> bool {
        self.commands
            .get(from..)
            .is_some_and(|c| c.iter().any(|c| c.downloads))
    }
}

pub(crate) struct Walker<'a> {
    pub ctx: &'a AnalysisContext,
    pub src: &'a str,
    pub depth: usize,
    pub frame: Frame,
    pub out: &'a mut Output,
}

pub(crate) fn children(node: Node<'_>) -> Vec<Node<'_>> {
    let mut cursor = node.walk();
    node.children(&mut cursor).collect()
}

/// Children with the field name each has in its parent.
pub(crate) fn fields<'t>(node: Node<'t>) -> Vec<(Option<&'t str>, Node<'t>)> {
    let mut cursor = node.walk();
    let mut out = Vec::new();
    if cursor.goto_first_child() {
        loop {
            out.push((cursor.field_name(), cursor.node()));
            if !cursor.goto_next_sibling() {
                break;
            }
        }
    }
    out
}

impl<'a> Walker<'a> {
    pub fn text(&self, node: Node<'_>) -> &'a str {
        self.src.get(node.byte_range()).unwrap_or("")
    }

    pub(crate) fn too_deep(&mut self) {
        self.out.finding(
            Severity::Dangerous,
            "the command is nested too deeply to analyse completely",
        );
    }

    pub fn walk(&mut self, node: Node<'_>, scope: &mut Scope, stdin: &Stdin, nd: usize) {
        if nd > MAX_NODE_DEPTH {
            self.too_deep();
            return;
        }
        match node.kind() {
            "command" => self.command(node, scope, &[], stdin, self.text(node), nd),
            "redirected_statement" => self.redirected(node, scope, stdin, nd),
            "pipeline" => self.stages(node, scope, stdin.clone(), nd),
            "list" => self.list(node, scope, stdin, nd),
            "subshell" | "command_substitution" | "process_substitution" => {
                let mut inner = scope.clone();
                self.walk_children(node, &mut inner, stdin, nd);
            }
            "function_definition" => self.function(node, scope, nd),
            "variable_assignment" => {
                let (name, value) = self.assignment(node, scope, nd);
                self.set_var(&name, &value, scope);
            }
            "declaration_command" | "unset_command" => self.declaration(node, scope, nd),
            "while_statement" => {
                let endless = node
                    .child_by_field_name("condition")
                    .map(|c| self.text(c).trim().trim_end_matches(';').trim())
                    .is_some_and(|c| matches!(c, "true" | ":" | "[ 1 ]" | "(( 1 ))"));
                let body = node
                    .child_by_field_name("body")
                    .map(|b| self.text(b))
                    .unwrap_or("");
                if endless && body.replace("&&", "").contains('&') {
                    self.out.finding(
                        Severity::Dangerous,
                        "an endless loop starts background processes, which can exhaust the machine",
                    );
                }
                self.walk_children(node, scope, stdin, nd);
            }
            "for_statement" => {
                if let Some(var) = node.child_by_field_name("variable") {
                    let name = self.text(var);
                    scope.vars.insert(name.to_string(), None);
                    // the loop variable takes each listed word in turn: literal words (braces
                    // and quotes included) are harmless in arithmetic; expansions and globs,
                    // which can yield any text (a file named `a[$(cmd)]`), are not
                    let plain = fields(node)
                        .iter()
                        .filter(|(f, _)| *f == Some("value"))
                        .all(|(_, v)| {
                            let text = self.text(*v);
                            crate::hidden::substitution_prints_numbers(text)
                                || crate::hidden::array_indices(text, scope)
                                || !text.contains(['$', '`', '*', '?', '[', '\\', '(', '<', '>'])
                        });
                    let value = if plain {
                        let mut w = Word::unknown(name, "the loop variable");
                        w.inert = true;
                        w
                    } else {
                        Word::unknown(name, "the loop variable")
                    };
                    self.assigned(name, &value, scope);
                }
                self.walk_children(node, scope, stdin, nd);
            }
            "c_style_for_statement" => {
                let what = "`for (( ... ))`";
                for (field, child) in fields(node) {
                    match field {
                        Some("body") => self.walk(child, scope, stdin, nd + 1),
                        _ if child.is_named() => self.arith_node(child, scope, what, nd + 1),
                        _ => {}
                    }
                }
            }
            "compound_statement" if children(node).first().is_some_and(|c| c.kind() == "((") => {
                let what = format!("`{}`", crate::hidden::short(self.text(node)));
                self.arith_node(node, scope, &what, nd + 1);
            }
            "arithmetic_expansion" => {
                let what = format!("`{}`", crate::hidden::short(self.text(node)));
                for child in children(node) {
                    if child.is_named() {
                        self.arith_node(child, scope, &what, nd + 1);
                    }
                }
            }
            "subscript" => self.subscript(node, scope, nd),
            "test_command" => self.test_node(node, scope, stdin, nd, true),
            "ERROR" => {
                self.out.parse_error = true;
                self.walk_children(node, scope, stdin, nd);
            }
            "comment" | "heredoc_start" | "heredoc_end" | "heredoc_content" => {}
            _ => self.walk_children(node, scope, stdin, nd),
        }
    }

    pub fn walk_children(&mut self, node: Node<'_>, scope: &mut Scope, stdin: &Stdin, nd: usize) {
        for child in children(node) {
            if child.is_named() {
                self.walk(child, scope, stdin, nd + 1);
            }
        }
    }

    /// Pipeline stages each run in a subshell; once a download feeds the pipe, every later
    /// stage may be reading it.
    fn stages(&mut self, node: Node<'_>, scope: &Scope, input: Stdin, nd: usize) {
        let mut download = matches!(input, Stdin::Pipe { download: true });
        let mut first = true;
        for child in children(node) {
            if !child.is_named() || child.kind() == "comment" {
                continue;
            }
            let stage_in = if first {
                input.clone()
            } else {
                Stdin::Pipe { download }
            };
            first = false;
            let before = self.out.commands.len();
            let mut inner = scope.clone();
            self.walk(child, &mut inner, &stage_in, nd + 1);
            download |= self.out.downloads_since(before);
        }
    }

    fn list(&mut self, node: Node<'_>, scope: &mut Scope, stdin: &Stdin, nd: usize) {
        let start_cwd = scope.cwd.clone();
        for child in children(node) {
            if !child.is_named() {
                // after `a || b`, b runs only if a failed: a `cd` in a may not have happened
                if child.kind() == "||" && scope.cwd != start_cwd {
                    scope.cwd = None;
                }
                continue;
            }
            self.walk(child, scope, stdin, nd + 1);
        }
    }

    fn function(&mut self, node: Node<'_>, scope: &mut Scope, nd: usize) {
        let name = node
            .child_by_field_name("name")
            .map(|n| self.text(n).to_string())
            .unwrap_or_default();
        scope.functions.insert(name.clone());
        let before = self.out.commands.len();
        let mut inner = scope.clone();
        for (field, child) in fields(node) {
            if field == Some("name") || !child.is_named() {
                continue;
            }
            self.walk(child, &mut inner, &Stdin::Terminal, nd + 1);
        }
        let recursive = self.out.commands[before..]
            .iter()
            .any(|c| c.program == name);
        if recursive {
            let body = node
                .child_by_field_name("body")
                .map(|b| self.text(b))
                .unwrap_or("");
            if body.contains('|') || body.contains('&') {
                self.out.finding(
                    Severity::Critical,
                    format!("fork bomb: the function `{name}` starts copies of itself until the machine stops"),
                );
            } else {
                self.out.finding(
                    Severity::Dangerous,
                    format!("the function `{name}` calls itself without end"),
                );
            }
        }
    }

    pub fn assignment(&mut self, node: Node<'_>, scope: &Scope, nd: usize) -> (String, Word) {
        let name_node = node.child_by_field_name("name");
        let name = name_node
            .map(|n| self.text(n).to_string())
            .unwrap_or_default();
        // `a[$(cmd)]=1` and `a[i]=1`: the subscript is expanded and evaluated
        if let Some(n) = name_node.filter(|n| n.kind() == "subscript") {
            self.subscript(n, scope, nd + 1);
        }
        let appends = children(node).iter().any(|c| c.kind() == "+=");
        let value = match node.child_by_field_name("value") {
            Some(v) => {
                if v.kind() == "array" {
                    let base = name.split(['[', '+']).next().unwrap_or("");
                    self.array_subscripts(v, base, scope);
                }
                self.word(v, scope, nd + 1)
            }
            None => Word::literal(""),
        };
        if appends {
            return (
                name.clone(),
                Word::unknown(&value.display, "an appended variable"),
            );
        }
        (name, value)
    }

    fn set_var(&mut self, name: &str, value: &Word, scope: &mut Scope) {
        self.assigned(name, value, scope);
        if let Some(why) = risky_env(name) {
            self.out.finding(
                Severity::Dangerous,
                format!("sets {name}={}, which {why}", value.display),
            );
        }
        scope.vars.insert(name.to_string(), capped(value));
    }

    fn declaration(&mut self, node: Node<'_>, scope: &mut Scope, nd: usize) {
        let unset = node.kind() == "unset_command";
        let what = format!("`{}`", crate::hidden::short(self.text(node)));
        let mut flags = String::new();
        for child in children(node) {
            match child.kind() {
                "variable_assignment" => {
                    let name = child
                        .child_by_field_name("name")
                        .map(|n| self.text(n))
                        .unwrap_or("");
                    crate::builtins::declared(name, &flags, scope);
                    let (name, value) = self.assignment(child, scope, nd);
                    self.set_var(&name, &value, scope);
                }
                _ if !child.is_named() => {}
                _ => {
                    let word = self.word(child, scope, nd + 1);
                    match word.known() {
                        _ if !unset => {
                            crate::builtins::declare_word(self, &word, &mut flags, scope, &what)
                        }
                        Some(v) if v.len() > 1 && v.starts_with('-') => {}
                        _ => {
                            self.name_word(&word, scope, &what);
                            if let Some(v) = word.known() {
                                scope.vars.insert(v.to_string(), None);
                                // an unset variable is empty: harmless in arithmetic
                                scope.numbers.insert(v.to_string());
                            }
                        }
                    }
                }
            }
        }
    }

    fn redirected(&mut self, node: Node<'_>, scope: &mut Scope, stdin: &Stdin, nd: usize) {
        let mut body = None;
        let mut redirects = Vec::new();
        for (field, child) in fields(node) {
            match field {
                Some("body") => body = Some(child),
                _ if child.kind().ends_with("redirect") => redirects.push(child),
                _ => {}
            }
        }
        match body {
            Some(b) if b.kind() == "command" => {
                self.command(b, scope, &redirects, stdin, self.text(node), nd)
            }
            _ => {
                // a block, loop or pipeline with redirections: judge them for the whole block
                let mut extra = Vec::new();
                let specs = self.redirect_specs(&redirects, scope, nd, &mut extra);
                let block_in = RedirectSpec::stdin(&specs).unwrap_or_else(|| stdin.clone());
                let before = self.out.commands.len();
                if let Some(b) = body {
                    self.walk(b, scope, &block_in, nd + 1);
                }
                let (judged, paths, assessment) = crate::redirect::judge(&specs, scope, self.ctx);
                self.record_writes("", &[], &paths, &judged, &block_in);
                // Every command of the block writes through these redirections: each carries
                // their paths, so the sensitive-path and location checks see them (tree-sitter
                // hangs `a && b > f` on the whole list, and a line-wide finding names no path).
                for command in &mut self.out.commands[before..] {
                    command.redirects.extend(judged.iter().cloned());
                    command.paths.extend(paths.iter().cloned());
                }
                for reason in assessment.reasons {
                    self.out.finding(
                        assessment.severity,
                        format!("{}: {reason}", self.text(node).lines().next().unwrap_or("")),
                    );
                }
                self.followers(extra, scope, before, nd);
            }
        }
    }

    /// Runs the commands that hang off a here-document (`cat <<EOF | sh`, `cat <<EOF && x`).
    fn followers(
        &mut self,
        followers: Vec<Follower<'_>>,
        scope: &mut Scope,
        from: usize,
        nd: usize,
    ) {
        let download = self.out.downloads_since(from);
        for f in followers {
            match f {
                Follower::Pipe(n) => self.stages(n, scope, Stdin::Pipe { download }, nd + 1),
                Follower::Then(n) => self.walk(n, scope, &Stdin::Terminal, nd + 1),
                Follower::Arg(_) => {}
            }
        }
    }

    fn command(
        &mut self,
        node: Node<'_>,
        scope: &mut Scope,
        outer: &[Node<'_>],
        stdin: &Stdin,
        source: &str,
        nd: usize,
    ) {
        let mut assigns = Vec::new();
        let mut argv = Vec::new();
        let mut redirect_nodes = Vec::new();
        for (field, child) in fields(node) {
            match (field, child.kind()) {
                (Some("name"), _) => argv.extend(self.word(child, scope, nd + 1).fields()),
                (Some("argument"), _) => argv.extend(self.word(child, scope, nd + 1).fields()),
                (Some("redirect"), _) => redirect_nodes.push(child),
                (_, "variable_assignment") => assigns.push(self.assignment(child, scope, nd)),
                (_, k) if k.ends_with("redirect") => redirect_nodes.push(child),
                _ if child.is_named() => {
                    let mut inner = scope.clone();
                    self.walk(child, &mut inner, stdin, nd + 1);
                }
                _ => {}
            }
        }
        redirect_nodes.extend_from_slice(outer);
        let mut extra = Vec::new();
        let specs = self.redirect_specs(&redirect_nodes, scope, nd, &mut extra);
        for f in &extra {
            if let Follower::Arg(n) = f {
                argv.extend(self.word(*n, scope, nd + 1).fields());
            }
        }
        let stdin = RedirectSpec::stdin(&specs).unwrap_or_else(|| stdin.clone());
        let before = self.out.commands.len();
        let invocation = Invocation {
            assigns,
            argv,
            redirects: specs,
            stdin,
            source: source.to_string(),
        };
        dispatch(self, invocation, scope);
        self.followers(extra, scope, before, nd);
    }
}

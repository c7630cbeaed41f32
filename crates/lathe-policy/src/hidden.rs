//! Code bash runs without it being written as a command.
//!
//! Arithmetic evaluates the subscripts of array references it meets, and a subscript expands
//! `$(...)` (`let 'a[$(rm x)]'`, `x='a[$(rm x)]'; (( x ))`). The same happens wherever bash takes
//! a variable *name* from a string (`printf -v`, `read`, `test -v`, namerefs, `${!x}`), where it
//! expands a prompt string (`${x@P}`, `PS4`), and where a builtin runs a callback. Where the text
//! is literal it is analysed like any `$(...)`; where it is not known statically (a variable whose
//! value comes from a command, a file the same line writes and then runs), a finding says the
//! command runs code the analysis cannot see, which is never `safe`.
//!
//! Variables the command line never assigns come from Lathe's own environment and are taken as
//! harmless; a variable assigned a value not known statically anywhere in the line (in a
//! subshell, a function, `eval`, `read`, a loop) is not.

use std::collections::{HashMap, HashSet};

use tree_sitter::Node;

use crate::analysis::{Access, PathRef, Redirect};
use crate::script::analyze_script;
use crate::severity::Severity;
use crate::walk::{MAX_NODE_DEPTH, Scope, Stdin, Walker, children};
use crate::word::Word;

mod scan;

use scan::*;
pub(crate) use scan::{array_indices, is_name, prints_numbers, substitution_prints_numbers};

/// How every finding about such code starts.
pub(crate) const UNSEEN: &str = "runs code the analysis cannot see";

/// Variables whose values name further variables are followed this deep.
const MAX_VALUE_DEPTH: usize = 8;
/// Nested evaluations (subscripts in values, callbacks, prompt strings) analysed per line.
const MAX_NESTED: usize = 256;
/// Characters of values scanned as arithmetic per command line.
const MAX_SCANNED: usize = 1 << 20;

/// What the hidden-code checks remember across the whole command line.
#[derive(Debug, Default)]
pub(crate) struct Tracker {
    /// Variables given a value not known statically somewhere in the line (also in a
    /// subshell, a function body or `eval`, whose scopes are not the caller's).
    pub tainted: HashSet<String>,
    /// Files the line writes, by absolute path; with their text when one literal write of
    /// known text made them (`cat > f <<'EOF'`, `echo ... > f`).
    pub written: HashMap<String, Option<String>>,
    /// Variables looked up while their value still seemed harmless: if one of them is
    /// tainted later in the line (a loop assigns it after using it), the line is analysed
    /// again with the taint known from the start.
    consulted: HashSet<String>,
    nested: usize,
    scanned: usize,
}

impl Tracker {
    /// The taint a second pass must start with, when the first pass looked up a variable
    /// before learning that the line gives it an unknown value.
    pub(crate) fn second_pass(&self) -> Option<HashSet<String>> {
        self.consulted
            .iter()
            .any(|n| self.tainted.contains(n))
            .then(|| self.tainted.clone())
    }

    /// Starts a pass that knows the line's taint in advance.
    pub(crate) fn seeded(tainted: HashSet<String>) -> Self {
        Tracker {
            tainted,
            ..Tracker::default()
        }
    }
}

/// The first 40 characters of a construct, for reasons.
pub(crate) fn short(text: &str) -> String {
    let line = text.lines().next().unwrap_or("");
    let mut s: String = line.chars().take(40).collect();
    if s.len() < text.len() {
        s.push_str("...");
    }
    s
}

impl Walker<'_> {
    /// Records that bash runs code here that cannot be known before it runs.
    pub(crate) fn unseen(&mut self, what: impl AsRef<str>) {
        self.out
            .finding(Severity::Dangerous, format!("{UNSEEN}: {}", what.as_ref()));
    }

    fn nested_allowed(&mut self) -> bool {
        self.out.hidden.nested += 1;
        if self.out.hidden.nested > MAX_NESTED {
            self.unseen(format!(
                "more than {MAX_NESTED} nested evaluations in one command line"
            ));
            return false;
        }
        true
    }

    /// The frame for code bash runs from `why`: each command found there says so.
    fn nested_frame(&self, why: &str) -> crate::walk::Frame {
        let mut frame = self.frame.clone();
        frame.texts.push(why.to_string());
        frame
            .imposed
            .push((Severity::Safe, format!("bash runs this from {why}")));
        frame
    }

    /// Analyses `text` as a script bash runs from `why` (a callback, `PROMPT_COMMAND`, a
    /// written script).
    pub(crate) fn nested_script(&mut self, text: &str, scope: &Scope, why: &str) {
        if !self.nested_allowed() {
            return;
        }
        let mut inner = scope.clone();
        let frame = self.nested_frame(why);
        analyze_script(self.ctx, text, &mut inner, self.depth + 1, frame, self.out);
    }

    /// Analyses text bash expands again as shell words (an expansion found in a value, a
    /// `compgen -W` word list): the commands of its `$(...)` are recorded like any others.
    pub(crate) fn nested_words(&mut self, span: &str, scope: &Scope, why: &str) {
        if !self.nested_allowed() {
            return;
        }
        let script = format!(": {span}");
        let before = self.out.commands.len();
        let mut inner = scope.clone();
        let frame = self.nested_frame(why);
        analyze_script(
            self.ctx,
            &script,
            &mut inner,
            self.depth + 1,
            frame,
            self.out,
        );
        // the `:` that carries the expansion is the analysis's, not the user's
        let mut i = before;
        while i < self.out.commands.len() {
            let c = &self.out.commands[i];
            if c.source == script && c.severity == Severity::Safe {
                self.out.commands.remove(i);
            } else {
                i += 1;
            }
        }
    }

    /// `text`, a known value, is evaluated as arithmetic by `what`.
    pub(crate) fn arith_value(&mut self, text: &str, scope: &Scope, what: &str) {
        let mut seen = HashSet::new();
        self.arith_text(text, scope, &mut seen, 0, what);
    }

    fn arith_text(
        &mut self,
        text: &str,
        scope: &Scope,
        seen: &mut HashSet<String>,
        depth: usize,
        what: &str,
    ) {
        self.out.hidden.scanned += text.len();
        if self.out.hidden.scanned > MAX_SCANNED {
            self.unseen(
                "more arithmetic on variable values than Lathe analyses in one command line",
            );
            return;
        }
        if depth > MAX_VALUE_DEPTH {
            self.unseen(format!(
                "{what}: values name other variables more than {MAX_VALUE_DEPTH} levels deep"
            ));
            return;
        }
        let found = scan(text);
        for span in &found.spans {
            self.nested_words(span, scope, what);
        }
        for name in found.names.iter().copied().chain(identifiers(&found.rest)) {
            self.arith_var(name, scope, seen, depth, what);
        }
    }

    /// Bash looks up `name` in arithmetic and evaluates its value as arithmetic in turn.
    fn arith_var(
        &mut self,
        name: &str,
        scope: &Scope,
        seen: &mut HashSet<String>,
        depth: usize,
        what: &str,
    ) {
        if !seen.insert(name.to_string()) || scope.numbers.contains(name) {
            return;
        }
        // `$1`, `$@` (arguments of a function or of `bash -c`) and `$_` (the last argument of
        // the previous command) are set by the command line itself
        if !is_name(name) || name == "_" {
            return self.unknown_value(name, what);
        }
        if self.out.hidden.tainted.contains(name) {
            return self.unknown_value(name, what);
        }
        match scope.vars.get(name) {
            Some(Some(value)) => {
                self.out.hidden.consulted.insert(name.to_string());
                let value = value.clone();
                self.arith_text(&value, scope, seen, depth + 1, what);
            }
            Some(None) => self.unknown_value(name, what),
            None => {
                self.out.hidden.consulted.insert(name.to_string());
            }
        }
    }

    fn unknown_value(&mut self, name: &str, what: &str) {
        self.unseen(format!(
            "{what} evaluates `{name}` as arithmetic, and its value is not known until run \
             time (a value such as `a[$(cmd)]` runs cmd)"
        ));
    }

    /// A resolved word that bash evaluates as arithmetic.
    pub(crate) fn arith_word(&mut self, w: &Word, scope: &Scope, what: &str) {
        if let Some(v) = w.known() {
            return self.arith_value(v, scope, what);
        }
        if w.inert {
            return;
        }
        // the word as written: `$name` stands for a value that is evaluated in turn, and the
        // output of a command substitution is evaluated as it comes
        let found = scan(&w.raw);
        let mut seen = HashSet::new();
        for span in &found.spans {
            let simple = span
                .strip_prefix("${")
                .and_then(|s| s.strip_suffix('}'))
                .filter(|s| is_name(s));
            let number = ["$((", "$[", "${#"].iter().any(|p| span.starts_with(p))
                || substitution_prints_numbers(span);
            match simple {
                Some(n) => self.arith_var(n, scope, &mut seen, 0, what),
                None if number => {}
                None => self.unseen(format!(
                    "{what} evaluates `{}` as arithmetic, which is not known until run time (a \
                     value such as `a[$(cmd)]` runs cmd)",
                    short(span)
                )),
            }
        }
        for n in found.names.iter().copied().chain(identifiers(&found.rest)) {
            self.arith_var(n, scope, &mut seen, 0, what);
        }
    }

    /// An arithmetic expression in the source (`(( ... ))`, `$(( ... ))`, a subscript, the
    /// operands of `[[ a -eq b ]]`): walked, with every value it evaluates checked.
    pub(crate) fn arith_node(&mut self, node: Node<'_>, scope: &Scope, what: &str, nd: usize) {
        if nd > MAX_NODE_DEPTH {
            self.too_deep();
            return;
        }
        match node.kind() {
            "variable_name" | "word" | "number" => {
                let text = self.text(node);
                self.arith_value(text, scope, what);
            }
            "command_substitution" => {
                let mut inner = scope.clone();
                self.walk(node, &mut inner, &Stdin::Terminal, nd + 1);
                if substitution_prints_numbers(self.text(node)) {
                    return;
                }
                self.unseen(format!(
                    "{what} evaluates the output of `{}` as arithmetic (output such as \
                     `a[$(cmd)]` runs cmd)",
                    short(self.text(node))
                ));
            }
            "subscript" => self.subscript(node, scope, nd),
            "simple_expansion"
            | "expansion"
            | "string"
            | "concatenation"
            | "raw_string"
            | "arithmetic_expansion"
            | "process_substitution" => {
                let w = self.word(node, scope, nd + 1);
                self.arith_word(&w, scope, what);
            }
            "comment" => {}
            _ => {
                for child in children(node) {
                    if child.is_named() {
                        self.arith_node(child, scope, what, nd + 1);
                    }
                }
            }
        }
    }

    /// `name[index]` in an assignment, an expansion or arithmetic: an indexed array's index is
    /// arithmetic; an associative array's is a string (its `$(...)` still runs).
    pub(crate) fn subscript(&mut self, node: Node<'_>, scope: &Scope, nd: usize) {
        let name = node
            .child_by_field_name("name")
            .map(|n| self.text(n))
            .unwrap_or("");
        let Some(index) = node.child_by_field_name("index") else {
            return;
        };
        if scope.assoc.contains(name) {
            let _ = self.word(index, scope, nd + 1);
        } else {
            let what = format!("the subscript `{}`", short(self.text(node)));
            self.arith_node(index, scope, &what, nd + 1);
        }
    }

    /// `arr=([i]=1 [$k]=2)`: the subscripts of an array literal are evaluated like any other.
    pub(crate) fn array_subscripts(&mut self, array: Node<'_>, name: &str, scope: &Scope) {
        if scope.assoc.contains(name) {
            return;
        }
        for element in children(array) {
            let text = self.text(element);
            let Some(rest) = text.strip_prefix('[') else {
                continue;
            };
            let Some(end) = rest.find("]=").or_else(|| rest.find("]+=")) else {
                continue;
            };
            let what = format!("the subscript in `{}`", short(text));
            // the element's own `$(...)` are walked with it; what they print is evaluated
            let found = scan(&rest[..end]);
            let mut seen = HashSet::new();
            for span in &found.spans {
                let simple = span
                    .strip_prefix("${")
                    .and_then(|s| s.strip_suffix('}'))
                    .filter(|s| is_name(s));
                match simple {
                    Some(n) => self.arith_var(n, scope, &mut seen, 0, &what),
                    None => self.unseen(format!(
                        "{what} evaluates `{}` as arithmetic, which is not known until run time",
                        short(span)
                    )),
                }
            }
            for n in found.names.iter().copied().chain(identifiers(&found.rest)) {
                self.arith_var(n, scope, &mut seen, 0, &what);
            }
        }
    }

    /// A string bash takes as a variable name (`printf -v NAME`, `read NAME`, `test -v NAME`,
    /// a nameref's target): a subscript in it is evaluated.
    pub(crate) fn name_text(&mut self, text: &str, scope: &Scope, what: &str) {
        if let Some(sub) = subscript_of(text) {
            let base = &text[..text.find('[').unwrap_or(0)];
            if scope.assoc.contains(base) {
                for span in scan(sub).spans {
                    self.nested_words(span, scope, what);
                }
            } else {
                self.arith_value(sub, scope, what);
            }
        }
    }

    /// A resolved word bash takes as a variable name.
    pub(crate) fn name_word(&mut self, w: &Word, scope: &Scope, what: &str) {
        // `printf -v "$name"` with `name` from Lathe's environment: as harmless as the rest
        let raw = w.raw.trim_matches('"');
        let simple = raw
            .strip_prefix("${")
            .and_then(|r| r.strip_suffix('}'))
            .or_else(|| raw.strip_prefix('$'))
            .filter(|n| is_name(n));
        match w.known() {
            Some(v) => self.name_text(v, scope, what),
            None if w.inert => {}
            None if simple.is_some_and(|n| !self.unknown(n, scope)) => {}
            None => self.unseen(format!(
                "{what} takes the variable name `{}`, which is not known until run time (a \
                 name such as `a[$(cmd)]` runs cmd)",
                w.display
            )),
        }
    }

    /// A string bash expands as a prompt (`${x@P}`, `PS0`-`PS4`): its `$(...)` run.
    pub(crate) fn prompt_word(&mut self, w: &Word, scope: &Scope, what: &str) {
        match w.known() {
            Some(v) => {
                for span in scan(v).spans {
                    self.nested_words(span, scope, what);
                }
            }
            None => self.unseen(format!(
                "{what} expands `{}` as a prompt, and its value is not known until run time",
                w.display
            )),
        }
    }

    /// A variable gets a value: keeps what the checks need to know about it, and analyses
    /// values bash will run (`PROMPT_COMMAND`, `PS4`, a `declare -i` variable's value).
    pub(crate) fn assigned(&mut self, name: &str, value: &Word, scope: &mut Scope) {
        let base = name.split('[').next().unwrap_or(name);
        if scope.integers.contains(base) {
            let what = format!("assigning to `{base}` (declared -i)");
            self.arith_word(value, scope, &what);
        }
        if scope.namerefs.contains(base) {
            let what = format!("assigning to the nameref `{base}`");
            self.name_word(value, scope, &what);
        }
        match name {
            "PROMPT_COMMAND" => match value.known() {
                Some(v) => self.nested_script(v, scope, "`PROMPT_COMMAND`"),
                None => self.unseen(format!(
                    "PROMPT_COMMAND is set to `{}`, which is not known until run time",
                    value.display
                )),
            },
            "PS0" | "PS1" | "PS2" | "PS3" | "PS4" => {
                self.prompt_word(value, scope, &format!("`{name}`"))
            }
            _ => {}
        }
        if value.is_known() {
            scope.numbers.remove(base);
        } else if value.inert {
            scope.numbers.insert(base.to_string());
        } else {
            scope.numbers.remove(base);
            self.out.hidden.tainted.insert(base.to_string());
        }
    }

    /// A builtin (`read`, `mapfile`, `printf -v`, ...) stores a value not known statically.
    pub(crate) fn taint(&mut self, name: &str, scope: &mut Scope) {
        let base = name.split('[').next().unwrap_or(name);
        if !is_name(base) {
            return;
        }
        if scope.integers.contains(base) {
            self.unseen(format!(
                "`{base}` is declared -i, so the value stored in it is evaluated as arithmetic \
                 (a value such as `a[$(cmd)]` runs cmd)"
            ));
        }
        if matches!(
            base,
            "PROMPT_COMMAND" | "PS0" | "PS1" | "PS2" | "PS3" | "PS4"
        ) {
            self.unseen(format!(
                "`{base}` gets a value not known until run time, and bash runs or expands it"
            ));
        } else if let Some(why) = crate::dispatch::risky_env(base) {
            self.out.finding(
                Severity::Dangerous,
                format!("sets {base} to a value not known until run time, which {why}"),
            );
        }
        scope.vars.insert(base.to_string(), None);
        scope.numbers.remove(base);
        self.out.hidden.tainted.insert(base.to_string());
    }

    /// `${...}` forms that evaluate more than a value: indirection (`${!x}`) takes a name from
    /// a value, `${x@P}` expands a value as a prompt, `${x:off:len}` evaluates arithmetic.
    /// Returns whether the offsets were walked here (then the caller must not walk them).
    pub(crate) fn expansion_forms(&mut self, node: Node<'_>, scope: &Scope, nd: usize) -> bool {
        let text = self.text(node);
        let Some(inner) = text.strip_prefix("${").and_then(|t| t.strip_suffix('}')) else {
            return false;
        };
        if let Some(rest) = inner.strip_prefix('!') {
            let len = rest.bytes().take_while(|&b| is_name_char(b)).count();
            let (name, after) = rest.split_at(len);
            let listing = matches!(after, "@" | "*" | "[@]" | "[*]");
            if !name.is_empty() && !listing {
                self.indirect(name, scope, text);
            }
            return false;
        }
        if let Some(name) = inner.strip_suffix("@P") {
            let what = format!("`{}`", short(text));
            match scope.var(name, self.ctx) {
                Some(v) => self.prompt_word(&Word::literal(&v), scope, &what),
                None if self.unknown(name, scope) => self.unseen(format!(
                    "{what} expands the value of `{name}` as a prompt, and it is not known until \
                     run time"
                )),
                None => {}
            }
            return false;
        }
        // `${x:offset:length}`, `${a[@]:offset}`, `${@:offset}`: after the parameter, a `:`
        // not followed by `-`, `=`, `+` or `?`
        let mut len = match inner.bytes().next() {
            Some(b'@' | b'*') => 1,
            _ => inner.bytes().take_while(|&b| is_name_char(b)).count(),
        };
        if len > 0 && inner[len..].starts_with('[') {
            len += span_end(inner.as_bytes(), len, b'[', b']').map_or(0, |e| e - len);
        }
        let after = &inner[len..];
        let offsets =
            len > 0 && after.starts_with(':') && !after[1..].starts_with(['-', '=', '+', '?']);
        if !offsets {
            return false;
        }
        let what = format!("the offset in `{}`", short(text));
        let mut past_colon = false;
        for child in children(node) {
            if !child.is_named() {
                past_colon |= self.text(child) == ":";
                continue;
            }
            if past_colon {
                self.arith_node(child, scope, &what, nd + 1);
            } else {
                let mut inner_scope = scope.clone();
                self.walk(child, &mut inner_scope, &Stdin::Terminal, nd + 1);
            }
        }
        true
    }

    /// Whether a variable's value is unknown and not from Lathe's environment.
    fn unknown(&mut self, name: &str, scope: &Scope) -> bool {
        if scope.numbers.contains(name) {
            return false;
        }
        if self.out.hidden.tainted.contains(name) || !is_name(name) || name == "_" {
            return true;
        }
        self.out.hidden.consulted.insert(name.to_string());
        scope.vars.get(name).is_some_and(Option::is_none)
    }

    fn indirect(&mut self, name: &str, scope: &Scope, text: &str) {
        let what = format!("`{}`", short(text));
        match scope.var(name, self.ctx) {
            Some(v) => self.name_text(&v, scope, &what),
            None if self.unknown(name, scope) => self.unseen(format!(
                "{what} uses the value of `{name}` as a variable name, and it is not known until \
                 run time (a name such as `a[$(cmd)]` runs cmd)"
            )),
            None => {}
        }
    }

    /// `[[ ... ]]` and `[ ... ]`: `-v NAME` takes a name; in `[[ ]]` the operands of `-eq`,
    /// `-lt`, ... are arithmetic. `double` says whether the enclosing test is `[[ ]]`.
    pub(crate) fn test_node(
        &mut self,
        node: Node<'_>,
        scope: &mut Scope,
        stdin: &Stdin,
        nd: usize,
        double: bool,
    ) {
        if nd > MAX_NODE_DEPTH {
            self.too_deep();
            return;
        }
        let what = format!("`{}`", short(self.text(node)));
        let op = node
            .child_by_field_name("operator")
            .or_else(|| {
                children(node)
                    .into_iter()
                    .find(|c| c.kind() == "test_operator")
            })
            .map(|o| self.text(o));
        // `[[ a -eq b ]]` evaluates its operands as arithmetic; `[ a -eq b ]` (also a
        // test_command to the grammar) wants plain integers and evaluates nothing
        let double = if node.kind() == "test_command" {
            self.text(node).starts_with("[[")
        } else {
            double
        };
        match (node.kind(), op) {
            ("binary_expression", Some("-eq" | "-ne" | "-lt" | "-le" | "-gt" | "-ge"))
                if double =>
            {
                for (field, child) in crate::walk::fields(node) {
                    if matches!(field, Some("left" | "right")) {
                        self.arith_node(child, scope, &what, nd + 1);
                    }
                }
            }
            ("unary_expression", Some("-v" | "-R")) => {
                for child in children(node) {
                    if child.is_named() && child.kind() != "test_operator" {
                        let w = self.word(child, scope, nd + 1);
                        self.name_word(&w, scope, &what);
                    }
                }
            }
            (
                "test_command"
                | "binary_expression"
                | "unary_expression"
                | "parenthesized_expression",
                _,
            ) => {
                for child in children(node) {
                    if child.is_named() {
                        self.test_node(child, scope, stdin, nd + 1, double);
                    }
                }
            }
            _ => self.walk(node, scope, stdin, nd),
        }
    }

    /// Records the files a command writes, and their text when one literal write made them.
    pub(crate) fn record_writes(
        &mut self,
        base: &str,
        argv: &[Word],
        paths: &[PathRef],
        redirects: &[Redirect],
        stdin: &Stdin,
    ) {
        let single = redirects.iter().filter(|r| r.writes).count() == 1
            && redirects
                .iter()
                .any(|r| r.writes && matches!(r.operator.as_str(), ">" | "1>" | ">|"));
        let content = match (base, stdin) {
            // an unquoted here-document expands `$...` and `\` while writing: only a body
            // without them is written as it reads
            ("cat", Stdin::Heredoc { body }) if single && argv.len() == 1 => {
                (!body.contains(['$', '`', '\\'])).then(|| body.clone())
            }
            ("echo", _) if single => {
                let words: Option<Vec<&str>> = argv[1..].iter().map(Word::known).collect();
                words
                    .filter(|w| !w.first().is_some_and(|f| f.starts_with('-')))
                    .map(|w| format!("{}\n", w.join(" ")))
            }
            _ => None,
        };
        for p in paths {
            if p.access != Access::Write {
                continue;
            }
            if let Some(path) = &p.path {
                let again = self.out.hidden.written.contains_key(path);
                let text = if again { None } else { content.clone() };
                self.out.hidden.written.insert(path.clone(), text);
            }
        }
    }

    /// What the line wrote at `path` (or at a directory above it): `Some(text)` when known.
    pub(crate) fn written(&self, path: &str) -> Option<Option<String>> {
        if let Some(text) = self.out.hidden.written.get(path) {
            return Some(text.clone());
        }
        let mut dir = path;
        while let Some(i) = dir.rfind('/') {
            dir = &dir[..i];
            if dir.is_empty() {
                break;
            }
            if self.out.hidden.written.contains_key(dir) {
                return Some(None);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classify::test_support::{ctx, expect, run};
    use crate::severity::Severity::*;
    use crate::{ApprovalMode, Decision, PermissionsConfig, Policy};

    #[test]
    fn issue_12_1_literal_hidden_code_is_judged_by_what_it_runs() {
        expect(&[
            ("arr[$(rm -rf ~)]=1", Critical),
            ("let 'a[$(rm -rf ~)]'", Critical),
            ("x='a[$(rm -rf ~)]'; (( x ))", Critical),
            ("x='a[$(rm -rf ~)]'; y=x; echo $(( y + 1 ))", Critical),
            ("x='a[$(rm -rf ~)]'; [[ $x -eq 1 ]]", Critical),
            ("x='a[$(rm -rf ~)]'; [[ x -lt 1 ]]", Critical),
            ("[[ -v 'a[$(rm -rf ~)]' ]]", Critical),
            ("printf -v 'a[$(rm -rf ~)]' %s x", Critical),
            ("declare -i n='a[$(rm -rf ~)]'", Critical),
            ("declare -A m; m[k]=1; echo ${m[$(rm -rf ~)]}", Critical),
            ("x='a[$(rm -rf ~)]'; echo ${!x}", Critical),
            ("x='$(rm -rf ~)'; echo ${x@P}", Critical),
            ("mapfile -C 'rm -rf ~' -c 1 a < f", Critical),
            ("echo 'rm -rf ~' > x.sh && bash x.sh", Critical),
            ("cat > x.sh <<'EOF'\nrm -rf ~\nEOF\nsh x.sh", Critical),
            ("echo ls > x.sh && source x.sh", Normal),
            ("let 'a[0]' i=i+1", Safe),
            ("x='a[1]'; (( x ))", Safe),
        ]);
    }

    #[test]
    fn issue_12_1_unknown_hidden_code_is_dangerous() {
        expect(&[
            ("x=$(cat f); (( x ))", Dangerous),
            ("read x < f; echo $(( x + 1 ))", Dangerous),
            ("x=1; while read l; do (( x )); x=$l; done < f", Dangerous),
            ("for f in *; do (( f )); done", Dangerous),
            ("k=$(cat f); echo ${a[$k]}", Dangerous),
            ("declare -A m; k=$(cat f); echo ${m[$k]}", Safe),
            ("n=$(cat f); n=$((n+1)); (( n ))", Dangerous),
            ("n=$(cat f); echo ${s:n}", Dangerous),
            ("printf -v \"$(cat f)\" x", Dangerous),
            ("declare -i n; read n", Dangerous),
            ("declare -n r; r=$(cat f)", Dangerous),
            ("declare -n r=$(cat f)", Dangerous),
            ("declare -n r='a[$(rm -rf ~)]'", Critical),
            ("declare -n r=x; echo $r", Safe),
            ("p=$(cat f); echo ${p@P}", Dangerous),
            ("compgen -F undefined_fn x", Dangerous),
            ("f(){ :; }; compgen -F f x", Normal),
            ("PROMPT_COMMAND=$(cat f)", Dangerous),
            ("printf make > go.sh; bash go.sh", Dangerous),
            ("echo make > go.py; python3 go.py", Dangerous),
            (
                "printf '#!/usr/bin/python3' > go; chmod +x go; ./go",
                Dangerous,
            ),
            ("enable -f ./x.so x", Dangerous),
            ("printf -v \"$name\" %s x; test -v \"$name\"", Safe),
            ("name=$(cat f); printf -v \"$name\" %s x", Dangerous),
            ("printf 'all:\\n\\ttrue\\n' > Makefile && make", Dangerous),
            ("cp /tmp/m build/GNUmakefile; make -C build", Dangerous),
            ("echo x > rules.mk; make -f rules.mk all", Dangerous),
            ("echo x > justfile; just", Dangerous),
            ("echo x > notes.txt; make", Normal),
            ("f() { (( $1 )); }; f 'a[$(rm -rf ~)]'", Dangerous),
            ("f() { echo $(( $1 + 1 )); }; f 2", Dangerous),
            ("f() { echo ${!1}; }; f x", Dangerous),
            ("bash -c 'let \"n = $1\"' _ 'a[$(rm -rf ~)]'", Dangerous),
            (": 'a[$(rm -rf ~)]'; (( $_ ))", Dangerous),
            ("(( $# > 1 )) || echo few", Safe),
            ("x=$(cat f); if [ \"$x\" -gt 1 ]; then echo big; fi", Safe),
            (
                "x=$(cat f); if [[ \"$x\" -gt 1 ]]; then echo big; fi",
                Dangerous,
            ),
            ("n=$(wc -l f); (( n ))", Dangerous),
            ("n=$(seq -f %g 1 3); (( n ))", Dangerous),
            ("(( $(cat f) > 3 ))", Dangerous),
            (
                "(( $(wc -l < f) > 3 )); n=$(ls | wc -l); echo $(( n + $(nproc) ))",
                Safe,
            ),
            ("for i in $(seq 1 30); do echo $(( i % 7 )); done", Safe),
            (
                "a=(x y); for i in \"${!a[@]}\"; do echo \"${a[$i]}\"; done",
                Safe,
            ),
            (
                "declare -A m; for k in \"${!m[@]}\"; do echo $(( k )); done",
                Dangerous,
            ),
            (
                "cat > x.sh <<EOF\necho \\$(rm -rf ~)\nEOF\nbash x.sh",
                Dangerous,
            ),
            ("cat > x.sh <<'EOF'\necho hi\nEOF\nbash x.sh", Normal),
            ("v=$(cat f); let \"n = $v + 1\"", Dangerous),
            ("let \"n = $(cat f)\"", Dangerous),
            ("let \"n = $n + 1\" m=$((1+2))", Safe),
            ("printf -v PS4 x; set -x", Dangerous),
            ("read PATH < f", Dangerous),
            ("source /dev/fd/3 3< f", Dangerous),
        ]);
    }

    #[test]
    fn issue_12_1_policy_check_explains_hidden_code() {
        let config = PermissionsConfig::default();
        let policy =
            Policy::new(&config, ApprovalMode::ReadOnly, ctx()).unwrap_or_else(|e| panic!("{e}"));
        for command in [
            "x=$(cat f); (( x ))",
            "compgen -F callback x",
            "echo make >> go.sh; bash go.sh",
        ] {
            let report = policy.check(command);
            assert_eq!(report.decision, Decision::Deny, "{command}");
            let text = report.reasons.join("\n");
            assert!(text.contains(UNSEEN), "{command}: {text}");
            // a finding about the whole line has no single allow rule to suggest
            assert!(!text.contains("allow rule a rule"), "{command}: {text}");
        }
        let a = run("arr[$(rm victim.txt)]=1");
        assert_eq!(a.texts(), vec!["rm victim.txt"]);
        // literal hidden code: the command found says where bash runs it from
        for (command, from) in [
            ("let 'a[$(rm victim.txt)]'", "`let a[$(rm victim.txt)]`"),
            (
                "trap 'rm victim.txt' EXIT; mapfile -C 'rm x' a < f",
                "the callback of",
            ),
            (
                "echo 'rm victim.txt' > x.sh; bash x.sh",
                "`x.sh`, which this command line writes",
            ),
        ] {
            let report = policy.check(command);
            assert_eq!(report.decision, Decision::Deny, "{command}");
            let text = report.reasons.join("\n");
            assert!(
                text.contains(&format!("bash runs this from {from}")),
                "{command}: {text}"
            );
        }
    }

    #[test]
    fn scan_finds_every_expansion() {
        let s = scan("a[$(rm x)] + `id` + ${y@P} + $z + $[1] + b");
        assert_eq!(s.spans, vec!["$(rm x)", "`id`", "${y@P}", "$[1]"]);
        assert_eq!(s.names, vec!["z"]);
        assert_eq!(identifiers(&s.rest), vec!["a", "b"]);
        assert_eq!(scan("$(echo ')')x").spans, vec!["$(echo ')')"]);
        assert_eq!(scan("$(unclosed").spans, vec!["$(unclosed"]);
    }

    #[test]
    fn number_printers() {
        for yes in [
            "seq 1 10",
            "wc -l < f",
            "wc -l < \"$f\"",
            "ls | wc -l",
            "cat \"a | b\" | wc -c",
            "nproc",
            "date +%s",
            "git rev-list --count HEAD",
        ] {
            assert!(prints_numbers(yes), "{yes}");
        }
        for no in [
            "seq -f %g 1 3",
            "wc -l f",
            "cat f || wc -l",
            "echo 'a[$(id)] | wc -l < x'",
            "echo a \\| wc -l",
            "cat f; wc -l",
            "wc -l < f > g",
            "wc -l < \"$(cat f)\"",
            "date +%A",
            "cat f",
        ] {
            assert!(!prints_numbers(no), "{no}");
        }
    }

    #[test]
    fn numbers_are_not_identifiers() {
        assert_eq!(identifiers("0x1f + 2#101 + 10 + i_2"), vec!["i_2"]);
        assert_eq!(subscript_of("a[$(id)]"), Some("$(id)"));
        assert_eq!(subscript_of("plain"), None);
        assert!(is_name("_x1") && !is_name("1x") && !is_name("a[1]"));
    }
}

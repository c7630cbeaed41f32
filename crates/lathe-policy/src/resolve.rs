//! Resolving word nodes to [`Word`]s: quotes removed, known variables substituted, and any
//! command substitution inside walked as commands of their own.

use tree_sitter::Node;

use crate::context::AnalysisContext;
use crate::walk::{MAX_NODE_DEPTH, Scope, Stdin, Walker, children};
use crate::word::{Word, WordBuilder, is_secret_name};

impl Walker<'_> {
    /// Resolves a word node, walking any command substitution inside it.
    pub fn word(&mut self, node: Node<'_>, scope: &Scope, nd: usize) -> Word {
        let mut b = WordBuilder::new(self.text(node));
        self.word_part(node, scope, nd, &mut b, true, false);
        b.finish()
    }

    fn word_part(
        &mut self,
        node: Node<'_>,
        scope: &Scope,
        nd: usize,
        b: &mut WordBuilder,
        first: bool,
        in_quotes: bool,
    ) {
        let text = self.text(node);
        if nd > MAX_NODE_DEPTH {
            self.too_deep();
            b.dynamic(text, "a part nested too deeply to analyse".into());
            return;
        }
        match node.kind() {
            "word" | "brace_expression" => b.unquoted(text, first, self.ctx.home()),
            "number" if node.named_child_count() == 0 => b.unquoted(text, first, self.ctx.home()),
            "raw_string" => {
                let inner = text.strip_prefix('\'').unwrap_or(text);
                b.quoted(inner.strip_suffix('\'').unwrap_or(inner));
            }
            "ansi_c_string" => {
                let inner = text.strip_prefix("$'").unwrap_or(text);
                b.ansi_c(inner.strip_suffix('\'').unwrap_or(inner));
            }
            "string" => self.double_quoted(node, scope, nd, b),
            "translated_string" => {
                for child in children(node) {
                    if child.kind() == "string" {
                        self.double_quoted(child, scope, nd, b);
                    }
                }
            }
            "simple_expansion" | "expansion" => self.expansion(node, scope, nd, b, in_quotes),
            "arithmetic_expansion" => {
                let what = format!("`{}`", crate::hidden::short(text));
                for child in children(node) {
                    if child.is_named() {
                        self.arith_node(child, scope, &what, nd + 1);
                    }
                }
                b.dynamic_number(
                    text,
                    format!("the arithmetic `{}`", crate::hidden::short(text)),
                );
            }
            "command_substitution" | "process_substitution" => {
                let before = self.out.commands.len();
                let mut inner = scope.clone();
                self.walk_children(node, &mut inner, &Stdin::Terminal, nd + 1);
                if self.out.downloads_since(before) {
                    b.download();
                }
                if node.kind() == "process_substitution" {
                    b.process();
                }
                // `$(pwd)` is the current directory, a common way to spell it
                let inner_text = text.trim_start_matches("$(").trim_matches(['`', ')', ' ']);
                match (inner_text, &scope.cwd) {
                    ("pwd" | "pwd -L" | "pwd -P", Some(cwd))
                        if node.kind() == "command_substitution" =>
                    {
                        b.expanded("PWD", cwd, in_quotes)
                    }
                    _ if node.kind() == "command_substitution"
                        && crate::hidden::prints_numbers(inner_text) =>
                    {
                        let short: String = text.chars().take(40).collect();
                        b.dynamic_number(text, format!("the output of `{short}`"));
                    }
                    _ => {
                        let short: String = text.chars().take(40).collect();
                        b.dynamic(text, format!("the output of `{short}`"));
                    }
                }
            }
            "concatenation" | "command_name" => {
                let mut first_part = first;
                for child in children(node) {
                    if child.is_named() {
                        self.word_part(child, scope, nd + 1, b, first_part, in_quotes);
                    } else {
                        b.unquoted(self.text(child), first_part, self.ctx.home());
                    }
                    first_part = false;
                }
            }
            "regex" | "extglob_pattern" | "test_operator" | "variable_name" => b.quoted(text),
            _ => {
                let mut inner = scope.clone();
                self.walk_children(node, &mut inner, &Stdin::Terminal, nd + 1);
                let short: String = text.chars().take(40).collect();
                b.dynamic(text, format!("`{short}`"));
            }
        }
    }

    fn double_quoted(&mut self, node: Node<'_>, scope: &Scope, nd: usize, b: &mut WordBuilder) {
        let start = node.start_byte();
        let end = node.end_byte();
        let text = self.text(node);
        let mut pos = start + usize::from(text.starts_with('"'));
        let inner_end = if text.len() >= 2 && text.ends_with('"') {
            end - 1
        } else {
            end
        };
        b.quoted("");
        for child in children(node) {
            if !child.is_named() {
                continue;
            }
            if child.start_byte() > pos {
                b.double_quoted(self.src.get(pos..child.start_byte()).unwrap_or(""));
            }
            if child.kind() == "string_content" {
                b.double_quoted(self.text(child));
            } else {
                self.word_part(child, scope, nd + 1, b, false, true);
            }
            pos = child.end_byte();
        }
        if inner_end > pos {
            b.double_quoted(self.src.get(pos..inner_end).unwrap_or(""));
        }
    }

    fn expansion(
        &mut self,
        node: Node<'_>,
        scope: &Scope,
        nd: usize,
        b: &mut WordBuilder,
        in_quotes: bool,
    ) {
        let text = self.text(node);
        let kids = children(node);
        let named: Vec<&Node<'_>> = kids.iter().filter(|c| c.is_named()).collect();
        // `$#`, `$?`, `$$`, `$!` and `${#x}` are numbers
        let number =
            matches!(text, "$#" | "$?" | "$$" | "$!" | "${#}" | "${?}") || text.starts_with("${#");
        if number && text.len() > 1 {
            if text.starts_with("${#") {
                let mut inner = scope.clone();
                self.walk_children(node, &mut inner, &Stdin::Terminal, nd + 1);
            }
            b.dynamic_number(text, format!("the number {text}"));
            return;
        }
        for n in &named {
            if n.kind() == "variable_name" && is_secret_name(self.text(**n)) {
                b.secret(self.text(**n));
            }
        }
        let simple_name = match (node.kind(), named.as_slice()) {
            ("simple_expansion", [n]) if n.kind() == "variable_name" => Some(self.text(**n)),
            ("expansion", [n]) if n.kind() == "variable_name" && kids.len() == 3 => {
                Some(self.text(**n))
            }
            _ => None,
        };
        if simple_name.is_none()
            && let Some((name, value)) = substring(text, scope, self.ctx)
        {
            b.expanded(&name, &value, in_quotes);
            return;
        }
        match simple_name.and_then(|n| scope.var(n, self.ctx).map(|v| (n, v))) {
            Some((name, value)) => b.expanded(name, &value, in_quotes),
            None => {
                if !(node.kind() == "expansion" && self.expansion_forms(node, scope, nd)) {
                    let mut inner = scope.clone();
                    self.walk_children(node, &mut inner, &Stdin::Terminal, nd + 1);
                }
                b.dynamic(text, format!("the variable {text}"));
            }
        }
    }
}

/// `${NAME:offset}` and `${NAME:offset:length}` of a known variable (`${HOME:0:1}` is `/`).
fn substring(text: &str, scope: &Scope, ctx: &AnalysisContext) -> Option<(String, String)> {
    let inner = text.strip_prefix("${")?.strip_suffix('}')?;
    let mut parts = inner.splitn(3, ':');
    let name = parts.next()?;
    let valid = !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    let offset: usize = parts.next()?.trim().parse().ok()?;
    let length: Option<usize> = match parts.next() {
        Some(l) => Some(l.trim().parse().ok()?),
        None => None,
    };
    if !valid {
        return None;
    }
    let value = scope.var(name, ctx)?;
    let taken: String = value
        .chars()
        .skip(offset)
        .take(length.unwrap_or(usize::MAX))
        .collect();
    Some((name.to_string(), taken))
}

#[cfg(test)]
mod tests {
    use crate::classify::test_support::{expect, run};
    use crate::severity::Severity::*;

    #[test]
    fn words_resolve_like_the_shell() {
        expect(&[
            ("rm -rf \"$(pwd)\"", Critical),
            ("rm -rf `pwd`/..", Critical),
            ("rm -rf ${HOME:0:1}", Critical),
            ("rm -rf ${HOME:0}", Critical),
            ("rm -rf ${PWD}", Critical),
            ("X=/; rm -rf $X", Critical),
            ("F='-rf /'; rm $F", Critical),
            ("cat <<< $(rm -rf ~)", Critical),
            ("[[ $(rm -rf /) ]]", Critical),
            ("case $(rm -rf /) in *) ;; esac", Critical),
            ("while true; do bash & done", Dangerous),
            ("while :; do sleep 1; done", Safe),
            ("cat <<'EOF'\n$(rm -rf /)\nEOF", Safe),
            ("cat <<EOF\n$(rm -rf /)\nEOF", Critical),
        ]);
        let a = run("echo \"a\\\"b\" 'c d' $'e\\tf' g\\ h");
        assert_eq!(a.commands[0].args, vec!["a\"b", "c d", "e\tf", "g h"]);
    }
}

//! Parsing a script with tree-sitter-bash and walking it; syntax errors are findings.

use tree_sitter::{Node, Parser};

use crate::context::AnalysisContext;
use crate::severity::Severity;
use crate::walk::{Frame, MAX_SCRIPT_DEPTH, Output, Scope, Stdin, Walker};

/// Parses `text` as a shell script and records every command in it.
pub(crate) fn analyze_script(
    ctx: &AnalysisContext,
    text: &str,
    scope: &mut Scope,
    depth: usize,
    frame: Frame,
    out: &mut Output,
) {
    if depth > MAX_SCRIPT_DEPTH {
        out.finding(
            Severity::Dangerous,
            format!("scripts nested more than {MAX_SCRIPT_DEPTH} levels deep are not analysed"),
        );
        return;
    }
    let mut parser = Parser::new();
    if parser
        .set_language(&tree_sitter_bash::LANGUAGE.into())
        .is_err()
    {
        out.parse_error = true;
        out.finding(Severity::Dangerous, "the shell grammar could not be loaded");
        return;
    }
    let Some(tree) = parser.parse(ascii_copy(text), None) else {
        out.parse_error = true;
        out.finding(Severity::Dangerous, "the command could not be parsed");
        return;
    };
    let root = tree.root_node();
    if root.has_error() {
        out.parse_error = true;
        out.finding(Severity::Dangerous, describe_error(root, text));
    }
    let mut walker = Walker {
        ctx,
        src: text,
        depth,
        frame,
        out,
    };
    walker.walk(root, scope, &Stdin::Terminal, 0);
}

/// What the parser reads: `text` with every non-ASCII byte replaced by `x`.
///
/// tree-sitter-bash's external scanner hands the lookahead character to C's `isdigit` and
/// `isalpha`, which index a 256-entry table: a code point far above 255 reads far outside it and
/// crashes the process (`echo {😀`). `x` is a word character, as such bytes are to bash, and one
/// byte for one byte keeps every node's byte range valid in the original text, which is what the
/// walk reads words from.
fn ascii_copy(text: &str) -> String {
    text.bytes()
        .map(|b| if b.is_ascii() { char::from(b) } else { 'x' })
        .collect()
}

fn describe_error(root: Node<'_>, text: &str) -> String {
    let mut stack = vec![root];
    while let Some(node) = stack.pop() {
        if node.is_missing() {
            let p = node.start_position();
            return format!(
                "the command does not parse as shell: missing `{}` at line {} column {}; \
                 a command that does not parse is treated as dangerous",
                node.kind(),
                p.row + 1,
                p.column + 1
            );
        }
        if node.is_error() {
            let p = node.start_position();
            let near: String = text
                .get(node.byte_range())
                .unwrap_or("")
                .chars()
                .take(30)
                .collect();
            return format!(
                "the command does not parse as shell: syntax error near `{near}` at line {} \
                 column {}; a command that does not parse is treated as dangerous",
                p.row + 1,
                p.column + 1
            );
        }
        let mut cursor = node.walk();
        let children: Vec<Node<'_>> = node.children(&mut cursor).collect();
        stack.extend(children.into_iter().rev().filter(|c| c.has_error()));
    }
    "the command does not parse as shell; a command that does not parse is treated as dangerous"
        .to_string()
}

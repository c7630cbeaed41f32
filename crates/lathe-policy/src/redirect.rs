//! Redirections: where input comes from and what output overwrites.

use tree_sitter::Node;

use crate::analysis::Redirect;
use crate::context::AnalysisContext;
use crate::judge::{judge_read, judge_write};
use crate::severity::Assessment;
use crate::walk::{Scope, Stdin, Walker, fields};
use crate::word::Word;

/// Syntax that hangs off a here-document redirection but belongs to the command line.
pub(crate) enum Follower<'t> {
    /// `cat <<EOF | sh`: the pipeline continues after the here-document's command.
    Pipe(Node<'t>),
    /// `cat <<EOF && rm x`: a command that runs after.
    Then(Node<'t>),
    /// `cat <<EOF file`: an argument written after the here-document operator.
    Arg(Node<'t>),
}

/// One redirection, resolved.
#[derive(Debug, Clone)]
pub(crate) struct RedirectSpec {
    pub fd: Option<String>,
    pub op: String,
    pub target: Option<Word>,
    pub heredoc: Option<String>,
    pub herestring: Option<Word>,
}

impl RedirectSpec {
    /// The standard input these redirections give the command, if they change it.
    pub fn stdin(specs: &[RedirectSpec]) -> Option<Stdin> {
        let mut stdin = None;
        for s in specs {
            let fd0 = matches!(s.fd.as_deref(), None | Some("0"));
            if let Some(body) = &s.heredoc {
                stdin = Some(Stdin::Heredoc { body: body.clone() });
            } else if let Some(w) = &s.herestring {
                stdin = Some(Stdin::Herestring(w.clone()));
            } else if fd0
                && (s.op == "<" || s.op == "<>")
                && let Some(t) = &s.target
            {
                stdin = Some(Stdin::File(t.clone()));
            }
        }
        stdin
    }

    /// Whether the target is a descriptor (`2>&1`, `>&-`) rather than a file.
    fn duplicates(&self) -> bool {
        let dup_op = matches!(self.op.as_str(), ">&" | "<&" | ">&-" | "<&-");
        let target = self
            .target
            .as_ref()
            .map(|t| t.display.as_str())
            .unwrap_or("");
        dup_op && (target.is_empty() || target == "-" || target.chars().all(|c| c.is_ascii_digit()))
    }

    pub fn writes(&self) -> bool {
        if self.heredoc.is_some() || self.herestring.is_some() || self.duplicates() {
            return false;
        }
        matches!(
            self.op.as_str(),
            ">" | ">>" | "&>" | "&>>" | ">|" | "<>" | ">&"
        )
    }

    pub fn reads(&self) -> bool {
        !self.duplicates() && matches!(self.op.as_str(), "<" | "<>" | "<&")
    }
}

/// Judges redirections: writes outside the workspace or onto devices, reads of credentials.
pub(crate) fn judge(
    specs: &[RedirectSpec],
    scope: &Scope,
    ctx: &AnalysisContext,
) -> (Vec<Redirect>, Vec<crate::analysis::PathRef>, Assessment) {
    let cwd = scope.cwd.as_deref();
    let mut redirects = Vec::new();
    let mut paths = Vec::new();
    let mut a = Assessment::default();
    for s in specs {
        let operator = format!("{}{}", s.fd.as_deref().unwrap_or(""), s.op);
        let target = s
            .target
            .as_ref()
            .or(s.herestring.as_ref())
            .map(|t| t.display.clone())
            .unwrap_or_else(|| "here-document".to_string());
        let mut location = None;
        if let Some(t) = &s.target {
            if s.writes() {
                let (r, j) = judge_write(t, cwd, ctx);
                location = Some(r.location);
                paths.push(r);
                a.absorb(j);
            } else if s.reads() {
                let (r, j) = judge_read(t, cwd, ctx);
                location = Some(r.location);
                paths.push(r);
                a.absorb(j);
            }
        }
        redirects.push(Redirect {
            operator,
            target,
            writes: s.writes(),
            location,
        });
    }
    (redirects, paths, a)
}

impl<'a> Walker<'a> {
    /// Resolves redirection nodes; here-document extras go to `extra`.
    pub(crate) fn redirect_specs<'t>(
        &mut self,
        nodes: &[Node<'t>],
        scope: &Scope,
        nd: usize,
        extra: &mut Vec<Follower<'t>>,
    ) -> Vec<RedirectSpec> {
        let mut specs = Vec::new();
        let mut nested = Vec::new();
        for node in nodes {
            let mut spec = RedirectSpec {
                fd: None,
                op: String::new(),
                target: None,
                heredoc: None,
                herestring: None,
            };
            let mut strip_tabs = false;
            let mut quoted_delimiter = false;
            for (field, child) in fields(*node) {
                match (field, child.kind()) {
                    (Some("descriptor"), _) => spec.fd = Some(self.text(child).to_string()),
                    // the grammar can split `>& /dev/tcp/h/p 0>&1` into two destinations:
                    // the first is the real one
                    (Some("destination"), _) if spec.target.is_none() => {
                        spec.target = Some(self.word(child, scope, nd + 1))
                    }
                    (Some("right"), _) => extra.push(Follower::Then(child)),
                    (Some("redirect"), _) => nested.push(child),
                    (Some("argument"), _) => extra.push(Follower::Arg(child)),
                    (Some("operator"), _) => {}
                    (_, "pipeline") => extra.push(Follower::Pipe(child)),
                    (_, "heredoc_start") => {
                        let t = self.text(child);
                        quoted_delimiter = t.contains(['\'', '"', '\\']);
                    }
                    (_, "heredoc_body") => {
                        if !quoted_delimiter {
                            let mut inner = scope.clone();
                            self.walk_children(child, &mut inner, &Stdin::Terminal, nd + 1);
                        }
                        let body = self.text(child);
                        spec.heredoc = Some(if strip_tabs {
                            body.lines()
                                .map(|l| l.trim_start_matches('\t'))
                                .collect::<Vec<_>>()
                                .join("\n")
                        } else {
                            body.to_string()
                        });
                    }
                    (_, "heredoc_end" | "heredoc_content") => {}
                    (_, _) if !child.is_named() => {
                        let t = self.text(child);
                        if t == "<<-" {
                            strip_tabs = true;
                        }
                        if spec.op.is_empty() {
                            spec.op = t.to_string();
                        }
                    }
                    (_, _) if node.kind() == "herestring_redirect" => {
                        spec.herestring = Some(self.word(child, scope, nd + 1));
                    }
                    _ => {}
                }
            }
            if node.kind() == "heredoc_redirect" && spec.heredoc.is_none() {
                // a here-document whose body was cut off: it still feeds the command
                spec.heredoc = Some(String::new());
            }
            specs.push(spec);
        }
        if !nested.is_empty() {
            specs.extend(self.redirect_specs(&nested, scope, nd + 1, extra));
        }
        specs
    }
}

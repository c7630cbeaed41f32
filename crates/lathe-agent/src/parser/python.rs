//! Python-style calls: `read_file(path="a.rs")`, `[f(a=1), g(b=2)]`, `tool.call(q="x")`.
//! Values are read by the lenient JSON reader, which knows Python's quotes and literals.

use super::json::{parse_at, partial_token};
use super::names::ToolNames;
use super::{Repair, add_repairs, shape::CallParts};
use serde_json::{Map, Value};

/// A call as written: the dotted name and its arguments, positional ones without a key.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PyCall {
    pub name: String,
    pub args: Vec<(Option<String>, Value)>,
    pub repairs: Vec<Repair>,
}

/// The result of reading calls: the calls, the offset after them, and whether the text ended
/// inside one.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PyCalls {
    pub calls: Vec<PyCall>,
    pub end: usize,
    pub cut_off: bool,
}

/// Most arguments a call may have: keeps a pathological input from looping long.
const MAX_ARGS: usize = 64;

/// An identifier chain at `i`: `a`, `a.b`, `a.b.c`; returns its end.
pub(crate) fn ident_chain_end(src: &str, i: usize) -> Option<usize> {
    let b = src.as_bytes();
    let mut j = i;
    loop {
        let start = j;
        if !b
            .get(j)
            .is_some_and(|c| c.is_ascii_alphabetic() || *c == b'_')
        {
            return None;
        }
        while b
            .get(j)
            .is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_')
        {
            j += 1;
        }
        if j == start {
            return None;
        }
        if b.get(j) == Some(&b'.')
            && b.get(j + 1)
                .is_some_and(|c| c.is_ascii_alphabetic() || *c == b'_')
        {
            j += 1;
            continue;
        }
        return Some(j);
    }
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while b
        .get(i)
        .is_some_and(|c| matches!(c, b' ' | b'\t' | b'\r' | b'\n'))
    {
        i += 1;
    }
    i
}

/// One call at `start`.
fn call_at(src: &str, start: usize) -> Option<(PyCall, usize, bool)> {
    let b = src.as_bytes();
    let name_end = ident_chain_end(src, start)?;
    let mut name = src[start..name_end].to_string();
    // Llama's built-in tools are written `brave_search.call(query=...)`.
    if let Some(stripped) = name.strip_suffix(".call") {
        name = stripped.to_string();
    }
    let mut i = skip_ws(b, name_end);
    if b.get(i) != Some(&b'(') {
        return None;
    }
    i += 1;
    let mut call = PyCall {
        name,
        args: Vec::new(),
        repairs: Vec::new(),
    };
    loop {
        i = skip_ws(b, i);
        match b.get(i) {
            None => return Some((call, i, true)),
            Some(b')') => return Some((call, i + 1, false)),
            _ => {}
        }
        if call.args.len() >= MAX_ARGS {
            return None;
        }
        // `key=value` or a positional value.
        let mut key = None;
        if let Some(key_end) = ident_chain_end(src, i) {
            let after = skip_ws(b, key_end);
            if b.get(after) == Some(&b'=') && b.get(after + 1) != Some(&b'=') {
                key = Some(src[i..key_end].to_string());
                i = skip_ws(b, after + 1);
            } else if after >= b.len() {
                // The text ends inside a key.
                return Some((call, b.len(), true));
            }
        }
        if i >= b.len() {
            return Some((call, i, true));
        }
        let Some(value) = parse_at(src, i) else {
            // `limit=Tr` at the end of the text: a literal still arriving.
            return partial_token(src, i).then_some((call, b.len(), true));
        };
        add_repairs(&mut call.repairs, &value.repairs);
        call.args.push((key, value.value));
        if let Some(cut) = value.cut_off {
            call.repairs.push(Repair::Truncated {
                in_string: cut.in_string,
            });
            return Some((call, value.end, true));
        }
        i = skip_ws(b, value.end);
        match b.get(i) {
            None => return Some((call, i, true)),
            Some(b',') => i += 1,
            Some(b')') => {}
            _ => return None,
        }
    }
}

/// Whether everything from `i` is the start of a call: a name, then maybe spaces.
pub(crate) fn partial_call(src: &str, i: usize) -> bool {
    match ident_chain_end(src, i) {
        Some(end) => src.as_bytes()[end..]
            .iter()
            .all(|c| c.is_ascii_whitespace() || *c == b'.'),
        None => i >= src.len(),
    }
}

/// A call or a `[...]` list of calls at `start`.
pub(crate) fn calls_at(src: &str, start: usize) -> Option<PyCalls> {
    let b = src.as_bytes();
    if b.get(start) != Some(&b'[') {
        let (call, end, cut_off) = call_at(src, start)?;
        return Some(PyCalls {
            calls: vec![call],
            end,
            cut_off,
        });
    }
    let mut i = start + 1;
    let mut calls = Vec::new();
    loop {
        i = skip_ws(b, i);
        match b.get(i) {
            None => {
                return (!calls.is_empty()).then_some(PyCalls {
                    calls,
                    end: i,
                    cut_off: true,
                });
            }
            Some(b']') if !calls.is_empty() => {
                return Some(PyCalls {
                    calls,
                    end: i + 1,
                    cut_off: false,
                });
            }
            _ => {}
        }
        if calls.len() >= MAX_ARGS {
            return None;
        }
        let Some((call, end, cut_off)) = call_at(src, i) else {
            // `[f(a=1), g` at the end of the text: the next call is still arriving.
            return partial_call(src, i).then_some(PyCalls {
                calls,
                end: i,
                cut_off: true,
            });
        };
        calls.push(call);
        if cut_off {
            return Some(PyCalls {
                calls,
                end,
                cut_off: true,
            });
        }
        i = skip_ws(b, end);
        match b.get(i) {
            None => {
                return Some(PyCalls {
                    calls,
                    end: i,
                    cut_off: true,
                });
            }
            Some(b',') => i += 1,
            Some(b']') => {}
            _ => return None,
        }
    }
}

/// A call with its arguments as an object: keyword arguments by name, positional ones mapped
/// onto the tool's parameters in order. `None` when positional arguments cannot be placed.
pub(crate) fn to_parts(call: PyCall, names: &ToolNames) -> Option<CallParts> {
    let resolved = names.known(&call.name);
    let params = resolved.as_deref().map(|n| names.params(n)).unwrap_or(&[]);
    let mut arguments = Map::new();
    let mut positional = 0;
    for (key, value) in call.args {
        let key = match key {
            Some(k) => k,
            None => {
                let k = params.get(positional)?.clone();
                positional += 1;
                k
            }
        };
        arguments.insert(key, value);
    }
    Some(CallParts {
        written: call.name,
        arguments: Value::Object(arguments),
        id: None,
        repairs: call.repairs,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(text: &str) -> PyCalls {
        calls_at(text, 0).unwrap_or_else(|| panic!("no calls in {text:?}"))
    }

    #[test]
    fn keyword_calls_with_python_values() {
        let got = parse(
            r#"read_file(path="a.rs", limit=20, raw=True, opts={'x': None}, tags=["a", 'b'])"#,
        );
        assert!(!got.cut_off);
        assert_eq!(got.calls[0].name, "read_file");
        let names = ToolNames::new(["read_file"]);
        let parts = to_parts(got.calls[0].clone(), &names).unwrap();
        assert_eq!(
            parts.arguments,
            json!({"path": "a.rs", "limit": 20, "raw": true, "opts": {"x": null}, "tags": ["a", "b"]})
        );
    }

    #[test]
    fn lists_of_calls_and_builtin_style() {
        let got = parse("[f(a=1), g(b='two')]");
        assert_eq!(got.calls.len(), 2);
        assert_eq!(got.end, 20);
        let got = parse("brave_search.call(query=\"x\")");
        assert_eq!(got.calls[0].name, "brave_search");
        let got = parse("list_files()");
        assert!(got.calls[0].args.is_empty());
    }

    #[test]
    fn positional_arguments_follow_the_parameters() {
        let names = ToolNames::from_definitions(&[json!({"function": {"name": "read_file",
            "parameters": {"properties": {"path": {}, "limit": {}}, "required": ["path"]}}})]);
        let parts = to_parts(parse("read_file('a.rs', 5)").calls.remove(0), &names).unwrap();
        assert_eq!(parts.arguments, json!({"path": "a.rs", "limit": 5}));
        assert!(to_parts(parse("read_file('a', 1, 2)").calls.remove(0), &names).is_none());
    }

    #[test]
    fn cut_off_calls_are_marked() {
        let got = parse("write_file(path=\"a\", content=\"fn main() {");
        assert!(got.cut_off);
        assert!(matches!(
            got.calls[0].repairs.last(),
            Some(Repair::Truncated { in_string: true })
        ));
        assert_eq!(got.calls[0].args.len(), 2);
    }

    #[test]
    fn not_calls() {
        for text in [
            "read_file",
            "read_file[1]",
            "f(a b)",
            "f(a == 1)",
            "[]",
            "[f(a=1) g()]",
            "1(x)",
        ] {
            assert!(calls_at(text, 0).is_none(), "{text}");
        }
    }
}

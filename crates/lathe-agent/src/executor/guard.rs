//! The repeat guard: a model that makes the same call again and again, or goes round the same
//! few calls, and gets the same answers. (The nudge, the loop's other guard, is one of the
//! end-of-run checks: see the `end_checks` module.)

use std::collections::VecDeque;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::LazyLock;

use lathe_runtime::ToolOutput;
use regex::Regex;
use serde_json::Value;

/// The third identical call in a row with the same answers, or the third time round the same
/// cycle of calls, is not run...
pub const REFUSE_AT: u32 = 3;
/// ...and the run ends when the model makes it the fourth time, after being told.
pub const STOP_AT: u32 = 4;
/// The longest cycle of calls the guard looks for: a model reading `a`, `b`, `a`, `b`, ... is
/// caught, longer rounds are rare and would need many turns to tell from real work.
const MAX_PERIOD: usize = 4;
/// Calls remembered: enough to see the longest cycle reach `STOP_AT`, with room to spare.
const REMEMBERED: usize = 2 * STOP_AT as usize * MAX_PERIOD;
/// Arguments shown in a refusal before they are cut.
const SHOWN_ARGUMENTS: usize = 80;

/// What the repeat guard says about a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Repeat {
    /// Run it.
    Fresh,
    /// Do not run it; the model reads this.
    Refuse(String),
    /// Do not run it, and end the run: the model was told and did it again.
    Stop(String),
}

/// The answer a call got, as far as the guard knows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Answer {
    /// Its batch has not finished yet: calls of one batch are checked before any of them runs,
    /// and two unanswered calls count as answered alike.
    Pending,
    /// A hash of the result's text and whether it was an error.
    Known(u64),
}

/// One call the model made and what it got back.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Seen {
    /// The tool's name and its arguments with sorted keys.
    call: String,
    answer: Answer,
    /// When the guard refused it: how many calls back is the one it repeats, whose answer
    /// stands for its own.
    refused: Option<usize>,
}

impl Seen {
    /// The same call with the same answer.
    fn repeats(&self, other: &Seen) -> bool {
        self.call == other.call && self.answer == other.answer
    }
}

/// Counts calls that change nothing: the same call (same tool, same arguments) getting the same
/// answer as last time, or the same short round of calls (2 to 4 of them) getting the same
/// answers again. A call whose answer changed (new output of a running command, a file that was
/// written meanwhile) is progress and starts the count again.
///
/// [`check`](Self::check) each call before it runs, then give the batch's results, in call
/// order, to [`answered`](Self::answered).
#[derive(Debug, Default, Clone)]
pub struct RepeatGuard {
    seen: VecDeque<Seen>,
    /// Calls at the end of `seen` still waiting for their answer.
    unanswered: usize,
}

impl RepeatGuard {
    /// Checks the next call the model made.
    pub fn check(&mut self, name: &str, arguments: &Value) -> Repeat {
        let call = format!("{name}\u{0}{}", canonical(arguments));
        let verdict = (1..=MAX_PERIOD).find_map(|period| {
            let times = self.rounds(&call, period);
            (times >= REFUSE_AT).then_some((period, times))
        });
        let Some((period, times)) = verdict else {
            self.remember(Seen {
                call,
                answer: Answer::Pending,
                refused: None,
            });
            return Repeat::Fresh;
        };
        // A refused call gets no new answer: it stands for the one it repeats.
        let answer = self.seen[self.seen.len() - period].answer;
        let described = self.describe(name, arguments, period);
        self.remember(Seen {
            call,
            answer,
            refused: Some(period),
        });
        if times >= STOP_AT {
            Repeat::Stop(if period == 1 {
                format!(
                    "the model made the same {described} call {times} times in a row, getting \
                     the same answer each time, after being told it would not run again; the \
                     run was stopped"
                )
            } else {
                format!(
                    "the model went round the same {period} calls ({described}) {times} times, \
                     getting the same answers each time, after being told they would not run \
                     again; the run was stopped"
                )
            })
        } else if period == 1 {
            Repeat::Refuse(format!(
                "you made this exact {described} call, with the same arguments, {times} times \
                 in a row and got the same answer each time, so it was not run again: the \
                 result would not change. Use the result you already have, try something \
                 different, or finish with your answer. Making the same call again ends the run."
            ))
        } else {
            Repeat::Refuse(format!(
                "you have gone round the same {period} calls ({described}) {times} times and \
                 every one got the same answer as the round before, so this call was not run \
                 again: the results would not change. Use the results you already have, try \
                 something different, or finish with your answer. Going on with the same calls \
                 ends the run."
            ))
        }
    }

    /// Records the answers of the calls checked since the last batch, in call order. A call
    /// left without a result (the run was stopped) keeps no answer.
    pub fn answered<'a>(&mut self, outputs: impl IntoIterator<Item = &'a ToolOutput>) {
        let first = self.seen.len() - self.unanswered;
        for (at, output) in (first..self.seen.len()).zip(outputs) {
            // In call order, so the call a refused one repeats has its answer by now.
            self.seen[at].answer = match self.seen[at].refused {
                Some(back) => self.seen[at - back].answer,
                None => Answer::Known(fingerprint(output)),
            };
        }
        self.unanswered = 0;
        while self.seen.len() > REMEMBERED {
            self.seen.pop_front();
        }
    }

    /// How many times in a row the last `period` calls, followed by `call`, have been made with
    /// the same answers: 1 when `call` does not continue a round of that length. The new call
    /// is taken to get the answer its earlier self got, which is what the guard asks about.
    fn rounds(&self, call: &str, period: usize) -> u32 {
        let seen = &self.seen;
        let len = seen.len();
        if len < period || seen[len - period].call != call {
            return 1;
        }
        // Calls after the first round that each repeat the one `period` before them; the new
        // call is one of them.
        let mut repeating = 1;
        while repeating < len + 1 - period {
            let at = len - repeating;
            if !seen[at].repeats(&seen[at - period]) {
                break;
            }
            repeating += 1;
        }
        u32::try_from((repeating + period) / period).unwrap_or(u32::MAX)
    }

    /// The call that was repeated, or the round of calls ending with it, as the model reads it.
    fn describe(&self, name: &str, arguments: &Value, period: usize) -> String {
        let this = format!("`{name}` {}", shown(&canonical(arguments)));
        let len = self.seen.len();
        let before = self.seen.range(len + 1 - period..).map(|seen| {
            let (name, arguments) = seen.call.split_once('\u{0}').unwrap_or((&seen.call, ""));
            format!("`{name}` {}", shown(arguments))
        });
        before
            .chain(std::iter::once(this))
            .collect::<Vec<_>>()
            .join(", then ")
    }

    fn remember(&mut self, seen: Seen) {
        self.seen.push_back(seen);
        self.unanswered += 1;
    }
}

/// A hash of what the model read: the text and whether it was an error. Numbers are left out:
/// a wall time or the id of a command run anew changes on every call without telling the model
/// anything new, while output that grows or a status that changes still changes the text.
fn fingerprint(output: &ToolOutput) -> u64 {
    static NUMBER: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"[0-9]+(\.[0-9]+)?").expect("the number pattern is valid"));
    let mut hasher = DefaultHasher::new();
    NUMBER.replace_all(&output.text, "#").hash(&mut hasher);
    output.is_error.hash(&mut hasher);
    hasher.finish()
}

/// Arguments cut to a readable length.
fn shown(arguments: &str) -> String {
    match arguments.char_indices().nth(SHOWN_ARGUMENTS) {
        Some((end, _)) => format!("{}...", &arguments[..end]),
        None => arguments.to_owned(),
    }
}

/// JSON with object keys sorted at every level, so that key order does not make two calls
/// differ.
fn canonical(value: &Value) -> String {
    fn sorted(value: &Value) -> Value {
        match value {
            Value::Object(map) => {
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort();
                Value::Object(
                    keys.into_iter()
                        .map(|k| (k.clone(), sorted(&map[k])))
                        .collect(),
                )
            }
            Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
            other => other.clone(),
        }
    }
    sorted(value).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn third_identical_call_is_refused_fourth_stops() {
        let mut guard = RepeatGuard::default();
        let args = json!({"path": "a.rs", "offset": 1});
        assert_eq!(guard.check("read_file", &args), Repeat::Fresh);
        assert_eq!(
            guard.check("read_file", &json!({"offset": 1, "path": "a.rs"})),
            Repeat::Fresh
        );
        let Repeat::Refuse(text) = guard.check("read_file", &args) else {
            panic!()
        };
        assert!(text.contains("3 times in a row"), "{text}");
        assert!(matches!(guard.check("read_file", &args), Repeat::Stop(_)));
    }

    /// Checks one call, then gives it `answer` as its result, as the loop does for a batch of one.
    fn call(guard: &mut RepeatGuard, path: &str, answer: &str) -> Repeat {
        let verdict = guard.check("read_file", &json!({ "path": path }));
        guard.answered([&ToolOutput::ok(answer)]);
        verdict
    }

    #[test]
    fn a_different_call_resets_the_count() {
        let mut guard = RepeatGuard::default();
        for path in [
            "a.rs", "a.rs", "b.rs", "a.rs", "a.rs", "grep", "a.rs", "a.rs",
        ] {
            assert_eq!(call(&mut guard, path, "same"), Repeat::Fresh, "{path}");
        }
    }

    #[test]
    fn identical_answers_across_turns_are_refused_then_stop() {
        let mut guard = RepeatGuard::default();
        assert_eq!(call(&mut guard, "a.rs", "x"), Repeat::Fresh);
        assert_eq!(call(&mut guard, "a.rs", "x"), Repeat::Fresh);
        let Repeat::Refuse(text) = call(&mut guard, "a.rs", "refused") else {
            panic!()
        };
        assert!(text.contains("3 times in a row"), "{text}");
        assert!(text.contains(r#"`read_file` {"path":"a.rs"}"#), "{text}");
        let Repeat::Stop(text) = call(&mut guard, "a.rs", "refused") else {
            panic!()
        };
        assert!(text.contains("4 times in a row"), "{text}");
    }

    #[test]
    fn a_call_whose_answer_changes_is_progress() {
        let mut guard = RepeatGuard::default();
        // Polling a running command: each read shows more output, then it stays the same.
        for answer in ["1", "1 2", "1 2 3", "1 2 3 4", "done", "done"] {
            assert_eq!(call(&mut guard, "out", answer), Repeat::Fresh, "{answer}");
        }
        assert!(matches!(call(&mut guard, "out", "done"), Repeat::Refuse(_)));
        // An error that turns into a success with the same text is a change too.
        let mut guard = RepeatGuard::default();
        let args = json!({"path": "a.rs"});
        for output in [
            ToolOutput::error("x"),
            ToolOutput::ok("x"),
            ToolOutput::error("x"),
        ] {
            assert_eq!(guard.check("read_file", &args), Repeat::Fresh);
            guard.answered([&output]);
        }
    }

    #[test]
    fn answers_that_differ_only_in_numbers_are_the_same() {
        // Appending to a file three times: each run is a new command with its own wall time.
        let mut guard = RepeatGuard::default();
        for (id, ms) in [(1, "3"), (2, "4.5")] {
            let answer = format!("exit 0 | {ms} ms | 0 bytes, 0 lines | command {id}");
            assert_eq!(call(&mut guard, "log", &answer), Repeat::Fresh);
        }
        let answer = "exit 0 | 12 ms | 0 bytes, 0 lines | command 3";
        assert!(matches!(call(&mut guard, "log", answer), Repeat::Refuse(_)));
    }

    #[test]
    fn an_alternation_with_the_same_answers_is_a_cycle() {
        let mut guard = RepeatGuard::default();
        for path in ["a.rs", "b.rs", "a.rs", "b.rs", "a.rs"] {
            assert_eq!(call(&mut guard, path, path), Repeat::Fresh, "{path}");
        }
        let Repeat::Refuse(text) = call(&mut guard, "b.rs", "refused") else {
            panic!()
        };
        assert!(text.contains("the same 2 calls"), "{text}");
        assert!(text.contains("3 times"), "{text}");
        assert!(
            text.contains(r#"`read_file` {"path":"a.rs"}, then `read_file` {"path":"b.rs"}"#),
            "{text}"
        );
        assert!(matches!(
            call(&mut guard, "a.rs", "refused"),
            Repeat::Refuse(_)
        ));
        let Repeat::Stop(text) = call(&mut guard, "b.rs", "refused") else {
            panic!()
        };
        assert!(text.contains("4 times"), "{text}");
    }

    #[test]
    fn cycles_of_three_and_four_calls_are_caught() {
        for round in [&["a", "b", "c"][..], &["a", "b", "c", "d"]] {
            let mut guard = RepeatGuard::default();
            let calls = round.iter().cycle().take(round.len() * REFUSE_AT as usize);
            let verdicts: Vec<Repeat> = calls.map(|p| call(&mut guard, p, p)).collect();
            let (last, earlier) = verdicts.split_last().unwrap();
            assert!(earlier.iter().all(|v| *v == Repeat::Fresh), "{round:?}");
            let Repeat::Refuse(text) = last else {
                panic!("{round:?}: {last:?}")
            };
            assert!(
                text.contains(&format!("same {} calls", round.len())),
                "{text}"
            );
        }
    }

    #[test]
    fn a_new_answer_inside_a_cycle_starts_it_again() {
        let mut guard = RepeatGuard::default();
        // `a` answers differently from its fifth call on: the round starts again there.
        let answers = [("a", "one"), ("b", "x")].repeat(2);
        let later = [("a", "two"), ("b", "x")].repeat(2);
        for (path, answer) in answers.into_iter().chain(later) {
            assert_eq!(call(&mut guard, path, answer), Repeat::Fresh, "{path}");
        }
    }

    #[test]
    fn calls_of_one_batch_are_checked_before_any_answer() {
        let mut guard = RepeatGuard::default();
        let args = json!({"path": "a.rs"});
        let verdicts: Vec<Repeat> = (0..3).map(|_| guard.check("read_file", &args)).collect();
        assert!(matches!(verdicts[2], Repeat::Refuse(_)), "{verdicts:?}");
        let same = ToolOutput::ok("x");
        guard.answered([&same, &same, &ToolOutput::error("refused")]);
        assert!(matches!(guard.check("read_file", &args), Repeat::Stop(_)));
    }
}

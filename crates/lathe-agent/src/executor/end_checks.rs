//! What is checked before a run may end: the model answered without a call, and before that
//! answer becomes the run's last word the loop asks once more when
//!
//! - a call it meant to make could not be read (the model reads why, and tries again);
//! - its reply was cut by the output limit (it is asked to continue, once a run);
//! - the nudge: a task that was an instruction to change files, a final answer that claims a
//!   change, and nothing written ([`asks_for_change`], [`claims_change`]; once a run);
//! - steps of its own plan are still open (once a run);
//! - background sub-agents are still at work (the run waits for them, and the model reads
//!   what they found).

use std::sync::LazyLock;

use regex::Regex;
use tokio_util::sync::CancellationToken;

use lathe_runtime::checklist;

use super::{Executor, sub_agents};
use crate::events::RunStatus;
use crate::message::Message;
use crate::runner::tally::RunTally;
use crate::stream::AssistantTurn;

/// What the model reads when its answer was cut off by the output limit.
const CONTINUE: &str = "Your last reply was cut off by the output limit. Continue from where \
it stopped; keep each reply and each tool call short enough to fit.";

/// What the model reads when it said it had changed files, or was done, on a task that asked
/// for a change, and nothing was written.
pub const NUDGE: &str = "You said the task is done, but no file was written: no write, edit or \
command that changes files succeeded in this task. If the task needs changes, make them now with \
the tools (edit_file, write_file, or shell). If it truly needs no change, say so and why, then \
finish.";

/// Words a task opens a clause with to ask for a change to files, in the imperative.
const CHANGE_VERBS: &str = "create|fix|rename|add|write|implement|change|update|edit|modify|\
refactor|remove|delete|replace|move|insert|append|generate|patch|convert|rewrite|correct|make|\
bump|upgrade|format|scaffold|set up|introduce|put|apply|migrate|port|extract|split|rework|\
clean up|comment out|uncomment|drop|wire up|hook up|bootstrap|initialise|initialize";

/// Whether a task is imperative about changing files: one of its clauses opens with a verb of
/// change ("Fix the test", "In a.rs, rename foo to bar", "Read main.rs and add a flag"), and
/// nothing in it asks a question or for an explanation ("What does add return? Just explain.",
/// "why does this fail", "show me the config"), or says not to change anything. When unsure, it
/// says no: a task in another language, a polite question ("can you fix it?"), a request with
/// an explanation in it. It is one half of the nudge's evidence; the other is
/// [`claims_change`].
pub fn asks_for_change(task: &str) -> bool {
    static QUESTION: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(
            r"(?ix)
            [?？¿]
            | ^\W*(what|why|how|where|when|which|who|whose|whom|is|are|was|were|do|does|did|can|could|would|should|will|shall|may|might|has|have|had|am|isn't|aren't|doesn't|don't)\b
            | \b(explain|explaining|describe|tell\ me|show\ me|summari[sz]e|walk\ me\ through|why|what|how\ (does|do|is|are|can|could|would|should|to))\b
            | \b(do\ not|don't|dont|never|without)\ +(chang|modif|edit|writ|touch|alter|updat)
            | \b(no|any)\ +(changes|edits)\b",
        )
        .expect("the question pattern is valid")
    });
    static IMPERATIVE: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(&format!(
            r"(?i)^\W*((please|kindly|now|then|also|and|just|go ahead and|first|next|finally)\W+)*({CHANGE_VERBS})\b"
        ))
        .expect("the imperative pattern is valid")
    });
    static CLAUSE: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"(?i)[.!;,:\n]|\band\b|\bthen\b").expect("the clause pattern is valid")
    });
    if QUESTION.is_match(task) {
        return false;
    }
    // Each clause, and what follows each joining word ("read it and fix it").
    let mut starts = vec![0];
    starts.extend(CLAUSE.find_iter(task).map(|m| m.start()));
    starts
        .into_iter()
        .any(|at| IMPERATIVE.is_match(&task[at..]))
}

/// Whether the model's final text claims it changed something or finished: "I've updated
/// a.rs", "Done.", "The bug is fixed", "greet.txt now says goodbye", or it wrote the completion
/// marker (`marker`). Text that says no change was needed or made, or that something could not
/// be done, is no claim, marker or not ("No changes are needed", "I could not find the file",
/// "it already says that"): when unsure, it says no.
pub fn claims_change(answer: &str, marker: bool) -> bool {
    const DONE: &str = "updated|fixed|changed|created|added|written|wrote|renamed|removed|\
deleted|modified|implemented|edited|replaced|refactored|made|moved|applied|corrected|inserted|\
converted|rewritten|rewrote|set up|bumped|upgraded|formatted|generated|introduced|patched|\
completed|finished|done";
    static CLAIM: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(&format!(
            r"(?imx)
            \bI(\ *['’]ve|\ +have)?\ +(now\ +|also\ +|just\ +|successfully\ +)?({DONE})\b
            | \b(has|have)\ +(now\ +)?been\ +(successfully\ +)?({DONE})\b
            | \b(is|are)\ +now\ +({DONE})\b
            | ^\W*(done|all\ done|fixed|finished|completed|task\ complete)\b
            | \bnow\ +(says|returns|contains|uses|prints|reads|handles|has|includes|compiles|passes)\b
            | \bchanges?\ +(applied|made|complete)\b"
        ))
        .expect("the claim pattern is valid")
    });
    static NO_CHANGE: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(
            r"(?ix)
            \bno\ +(change|changes|edit|edits|modification|modifications|update|updates)\b
            | \bnothing\ +(to|was|needed|needs|has)\b
            | \b(did\ not|didn't|have\ not|haven't|has\ not|hasn't|could\ not|couldn't|cannot|can't|unable|not\ able|won't|will\ not|wasn't|was\ not|were\ not|weren't|isn't|is\ not)\b
            | \balready\b",
        )
        .expect("the no-change pattern is valid")
    });
    (marker || CLAIM.is_match(answer)) && !NO_CHANGE.is_match(answer)
}

/// Which of the once-a-run checks a run has made, and what its task asked for.
#[derive(Debug)]
pub(super) struct EndChecks {
    /// Whether the task asked for a change to files ([`asks_for_change`]).
    wants_change: bool,
    /// Whether the model was nudged ([`NUDGE`]).
    nudged: bool,
    /// Whether the model was reminded of its open plan steps.
    plan_checked: bool,
    /// Whether the model was asked to continue a reply cut by the output limit.
    continued: bool,
}

impl EndChecks {
    /// No check made yet, for a run of `task`.
    pub(super) fn new(task: &str) -> Self {
        EndChecks {
            wants_change: asks_for_change(task),
            nudged: false,
            plan_checked: false,
            continued: false,
        }
    }
}

/// What the checks at an answer without calls came to.
pub(super) enum Ending {
    /// The model has something more to do: another turn.
    Continue,
    /// The run ends, so.
    End(RunStatus),
}

impl Executor {
    /// The checks at a turn that made no call, `malformed` being what the model must read
    /// about the calls it meant to make. Each question it asks goes into the history.
    pub(super) async fn check_end(
        &mut self,
        turn: &AssistantTurn,
        malformed: &[String],
        tally: &RunTally,
        checks: &mut EndChecks,
        cancel: &CancellationToken,
    ) -> Ending {
        let text = turn.content.trim();
        if !malformed.is_empty() {
            self.push(Message::user(malformed.join("\n")));
            return Ending::Continue;
        }
        if turn.hit_length_limit() && !checks.continued && !turn.task_complete {
            checks.continued = true;
            self.push(Message::user(CONTINUE));
            return Ending::Continue;
        }
        // A claim of a change that did not happen, on a task that asked for one, is
        // questioned once. A question, or a denied change, is not (the user stopped it).
        if checks.wants_change
            && !checks.nudged
            && !tally.wrote
            && !tally.any_denied()
            && claims_change(text, turn.task_complete)
        {
            checks.nudged = true;
            self.push(Message::user(NUDGE));
            return Ending::Continue;
        }
        // "Done" with steps of its own plan still open is questioned once.
        if !checks.plan_checked
            && let Some(reminder) = open_steps_reminder(self.runner.session())
        {
            checks.plan_checked = true;
            self.push(Message::user(reminder));
            return Ending::Continue;
        }
        // Background sub-agents still at work: wait, and read what they found.
        match self.await_sub_agents(cancel).await {
            sub_agents::Waited::Nothing => Ending::End(RunStatus::Finished),
            sub_agents::Waited::Results => Ending::Continue,
            sub_agents::Waited::Cancelled => Ending::End(RunStatus::Stopped),
        }
    }
}

/// What the model reads when it answers while steps of its plan are open (once a run): the open
/// steps, and what to do about them. `None` when the plan has none open.
fn open_steps_reminder(session: &lathe_runtime::Session) -> Option<String> {
    let open = checklist::open_steps(session);
    if open.is_empty() {
        return None;
    }
    let steps: Vec<String> = open
        .iter()
        .map(|s| format!("{} {}", s.status.mark(), s.step))
        .collect();
    Some(format!(
        "Your plan still has {} open step(s):\n{}\nDo them now, or, if they are done or no \
         longer needed, say so with update_plan (mark them completed, or leave them out), then \
         give your final answer.",
        open.len(),
        steps.join("\n")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Tasks that are imperative about changing files.
    const CHANGE_TASKS: &[&str] = &[
        "Create a file hello.txt",
        "fix the failing test",
        "Rename foo to bar",
        "add a --verbose flag",
        "Please implement the parser",
        "In src/a.rs, rename foo to bar.",
        "Read main.rs and fix the off-by-one in the loop",
        "change hello to goodbye in greet.txt",
        "Now update the README with the new flag",
        "The build is broken. Fix it.",
        "replace every tab with four spaces in notes.txt",
        "Delete the unused helper in util.rs",
    ];

    /// Tasks that are not: questions, explanations, requests not to change anything, other
    /// languages (unsure, so no), and English that only mentions a verb of change.
    const OTHER_TASKS: &[&str] = &[
        "What does add return? Just explain.",
        "What does src/main.rs do?",
        "explain the build",
        "Why does the test fail",
        "How does the parser handle comments",
        "Show me where errors are handled",
        "tell me what the fix function does",
        "Can you fix the test?",
        "Could you add a flag",
        "Fix the bug? Or is it intended",
        "Find where errors are handled, but do not change anything",
        "Review the patch without editing files",
        "Describe how update_state works",
        "prefix matching in the address book",
        "the fixed version is in git",
        "Korrigiere den Tippfehler in notes.txt",
        "Corrige la faute de frappe dans notes.txt",
        "Arregla el test que falla",
        "修复 notes.txt 中的拼写错误",
        "notes.txt のタイプミスを直して",
        "Исправь опечатку в notes.txt",
    ];

    #[test]
    fn change_requests_are_recognised() {
        for task in CHANGE_TASKS {
            assert!(asks_for_change(task), "should ask for a change: {task}");
        }
        for task in OTHER_TASKS {
            assert!(!asks_for_change(task), "should not: {task}");
        }
    }

    /// Final answers that claim a change or completion.
    const CLAIMS: &[&str] = &[
        "I've updated greet.txt.",
        "I’ve fixed the typo.",
        "I have renamed foo to bar in src/a.rs.",
        "Done.",
        "Done! The flag is in place.",
        "All done: the parser is implemented.",
        "Fixed.",
        "The file has been updated.",
        "The typo is now fixed.",
        "greet.txt now says goodbye.",
        "I added a --verbose flag to the CLI.",
        "Changes applied to notes.txt.",
        "I successfully created hello.txt with the greeting.",
    ];

    /// Answers that claim nothing: no change needed, a failure, an explanation, another
    /// language (unsure, so no claim).
    const NO_CLAIMS: &[&str] = &[
        "",
        "All good already.",
        "No changes are needed: the function already returns 0.",
        "The file already says goodbye, so there is nothing to change.",
        "I could not find greet.txt in the workspace.",
        "I haven't changed anything yet; which file do you mean?",
        "add returns the sum of its two arguments.",
        "The test fails because the fixture is missing.",
        "I can't edit files in read-only mode.",
        "Ich habe die Datei aktualisiert.",
        "J'ai corrigé la faute.",
    ];

    #[test]
    fn claims_of_a_change_are_recognised() {
        for answer in CLAIMS {
            assert!(
                claims_change(answer, false),
                "should claim a change: {answer}"
            );
        }
        for answer in NO_CLAIMS {
            assert!(!claims_change(answer, false), "should not: {answer}");
        }
        // The completion marker is a claim of its own, unless the text says nothing changed.
        assert!(claims_change("", true));
        assert!(claims_change("The parser handles comments.", true));
        assert!(!claims_change("No changes were needed.", true));
    }
}

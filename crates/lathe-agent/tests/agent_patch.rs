//! A model that writes its edit as a bare patch in the reply, as Codex-trained models do: the
//! agent runs it as an `apply_patch` call on the real workspace, over real HTTP from the
//! scripted model server; a reply that ends inside the patch changes nothing.

use tokio_util::sync::CancellationToken;

use lathe_agent::events::RunStatus;
use lathe_testkit::{Script, ollama};

use crate::common::{Harness, MODEL};

const SOURCE: &str = "def greet():\n    print(\"Hi\")\n    return 1\n";

/// Runs one task against `script` with the built-in tools in `auto` mode; returns the
/// workspace's greet.py afterwards and the server's request bodies.
async fn run(script: Script) -> (RunStatus, String, Vec<serde_json::Value>) {
    let mut run = Harness::new()
        .script(script)
        .file("greet.py", SOURCE)
        .start();
    let outcome = run
        .agent
        .run("say hello instead of hi", &CancellationToken::new())
        .await;
    let text = run.read("greet.py").unwrap();
    (outcome.status, text, run.server.chat_bodies())
}

fn tool_results(body: &serde_json::Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[tokio::test]
async fn a_patch_written_in_the_reply_is_applied() {
    let reply = "I'll update the greeting.\n\n\
*** Begin Patch\n\
*** Update File: greet.py\n\
@@ def greet():\n\
-    print(\"Hi\")\n\
+    print(\"Hello\")\n\
*** End Patch\n";
    let script = Script::new()
        .chat(ollama::turn(MODEL).text(reply).done().rechunk(7))
        .chat(ollama::turn(MODEL).text("Done.").done());
    let (status, text, bodies) = run(script).await;
    assert_eq!(status, RunStatus::Finished);
    assert_eq!(text, SOURCE.replace("Hi", "Hello"));
    assert_eq!(bodies.len(), 2);
    let results = tool_results(&bodies[1]);
    assert_eq!(results.len(), 1, "{results:?}");
    assert!(
        results[0]
            .starts_with("Applied the patch: 1 file changed.\nM greet.py (+1 -1, matched: exact)"),
        "{results:?}"
    );
    // The model's own message keeps its prose and the call, not the patch as text.
    let assistant = &bodies[1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "assistant")
        .unwrap()
        .clone();
    assert_eq!(
        assistant["tool_calls"][0]["function"]["name"],
        "apply_patch"
    );
    assert!(
        !assistant["content"]
            .as_str()
            .unwrap_or_default()
            .contains("*** Begin Patch"),
        "{assistant}"
    );
}

#[tokio::test]
async fn a_reply_that_ends_inside_its_patch_changes_nothing() {
    let cut = "Updating.\n*** Begin Patch\n*** Update File: greet.py\n@@ def greet():\n-    print(\"Hi\")\n";
    let script = Script::new()
        .chat(ollama::turn(MODEL).text(cut).done())
        .chat(ollama::turn(MODEL).text("Sorry.").done());
    let (status, text, bodies) = run(script).await;
    assert_eq!(status, RunStatus::Finished);
    assert_eq!(text, SOURCE, "half a patch must not run");
    let results = tool_results(&bodies[1]);
    assert!(
        results.len() == 1 && results[0].contains("cut off"),
        "{results:?}"
    );
}

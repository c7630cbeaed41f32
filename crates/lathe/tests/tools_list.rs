//! `lathe tools` lists the agent tools (`spawn_agent`, `read_sub_agent`), which the agent's
//! runner adds rather than the built-in registry, with the definitions the model is sent.

use serde_json::Value;

use lathe_testkit::Script;

use crate::agent_harness::*;

const AGENT_TOOLS: [&str; 2] = ["spawn_agent", "read_sub_agent"];

fn tools_json(h: &Harness) -> Vec<Value> {
    let out = h.lathe().args(["tools", "--json"]).output().unwrap();
    assert_exit(&out, 0);
    serde_json::from_str::<Value>(&stdout(&out))
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

#[test]
fn tools_json_lists_the_agent_tools_as_the_model_sees_them() {
    let h = Harness::new(Script::new().chat(reply().text("Nothing to do.").done()));
    let listed = tools_json(&h);
    let output = h.exec("say hi", &["--approval", "auto"]);
    assert_exit(&output, 0);
    let bodies = h.bodies();
    let sent = bodies[0]["tools"].as_array().expect("tools in the request");
    for name in AGENT_TOOLS {
        let entry = listed
            .iter()
            .find(|d| d["function"]["name"] == name)
            .unwrap_or_else(|| panic!("{name} missing from lathe tools --json: {listed:#?}"));
        assert_eq!(entry["agent_tool"], true, "{entry:#}");
        let available = entry["available"].as_str().unwrap();
        assert!(
            available.contains("lathe mcp when a model is configured"),
            "{available}"
        );
        let model_saw = sent
            .iter()
            .find(|d| d["function"]["name"] == name)
            .unwrap_or_else(|| panic!("{name} was not sent to the model"));
        assert_eq!(entry["function"], model_saw["function"], "{name}");
    }
    // The built-ins carry no mark.
    let read = listed
        .iter()
        .find(|d| d["function"]["name"] == "read_file")
        .unwrap();
    assert!(read.get("agent_tool").is_none(), "{read:#}");
}

#[test]
fn tools_text_lists_the_agent_tools_under_their_own_heading() {
    let h = Harness::new(Script::new());
    let out = h.lathe().arg("tools").output().unwrap();
    assert_exit(&out, 0);
    let text = stdout(&out);
    let (builtin, agent) = text
        .split_once("\nagent tools (in lathe exec and lathe chat; in lathe mcp when a model is configured (lathe mcp --model NAME, or name under [model])):\n")
        .unwrap_or_else(|| panic!("no agent tools heading:\n{text}"));
    assert!(builtin.contains("\nread_file "), "{builtin}");
    assert!(
        agent.starts_with("spawn_agent      Hand one task to a sub-agent"),
        "{agent}"
    );
    assert!(
        agent.contains("\n                 task [profile] [background]\n"),
        "{agent}"
    );
    assert!(agent.contains("\nread_sub_agent   "), "{agent}");
    for name in AGENT_TOOLS {
        assert!(
            !builtin.contains(name),
            "{name} among the built-ins:\n{builtin}"
        );
    }

    // Turned off by the configuration: still listed, and the heading says so.
    h.write(".lathe/config.toml", "[agent]\nmax_sub_agents = 0\n");
    h.trust();
    let out = h.lathe().arg("tools").output().unwrap();
    let text = stdout(&out);
    assert!(
        text.contains(
            "\nagent tools (turned off here by [agent] max_sub_agents = 0):\nspawn_agent "
        ),
        "{text}"
    );
}

//! Images from `read_file` to the model, over real HTTP to the scripted servers: Ollama gets
//! them in a user message's `images` after the results, OpenAI-compatible servers as
//! `image_url` content parts in the user message after the tool messages; a model that cannot
//! see gets a description and the setting that would change it; a resumed session sends the
//! image again from the store.

use std::io::Cursor;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use image::{DynamicImage, ImageFormat, Rgb, RgbImage};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use lathe_agent::events::RunStatus;
use lathe_agent::message::Message;
use lathe_agent::provider::{ProviderKind, RESULT_IMAGES_NOTE};
use lathe_agent::sink::stored_history;
use lathe_runtime::ToolConfig;
use lathe_testkit::{Script, ollama, openai};

use crate::common::{Harness, Run};

const MODEL: &str = "vision-model";

/// A 400x200 PNG: red on the left, blue on the right.
fn shot() -> Vec<u8> {
    let picture = DynamicImage::ImageRgb8(RgbImage::from_fn(400, 200, |x, _| {
        if x < 200 {
            Rgb([255, 0, 0])
        } else {
            Rgb([0, 0, 255])
        }
    }));
    let mut bytes = Vec::new();
    picture
        .write_to(&mut Cursor::new(&mut bytes), ImageFormat::Png)
        .unwrap();
    bytes
}

/// An agent with the built-in tools over a workspace holding `shot.png` and `notes.txt`,
/// images capped at 100 pixels, against `script` spoken as `kind`.
fn start(kind: ProviderKind, script: Script, vision: Option<bool>) -> Run {
    Harness::new()
        .kind(kind)
        .model(MODEL)
        .vision(vision)
        .bare_script(script)
        .file("shot.png", shot())
        .file("notes.txt", "hello\n")
        .tool_config(ToolConfig {
            image_max_px: 100,
            ..ToolConfig::default()
        })
        .start()
}

/// Runs `task` to its end.
async fn run_task(run: &mut Run, task: &str) {
    let outcome = run.agent.run(task, &CancellationToken::new()).await;
    assert_eq!(outcome.status, RunStatus::Finished, "{:?}", outcome.message);
}

/// The decoded size of a base64 PNG.
fn size_of(data: &str) -> (u32, u32) {
    let bytes = STANDARD.decode(data).unwrap();
    assert_eq!(image::guess_format(&bytes).unwrap(), ImageFormat::Png);
    let picture = image::load_from_memory(&bytes).unwrap();
    (picture.width(), picture.height())
}

fn ollama_script(capabilities: &[&str]) -> Script {
    let reply = || ollama::turn(MODEL);
    Script::new()
        .ollama_models(&[MODEL], capabilities)
        .chat(
            reply()
                .tool_call("read_file", json!({"path": "shot.png"}))
                .done(),
        )
        .chat(reply().text("Red on the left, blue on the right.").done())
        .chat(reply().text("Still red and blue.").done())
}

#[tokio::test]
async fn ollama_gets_the_image_in_a_user_message_after_the_result() {
    let mut run = start(
        ProviderKind::Ollama,
        ollama_script(&["completion", "tools", "vision"]),
        None,
    );
    run_task(&mut run, "What is in shot.png?").await;
    let messages = run.messages(1);
    let tool = &messages[messages.len() - 2];
    assert_eq!(tool["role"], "tool");
    assert!(tool.get("images").is_none(), "{tool}");
    let text = tool["content"].as_str().unwrap();
    assert!(
        text.starts_with("shot.png: PNG image, 400x200 pixels, "),
        "{text}"
    );
    assert!(
        text.contains("sent to the model downscaled to 100x50"),
        "{text}"
    );
    let user = &messages[messages.len() - 1];
    assert_eq!(user["role"], "user");
    assert_eq!(user["content"], RESULT_IMAGES_NOTE);
    let images = user["images"].as_array().unwrap();
    assert_eq!(images.len(), 1);
    assert_eq!(size_of(images[0].as_str().unwrap()), (100, 50));
    // Only that message carries it.
    let carrying = messages
        .iter()
        .filter(|m| m.get("images").is_some())
        .count();
    assert_eq!(carrying, 1);

    // Resumed from the store, the session sends the same image again.
    let stored = stored_history(&run.store, &run.session).unwrap();
    let with_images: Vec<&Message> = stored.iter().filter(|m| !m.images().is_empty()).collect();
    assert_eq!(with_images.len(), 1);
    assert!(matches!(with_images[0], Message::Tool(_)));
    let mut resumed = run.again().detached().start();
    resumed.agent.resume(stored);
    let outcome = resumed
        .agent
        .run("And now?", &CancellationToken::new())
        .await;
    assert_eq!(outcome.status, RunStatus::Finished);
    let again = run.messages(2);
    let carrying: Vec<&Value> = again.iter().filter(|m| m.get("images").is_some()).collect();
    assert_eq!(carrying.len(), 1, "{again:?}");
    assert_eq!(carrying[0]["images"], user["images"]);
}

#[tokio::test]
async fn an_ollama_model_without_vision_gets_a_description_and_no_image() {
    let mut run = start(
        ProviderKind::Ollama,
        ollama_script(&["completion", "tools"]),
        None,
    );
    run_task(&mut run, "What is in shot.png?").await;
    let body = run.server.chat_bodies()[1].to_string();
    assert!(!body.contains("\"images\""), "{body}");
    let messages = run.messages(1);
    let tool = messages.last().unwrap();
    assert_eq!(tool["role"], "tool");
    let text = tool["content"].as_str().unwrap();
    assert!(
        text.starts_with("shot.png: PNG image, 400x200 pixels, "),
        "{text}"
    );
    assert!(
        text.contains("The model in use cannot view images, so it was not sent."),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "Ollama does not list `vision` among the capabilities of {MODEL}"
        )),
        "{text}"
    );
}

fn openai_script() -> Script {
    let reply = || openai::turn(MODEL);
    Script::new()
        .openai_models(&[MODEL])
        .chat(
            reply()
                .tool_call(0, "c1", "read_file", &[r#"{"path": "shot.png"}"#])
                .tool_call(1, "c2", "read_file", &[r#"{"path": "notes.txt"}"#])
                .finish("tool_calls")
                .done(),
        )
        .chat(reply().text("Red and blue.").finish("stop").done())
}

#[tokio::test]
async fn openai_servers_get_image_parts_in_the_user_message_after_the_tool_messages() {
    let mut run = start(ProviderKind::OpenAi, openai_script(), Some(true));
    run_task(&mut run, "Look at shot.png and notes.txt").await;
    let messages = run.messages(1);
    let roles: Vec<&str> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        ["system", "user", "assistant", "tool", "tool", "user"],
        "{messages:?}"
    );
    // Tool messages stay text, answering their calls in order.
    assert_eq!(messages[3]["tool_call_id"], "c1");
    assert!(messages[3]["content"].is_string());
    assert_eq!(messages[4]["tool_call_id"], "c2");
    let parts = messages[5]["content"].as_array().unwrap();
    assert_eq!(
        parts[0],
        json!({"type": "text", "text": RESULT_IMAGES_NOTE})
    );
    assert_eq!(parts.len(), 2, "{parts:?}");
    assert_eq!(parts[1]["type"], "image_url");
    let url = parts[1]["image_url"]["url"].as_str().unwrap();
    let data = url
        .strip_prefix("data:image/png;base64,")
        .unwrap_or_else(|| panic!("{}", &url[..40.min(url.len())]));
    assert_eq!(size_of(data), (100, 50));
}

#[tokio::test]
async fn an_openai_server_without_the_setting_gets_no_image_and_is_told_which_setting() {
    let mut run = start(ProviderKind::OpenAi, openai_script(), None);
    run_task(&mut run, "Look at shot.png and notes.txt").await;
    let body = run.server.chat_bodies()[1].to_string();
    assert!(!body.contains("image_url"), "{body}");
    let messages = run.messages(1);
    let text = messages[3]["content"].as_str().unwrap();
    assert!(
        text.contains("cannot view images")
            && text.contains("set `vision = true` under [model] in the configuration"),
        "{text}"
    );
}

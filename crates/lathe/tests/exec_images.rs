//! `@shot.png` in a task, through the real `lathe` binary and the scripted Ollama server: the
//! image rides in the task's user message for a model that can see (downscaled by
//! `[tools] image_max_px`), a model that cannot see gets the text and the user is told why, and
//! a name that cannot be sent stops the run before the model is asked anything.

use std::io::Cursor;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use image::{DynamicImage, ImageFormat, Rgb, RgbImage};
use lathe_testkit::Script;

use crate::agent_harness::{Harness, assert_exit, messages, reply, stderr};

fn harness(capabilities: &[&str], config: &str) -> Harness {
    let h = Harness::with_capabilities(
        Script::new().chat(reply().text("A red square.").done()),
        capabilities,
    );
    let picture = DynamicImage::ImageRgb8(RgbImage::from_pixel(400, 200, Rgb([200, 0, 0])));
    let mut png = Vec::new();
    picture
        .write_to(&mut Cursor::new(&mut png), ImageFormat::Png)
        .unwrap();
    std::fs::create_dir_all(h.ws.join("shots")).unwrap();
    std::fs::write(h.ws.join("shots/red.png"), png).unwrap();
    std::fs::write(h.dir.path().join("config/config.toml"), config).unwrap();
    h
}

#[test]
fn an_image_named_in_the_task_goes_to_a_model_that_can_see() {
    let h = harness(
        &["completion", "tools", "vision"],
        "[tools]\nimage_max_px = 100\n",
    );
    let out = h.exec("What is in @shots/red.png?", &[]);
    assert_exit(&out, 0);
    assert!(
        stderr(&out).contains("attached shots/red.png: PNG image, 400x200 pixels"),
        "{}",
        stderr(&out)
    );
    let bodies = h.bodies();
    let task = messages(&bodies[0]).last().unwrap().clone();
    assert_eq!(task["role"], "user");
    let text = task["content"].as_str().unwrap();
    assert!(text.starts_with("What is in @shots/red.png?\n\n"), "{text}");
    assert!(
        text.contains("[attached image 1: shots/red.png: PNG image, 400x200 pixels")
            && text.contains("sent to the model downscaled to 100x50"),
        "{text}"
    );
    let images = task["images"].as_array().unwrap();
    assert_eq!(images.len(), 1);
    let bytes = STANDARD.decode(images[0].as_str().unwrap()).unwrap();
    let sent = image::load_from_memory(&bytes).unwrap();
    assert_eq!((sent.width(), sent.height()), (100, 50));
}

#[test]
fn a_model_that_cannot_see_gets_the_text_and_the_user_is_told() {
    // The server says vision; the configuration says no, and wins.
    let h = harness(
        &["completion", "tools", "vision"],
        "[model]\nvision = false\n",
    );
    let out = h.exec("What is in @shots/red.png?", &[]);
    assert_exit(&out, 0);
    assert!(
        stderr(&out).contains("cannot view images: @shots/red.png went as text only."),
        "{}",
        stderr(&out)
    );
    let bodies = h.bodies();
    assert!(!bodies[0].to_string().contains("\"images\""));
    let task = messages(&bodies[0]).last().unwrap().clone();
    assert_eq!(task["content"], "What is in @shots/red.png?");
}

#[test]
fn a_missing_image_stops_the_run_before_the_model_is_asked() {
    let h = harness(&["completion", "tools", "vision"], "");
    let out = h.exec("Compare @shots/red.png with @shots/blue.png", &[]);
    assert_exit(&out, 2);
    let err = stderr(&out);
    assert!(
        err.contains("@shots/blue.png: shots/blue.png does not exist.")
            && err.contains("Nothing was sent: fix the path, or remove the @"),
        "{err}"
    );
    assert!(h.bodies().is_empty());
}

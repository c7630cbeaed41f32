//! `lathe mcp` answers `read_file` on an image with MCP image content after the text, over
//! stdio JSON-RPC as a client writes it.

use std::io::{BufRead, BufReader, Cursor, Write};
use std::process::Stdio;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use image::{DynamicImage, ImageFormat, Rgb, RgbImage};
use serde_json::{Value, json};

use crate::mcp_support::Fixture;

#[test]
fn read_file_on_an_image_answers_with_image_content() {
    let fixture = Fixture::new();
    let picture = DynamicImage::ImageRgb8(RgbImage::from_pixel(300, 150, Rgb([0, 128, 0])));
    let mut png = Vec::new();
    picture
        .write_to(&mut Cursor::new(&mut png), ImageFormat::Png)
        .unwrap();
    std::fs::write(fixture.workspace().join("shot.png"), &png).unwrap();
    let config = fixture.workspace().join("../config");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(config.join("config.toml"), "[tools]\nimage_max_px = 64\n").unwrap();
    let mut child = fixture
        .command(&[])
        .env("LATHE_LOG", "error")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("lathe mcp starts");
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut send = |message: Value| {
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
    };
    send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"}}}),
    );
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    send(
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "read_file", "arguments": {"path": "shot.png"}}}),
    );
    let answer = loop {
        let line = lines.next().expect("an answer").unwrap();
        let message: Value = serde_json::from_str(&line).unwrap();
        if message["id"] == 2 {
            break message;
        }
    };
    drop(stdin);
    let _ = child.kill();
    let _ = child.wait();
    let result = &answer["result"];
    assert_eq!(result["isError"], false, "{answer}");
    let content = result["content"].as_array().unwrap();
    assert_eq!(content.len(), 2, "{answer}");
    assert_eq!(content[0]["type"], "text");
    let text = content[0]["text"].as_str().unwrap();
    assert!(
        text.starts_with("shot.png: PNG image, 300x150 pixels")
            && text.contains("sent to the model downscaled to 64x32"),
        "{text}"
    );
    assert_eq!(content[1]["type"], "image");
    assert_eq!(content[1]["mimeType"], "image/png");
    let bytes = STANDARD
        .decode(content[1]["data"].as_str().unwrap())
        .unwrap();
    let sent = image::load_from_memory(&bytes).unwrap();
    assert_eq!((sent.width(), sent.height()), (64, 32));
    assert_eq!(result["structuredContent"]["image"]["width"], 300);
}

//! `read_file` on images: described for a model that cannot see, sent (downscaled, first frame
//! of an animation) to one that can; damaged files and decompression bombs refused. Every image
//! is a real file encoded here with the `image` crate.

use std::io::Cursor;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use image::codecs::gif::{GifEncoder, Repeat};
use image::{DynamicImage, Frame, ImageFormat, Rgb, RgbImage, Rgba, RgbaImage};
use lathe_runtime::ToolConfig;
use lathe_runtime::vision::{Vision, set_vision};
use serde_json::json;

use crate::file_support::Ws;

fn encoded(picture: &DynamicImage, format: ImageFormat) -> Vec<u8> {
    let mut bytes = Vec::new();
    picture
        .write_to(&mut Cursor::new(&mut bytes), format)
        .unwrap();
    bytes
}

/// A `width`x`height` picture: red on the left half, blue on the right.
fn halves(width: u32, height: u32) -> DynamicImage {
    DynamicImage::ImageRgb8(RgbImage::from_fn(width, height, |x, _| {
        if x < width / 2 {
            Rgb([255, 0, 0])
        } else {
            Rgb([0, 0, 255])
        }
    }))
}

fn seeing(max_px: u32) -> Ws {
    let ws = Ws::with_config(ToolConfig {
        image_max_px: max_px,
        ..ToolConfig::default()
    });
    set_vision(&ws.session, Vision::Sees);
    ws
}

/// The one image sent, decoded, with its media type.
fn sent(out: &lathe_runtime::ToolOutput) -> (String, DynamicImage) {
    assert_eq!(out.images.len(), 1, "{}", out.text);
    let image = &out.images[0];
    let bytes = STANDARD.decode(&image.data).unwrap();
    let format = image::guess_format(&bytes).unwrap();
    assert_eq!(format.to_mime_type(), image.media_type);
    (
        image.media_type.clone(),
        image::load_from_memory(&bytes).unwrap(),
    )
}

#[test]
fn a_model_that_cannot_see_gets_a_description_and_the_setting_to_change() {
    let ws = Ws::new();
    let png = encoded(&halves(300, 200), ImageFormat::Png);
    ws.write("shot.png", &png);
    let out = ws.ok("read_file", json!({"path": "shot.png"}));
    assert!(out.images.is_empty());
    assert!(
        out.text
            .starts_with("shot.png: PNG image, 300x200 pixels, "),
        "{}",
        out.text
    );
    assert!(
        out.text
            .contains("The model in use cannot view images, so it was not sent."),
        "{}",
        out.text
    );
    let meta = out.metadata.to_json();
    assert_eq!(meta["image"]["width"], 300);
    assert_eq!(meta["image"]["bytes"], png.len());

    set_vision(
        &ws.session,
        Vision::Blind {
            hint: "Set vision = true under [model] if the server's model takes images.".into(),
        },
    );
    let out = ws.ok("read_file", json!({"path": "shot.png"}));
    assert!(out.images.is_empty());
    assert!(
        out.text
            .ends_with("Set vision = true under [model] if the server's model takes images."),
        "{}",
        out.text
    );
}

#[test]
fn a_large_image_is_downscaled_keeping_its_aspect() {
    let ws = seeing(100);
    ws.write("wide.png", encoded(&halves(400, 200), ImageFormat::Png));
    let out = ws.ok("read_file", json!({"path": "wide.png"}));
    assert!(
        out.text
            .starts_with("wide.png: PNG image, 400x200 pixels, "),
        "{}",
        out.text
    );
    assert!(
        out.text
            .contains("sent to the model downscaled to 100x50 (PNG, "),
        "{}",
        out.text
    );
    assert!(out.text.contains("[tools] image_max_px"), "{}", out.text);
    let (media_type, picture) = sent(&out);
    assert_eq!(media_type, "image/png");
    assert_eq!((picture.width(), picture.height()), (100, 50));
    let rgb = picture.to_rgb8();
    assert_eq!(rgb.get_pixel(10, 25), &Rgb([255, 0, 0]));
    assert_eq!(rgb.get_pixel(90, 25), &Rgb([0, 0, 255]));
    assert_eq!(out.metadata.to_json()["image"]["sent"]["width"], 100);

    // Tall ones too, and a photo stays a JPEG.
    ws.write("tall.jpg", encoded(&halves(60, 300), ImageFormat::Jpeg));
    let out = ws.ok("read_file", json!({"path": "tall.jpg"}));
    let (media_type, picture) = sent(&out);
    assert_eq!(media_type, "image/jpeg");
    assert_eq!((picture.width(), picture.height()), (20, 100));
}

#[test]
fn a_small_image_is_sent_as_it_is() {
    let ws = seeing(1568);
    let jpeg = encoded(&halves(64, 48), ImageFormat::Jpeg);
    ws.write("small.jpg", &jpeg);
    let out = ws.ok("read_file", json!({"path": "small.jpg"}));
    assert!(
        out.text.ends_with("; sent to the model as it is."),
        "{}",
        out.text
    );
    assert_eq!(out.images[0].media_type, "image/jpeg");
    assert_eq!(STANDARD.decode(&out.images[0].data).unwrap(), jpeg);
}

#[test]
fn an_animated_gif_sends_its_first_frame_and_says_so() {
    let ws = seeing(1568);
    let mut gif = Vec::new();
    {
        let mut encoder = GifEncoder::new(&mut gif);
        encoder.set_repeat(Repeat::Infinite).unwrap();
        for color in [Rgba([0, 255, 0, 255]), Rgba([255, 0, 255, 255])] {
            encoder
                .encode_frame(Frame::new(RgbaImage::from_pixel(32, 16, color)))
                .unwrap();
        }
    }
    ws.write("spin.gif", &gif);
    let out = ws.ok("read_file", json!({"path": "spin.gif"}));
    assert!(
        out.text.starts_with("spin.gif: GIF image, 32x16 pixels"),
        "{}",
        out.text
    );
    assert!(
        out.text
            .ends_with("It is animated: only its first frame was sent."),
        "{}",
        out.text
    );
    let (media_type, picture) = sent(&out);
    assert_eq!(media_type, "image/png");
    assert_eq!(picture.to_rgba8().get_pixel(5, 5), &Rgba([0, 255, 0, 255]));

    // A still GIF says nothing of frames.
    let still = encoded(
        &DynamicImage::ImageRgba8(RgbaImage::from_pixel(8, 8, Rgba([9, 9, 9, 255]))),
        ImageFormat::Gif,
    );
    ws.write("still.gif", still);
    let out = ws.ok("read_file", json!({"path": "still.gif"}));
    assert!(!out.text.contains("animated"), "{}", out.text);
    assert!(
        out.text.contains("sent to the model as PNG"),
        "{}",
        out.text
    );
}

#[test]
fn webp_is_re_encoded_for_servers_that_take_png_and_jpeg() {
    let ws = seeing(1568);
    ws.write("photo.webp", encoded(&halves(40, 30), ImageFormat::WebP));
    let out = ws.ok("read_file", json!({"path": "photo.webp"}));
    assert!(
        out.text.starts_with("photo.webp: WebP image, 40x30 pixels"),
        "{}",
        out.text
    );
    let (media_type, picture) = sent(&out);
    assert_eq!(media_type, "image/jpeg");
    assert_eq!((picture.width(), picture.height()), (40, 30));
}

#[test]
fn a_damaged_image_is_a_clear_error() {
    let ws = seeing(1568);
    let png = encoded(&halves(200, 200), ImageFormat::Png);
    // Header intact, pixels cut off.
    ws.write("cut.png", &png[..png.len() / 2]);
    let out = ws.err("read_file", json!({"path": "cut.png"}));
    assert!(
        out.text
            .starts_with("cut.png starts like a PNG image but cannot be decoded ("),
        "{}",
        out.text
    );
    assert!(out.text.contains("damaged or truncated"), "{}", out.text);
    assert!(out.images.is_empty());
    // Not even a header: refused whether or not the model can see.
    let mut junk = b"\x89PNG\r\n\x1a\n".to_vec();
    junk.extend([0u8; 100]);
    ws.write("junk.png", &junk);
    set_vision(
        &ws.session,
        Vision::Blind {
            hint: String::new(),
        },
    );
    let out = ws.err("read_file", json!({"path": "junk.png"}));
    assert!(out.text.contains("cannot be decoded"), "{}", out.text);
}

/// CRC-32 (IEEE), as PNG chunks carry.
fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = 0xFFFF_FFFFu32;
    for &byte in bytes {
        crc ^= u32::from(byte);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

#[test]
fn a_decompression_bomb_is_refused_from_its_header() {
    // A real 1x1 PNG whose header then claims 20000x20000 pixels (1.2 GB of RGB), with a valid
    // checksum: a decoder that believed it would allocate the lot.
    let mut png = encoded(&halves(1, 1), ImageFormat::Png);
    assert_eq!(&png[12..16], b"IHDR");
    png[16..20].copy_from_slice(&20_000u32.to_be_bytes());
    png[20..24].copy_from_slice(&20_000u32.to_be_bytes());
    let crc = crc32(&png[12..29]);
    png[29..33].copy_from_slice(&crc.to_be_bytes());
    let ws = seeing(1568);
    ws.write("bomb.png", &png);
    let out = ws.err("read_file", json!({"path": "bomb.png"}));
    assert!(
        out.text
            .starts_with("bomb.png: PNG image, 20000x20000 pixels, "),
        "{}",
        out.text
    );
    assert!(
        out.text
            .contains("too large to open (400 megapixels; the limit is 50). It was not decoded."),
        "{}",
        out.text
    );
    assert!(out.images.is_empty());
}

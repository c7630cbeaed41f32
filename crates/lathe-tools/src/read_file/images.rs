//! `read_file` on PNG, JPEG, GIF and WebP: described from the header, and for a model that can
//! see, sent to it ([`ToolOutput::images`]) downscaled to `[tools] image_max_px`.
//!
//! The header is read first: an image over [`MAX_PIXELS`] is refused before anything is
//! decoded, so a small file that claims 20000x20000 pixels cannot take the memory its pixels
//! would.

use std::fs::File;
use std::io::{BufReader, Cursor, Read, Seek, SeekFrom};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use image::codecs::gif::GifDecoder;
use image::codecs::jpeg::JpegEncoder;
use image::codecs::webp::WebPDecoder;
use image::imageops::FilterType;
use image::{
    AnimationDecoder, DynamicImage, ImageDecoder, ImageError, ImageFormat, ImageReader, Limits,
};
use serde_json::{Value, json};

use lathe_runtime::session::Session;
use lathe_runtime::text::human_size;
use lathe_runtime::tool::{ResultExt, ToolError, ToolImage, ToolOutput, ToolResult};
use lathe_runtime::vision::Vision;

/// The most pixels an image may have to be decoded (50 megapixels: an 8000x6000 photo fits).
/// Larger ones are refused from their header, before any decoding.
pub const MAX_PIXELS: u64 = 50_000_000;

/// What the decoder may allocate at most (beyond the pixels of [`MAX_PIXELS`] at 16 bits per
/// channel, a 16-bit RGBA image that large is refused too).
const MAX_DECODE_BYTES: u64 = 512 * 1024 * 1024;

/// An image sent as it is (not re-encoded) when it fits and is at most this large.
const MAX_SENT_AS_IS: u64 = 4 * 1024 * 1024;

/// JPEG quality of a re-encoded photo.
const JPEG_QUALITY: u8 = 85;

/// The image format of a file that starts with `prefix`, for the four formats `read_file`
/// handles.
pub(super) fn format_of(prefix: &[u8]) -> Option<ImageFormat> {
    match image::guess_format(prefix).ok()? {
        format @ (ImageFormat::Png | ImageFormat::Jpeg | ImageFormat::Gif | ImageFormat::WebP) => {
            Some(format)
        }
        _ => None,
    }
}

fn name(format: ImageFormat) -> &'static str {
    match format {
        ImageFormat::Png => "PNG",
        ImageFormat::Jpeg => "JPEG",
        ImageFormat::Gif => "GIF",
        ImageFormat::WebP => "WebP",
        _ => "image",
    }
}

/// The image file being read, as its results describe it.
struct Image<'a> {
    shown: &'a str,
    /// The format's name (`PNG`).
    kind: &'static str,
    format: ImageFormat,
    /// Its size in bytes.
    len: u64,
}

impl Image<'_> {
    /// The error for an image that starts like its format but cannot be decoded.
    fn damaged(&self, err: &dyn std::fmt::Display) -> ToolError {
        let Image {
            shown, kind, len, ..
        } = *self;
        ToolError::new(format!(
            "{shown} starts like a {kind} image but cannot be decoded ({err}); the file is \
             damaged or truncated. Check it with the shell (`file {shown}`), or regenerate it."
        ))
        .with_path(shown)
        .with_meta(
            "image",
            json!({"format": kind, "bytes": len, "corrupt": true}),
        )
    }

    /// An error about the image `described`, with its metadata `meta`.
    fn refused(&self, text: String, meta: &Value) -> ToolError {
        ToolError::new(text)
            .with_path(self.shown)
            .with_meta("image", meta.clone())
    }
}

/// What `read_file` answers for the image `file` (`len` bytes, in `format`), shown as `shown`,
/// to a model with `vision`.
pub(super) fn read(
    session: &Session,
    file: File,
    shown: &str,
    len: u64,
    format: ImageFormat,
    vision: Vision,
) -> ToolResult {
    let image = Image {
        shown,
        kind: name(format),
        format,
        len,
    };
    let kind = image.kind;
    let mut file = file;
    file.seek(SeekFrom::Start(0))
        .or_model(|err| format!("cannot read {shown}: {err}"))?;
    let decoder = ImageReader::with_format(BufReader::new(&file), format)
        .into_decoder()
        .map_err(|err| image.damaged(&err))?;
    let (width, height) = decoder.dimensions();
    let described = format!(
        "{shown}: {kind} image, {width}x{height} pixels, {}",
        human_size(len)
    );
    let mut meta = json!({"format": kind, "width": width, "height": height, "bytes": len});
    let pixels = u64::from(width) * u64::from(height);
    if pixels > MAX_PIXELS {
        return Err(image.refused(
            format!(
                "{described}: too large to open ({} megapixels; the limit is {}). It was not \
                 decoded. To look at it, make a smaller copy with the shell (for example \
                 `convert {shown} -resize 4000x4000 small.png` with ImageMagick) and read that.",
                pixels / 1_000_000,
                MAX_PIXELS / 1_000_000
            ),
            &meta,
        ));
    }
    if let Vision::Blind { hint } = vision {
        drop(decoder);
        let hint = if hint.is_empty() {
            String::new()
        } else {
            format!(" {hint}")
        };
        return Ok(ToolOutput::ok(format!(
            "{described}. The model in use cannot view images, so it was not sent.{hint}"
        ))
        .with_path(shown)
        .with_meta("image", meta));
    }
    let picture = decode(&image, decoder, &described, &meta)?;
    let animated = animated(&mut file, format).map_err(|err| image.damaged(&err))?;
    let max_px = session.config().image_max_px.max(1);
    let size = fit(width, height, max_px);
    let resized = size != (width, height);
    let sent = to_send(&image, &file, picture, size, &described, &meta)?;
    let how = if resized {
        format!(
            "sent to the model downscaled to {}x{} ({}, {}; the longest side is \
             capped at {max_px} pixels by [tools] image_max_px)",
            size.0,
            size.1,
            sent.kind,
            human_size(sent.bytes.len() as u64)
        )
    } else if sent.media_type == format.to_mime_type() && !matches!(format, ImageFormat::Gif) {
        "sent to the model as it is".to_owned()
    } else {
        format!(
            "sent to the model as {} ({})",
            sent.kind,
            human_size(sent.bytes.len() as u64)
        )
    };
    let frames = if animated {
        " It is animated: only its first frame was sent.".to_owned()
    } else {
        String::new()
    };
    meta["sent"] = json!({
        "media_type": sent.media_type,
        "width": size.0,
        "height": size.1,
        "bytes": sent.bytes.len(),
    });
    if animated {
        meta["animated"] = Value::Bool(true);
    }
    Ok(ToolOutput::ok(format!("{described}; {how}.{frames}"))
        .with_path(shown)
        .with_meta("image", meta)
        .with_image(ToolImage {
            media_type: sent.media_type.to_owned(),
            data: STANDARD.encode(&sent.bytes),
        }))
}

/// Decodes the picture, within [`MAX_DECODE_BYTES`].
fn decode(
    image: &Image<'_>,
    mut decoder: impl ImageDecoder,
    described: &str,
    meta: &Value,
) -> Result<DynamicImage, ToolError> {
    let mut limits = Limits::default();
    limits.max_alloc = Some(MAX_DECODE_BYTES);
    decoder
        .set_limits(limits)
        .map_err(|err| image.damaged(&err))?;
    DynamicImage::from_decoder(decoder).map_err(|err| match err {
        ImageError::Limits(err) => image.refused(
            format!(
                "{described}: too large to decode in memory ({err}). Make a smaller copy with \
                 the shell and read that."
            ),
            meta,
        ),
        err => image.damaged(&err),
    })
}

/// The bytes sent to the model: the file as it is when it is a PNG or JPEG that fits and is
/// small enough, the picture scaled to `size` and re-encoded otherwise.
fn to_send(
    image: &Image<'_>,
    mut file: &File,
    picture: DynamicImage,
    size: (u32, u32),
    described: &str,
    meta: &Value,
) -> Result<Encoded, ToolError> {
    let resized = size != (picture.width(), picture.height());
    let format = image.format;
    if !resized
        && matches!(format, ImageFormat::Png | ImageFormat::Jpeg)
        && image.len <= MAX_SENT_AS_IS
    {
        let mut bytes = Vec::with_capacity(image.len as usize);
        file.seek(SeekFrom::Start(0))
            .and_then(|_| file.read_to_end(&mut bytes))
            .or_model(|err| format!("cannot read {}: {err}", image.shown))?;
        return Ok(Encoded {
            media_type: format.to_mime_type(),
            kind: image.kind,
            bytes,
        });
    }
    let picture = if resized {
        picture.resize_exact(size.0, size.1, FilterType::Triangle)
    } else {
        picture
    };
    encode(&picture, format).map_err(|err| {
        image.refused(
            format!("{described}: could not be prepared for the model ({err})"),
            meta,
        )
    })
}

/// The size of a `width`x`height` image whose longest side is at most `max_px`, keeping the
/// aspect ratio (each side at least 1 pixel).
fn fit(width: u32, height: u32, max_px: u32) -> (u32, u32) {
    let longest = width.max(height);
    if longest <= max_px {
        return (width, height);
    }
    let scale = |side: u32| {
        ((u64::from(side) * u64::from(max_px) + u64::from(longest) / 2) / u64::from(longest)).max(1)
            as u32
    };
    (scale(width), scale(height))
}

struct Encoded {
    media_type: &'static str,
    kind: &'static str,
    bytes: Vec<u8>,
}

/// Re-encodes `picture`: photos (JPEG, or WebP without transparency) as JPEG, everything else
/// (screenshots, diagrams, transparency, GIF's palettes) as PNG.
fn encode(picture: &DynamicImage, source: ImageFormat) -> Result<Encoded, ImageError> {
    let alpha = picture.color().has_alpha();
    let photo = match source {
        ImageFormat::Jpeg => true,
        ImageFormat::WebP => !alpha,
        _ => false,
    };
    let mut bytes = Vec::new();
    if photo {
        let rgb = picture.to_rgb8();
        JpegEncoder::new_with_quality(&mut bytes, JPEG_QUALITY).encode_image(&rgb)?;
        return Ok(Encoded {
            media_type: "image/jpeg",
            kind: "JPEG",
            bytes,
        });
    }
    let eight_bit = if alpha {
        DynamicImage::ImageRgba8(picture.to_rgba8())
    } else {
        DynamicImage::ImageRgb8(picture.to_rgb8())
    };
    eight_bit.write_to(&mut Cursor::new(&mut bytes), ImageFormat::Png)?;
    Ok(Encoded {
        media_type: "image/png",
        kind: "PNG",
        bytes,
    })
}

/// Whether a GIF or WebP file has more than one frame (its first one is what is sent).
fn animated(file: &mut File, format: ImageFormat) -> Result<bool, ImageError> {
    match format {
        ImageFormat::Gif => {
            file.seek(SeekFrom::Start(0)).map_err(ImageError::IoError)?;
            let decoder = GifDecoder::new(BufReader::new(&*file))?;
            Ok(decoder.into_frames().take(2).count() > 1)
        }
        ImageFormat::WebP => {
            file.seek(SeekFrom::Start(0)).map_err(ImageError::IoError)?;
            Ok(WebPDecoder::new(BufReader::new(&*file))?.has_animation())
        }
        _ => Ok(false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fitting_keeps_the_aspect_and_caps_the_longest_side() {
        assert_eq!(fit(1920, 1080, 1568), (1568, 882));
        assert_eq!(fit(1080, 1920, 1568), (882, 1568));
        assert_eq!(fit(800, 600, 1568), (800, 600));
        assert_eq!(fit(10000, 1, 100), (100, 1));
    }
}

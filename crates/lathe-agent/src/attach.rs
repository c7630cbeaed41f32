//! `@path/to/shot.png` in a prompt (`lathe chat`, `lathe exec`): the image goes with the
//! message to a model that can see, with `read_file`'s limits and downscaling. What is said
//! about it comes back as notices, for the front end to show.

use crate::message::Image;
use crate::provider::{Provider, no_vision_hint};
use lathe_runtime::Session;
use lathe_tools::read_file::image_for_model;

/// The extensions an `@` word must end with to name an image.
const IMAGE_EXTENSIONS: [&str; 5] = ["png", "jpg", "jpeg", "gif", "webp"];

/// The image paths `prompt` names, in order and once each: words that start with `@` and end in
/// `.png`, `.jpg`, `.jpeg`, `.gif` or `.webp` (any case). Punctuation after the name (`,` `.`
/// `;` `:` `!` `?` `)`) is not part of it; other `@` words (`@user`, `@src/main.rs`) are text.
pub fn image_mentions(prompt: &str) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    for word in prompt.split_whitespace() {
        let Some(path) = word.strip_prefix('@') else {
            continue;
        };
        let path = path.trim_end_matches([',', '.', ';', ':', '!', '?', ')', '"', '\'']);
        let is_image = path.rsplit_once('.').is_some_and(|(stem, ext)| {
            !stem.is_empty()
                && IMAGE_EXTENSIONS
                    .iter()
                    .any(|known| ext.eq_ignore_ascii_case(known))
        });
        if is_image && !found.iter().any(|f| f == path) {
            found.push(path.to_owned());
        }
    }
    found
}

/// A prompt with its images.
#[derive(Debug, Default)]
pub struct Attached {
    /// What the model reads: the prompt, and a line per attached image that says what it is.
    pub task: String,
    /// The images, in the order they were named.
    pub images: Vec<Image>,
    /// What the user is told: each image attached, or why none was.
    pub notices: Vec<String>,
}

/// `prompt` with the images it names (`@shot.png`) for `model`. A model that cannot see gets
/// the prompt as it is (the names stay text; it can still `read_file` them for a description)
/// and the user a notice that says what would let it see. `Err` when a named image cannot be
/// sent (missing, not an image, damaged, too large): nothing should be sent then.
pub async fn attach(
    prompt: &str,
    provider: &dyn Provider,
    model: &str,
    tools: &Session,
) -> Result<Attached, String> {
    let mentions = image_mentions(prompt);
    let mut attached = Attached {
        task: prompt.to_owned(),
        ..Attached::default()
    };
    if mentions.is_empty() {
        return Ok(attached);
    }
    let sees = provider.capabilities(model).await.is_ok_and(|c| c.vision);
    if !sees {
        let named = mentions
            .iter()
            .map(|m| format!("@{m}"))
            .collect::<Vec<_>>()
            .join(", ");
        attached.notices.push(format!(
            "{model} cannot view images: {named} went as text only. {}",
            no_vision_hint(provider.kind(), model)
        ));
        return Ok(attached);
    }
    let mut lines = Vec::new();
    for path in &mentions {
        let (image, description) = image_for_model(tools, path).map_err(|err| {
            format!(
                "@{path}: {err} Nothing was sent: fix the path, or remove the @ to send it as text."
            )
        })?;
        attached.images.push(image);
        attached.notices.push(format!("attached {description}"));
        lines.push(format!(
            "[attached image {}: {description}]",
            attached.images.len()
        ));
    }
    attached.task = format!("{prompt}\n\n{}", lines.join("\n"));
    Ok(attached)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_words_are_found_and_other_at_words_are_text() {
        assert_eq!(
            image_mentions("why is @shots/Login.PNG blank, and @b.jpg? see @a.webp."),
            ["shots/Login.PNG", "b.jpg", "a.webp"]
        );
        assert_eq!(
            image_mentions("ask @alice about @src/main.rs, mail a@b.png, @.png @x.gif @x.gif"),
            ["x.gif"]
        );
        assert!(image_mentions("no images here").is_empty());
        assert_eq!(image_mentions("(@d.jpeg)"), Vec::<String>::new());
        assert_eq!(image_mentions("look @d.jpeg)"), ["d.jpeg"]);
    }
}

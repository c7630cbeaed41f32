//! Bounds on what a result's metadata echoes of a call.

use serde_json::Value;

use crate::meta::Metadata;

/// The longest string kept in a result's metadata. Metadata echoes what a call was given (a
/// path, a diff of the content written); a longer string is cut, saying so and naming this
/// limit, so a huge argument is not copied into every result that mentions it.
pub const MAX_METADATA_STRING_BYTES: usize = 256 * 1024;

/// Cuts every string in `metadata` (nested ones too) to [`MAX_METADATA_STRING_BYTES`].
pub fn bound_metadata(metadata: &mut Metadata) {
    for value in metadata.extra.values_mut() {
        bound_value(value);
    }
    // A path echoes the call's argument too (a 1 MiB path names no file, but is quoted).
    if let Some(path) = &mut metadata.path {
        bound_string(path);
    }
    for change in &mut metadata.changes {
        bound_string(&mut change.path);
        bound_string(&mut change.diff);
    }
}

fn bound_string(text: &mut String) {
    if text.len() > MAX_METADATA_STRING_BYTES {
        let total = text.len();
        let mut end = MAX_METADATA_STRING_BYTES;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.shrink_to_fit();
        text.push_str(&format!(
            "\n[cut: {total} bytes; metadata values are at most {MAX_METADATA_STRING_BYTES} bytes]"
        ));
    }
}

fn bound_value(value: &mut Value) {
    match value {
        Value::String(text) => bound_string(text),
        Value::Array(items) => items.iter_mut().for_each(bound_value),
        Value::Object(map) => map.values_mut().for_each(bound_value),
        _ => {}
    }
}

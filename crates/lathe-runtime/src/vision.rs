//! Whether the model a session talks to can see images, and how large an image it is sent:
//! set by whoever knows the model (the agent from the provider's capabilities, `lathe mcp` for
//! its client), read by `read_file` and by the front ends that attach images.

use std::sync::Mutex;

use crate::session::Session;

/// The longest side, in pixels, of an image sent to a model, when `[tools] image_max_px` does
/// not say: what vision encoders commonly take without tiling it further.
pub const DEFAULT_IMAGE_MAX_PX: u32 = 1568;

/// Whether the model a session talks to can see images; `read_file` sends images only to one
/// that can. Set by whoever knows the model ([`set_vision`]): the agent from the provider's
/// capabilities, `lathe mcp` for its client. Until set, the model cannot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Vision {
    /// The model takes images.
    Sees,
    /// The model cannot view images; `hint` (possibly empty) says what would let it, e.g.
    /// which setting to turn on when the server supports vision.
    Blind {
        /// A sentence for the result, or empty.
        hint: String,
    },
}

struct VisionSetting(Mutex<Vision>);

/// Says whether the model of `session` can see images ([`Vision`]).
pub fn set_vision(session: &Session, vision: Vision) {
    let setting = session.extension(|| {
        VisionSetting(Mutex::new(Vision::Blind {
            hint: String::new(),
        }))
    });
    *setting.0.lock().unwrap_or_else(|p| p.into_inner()) = vision;
}

/// Whether the model of `session` can see images, as last set by [`set_vision`].
pub fn vision(session: &Session) -> Vision {
    match session.existing_extension::<VisionSetting>() {
        Some(setting) => setting.0.lock().unwrap_or_else(|p| p.into_inner()).clone(),
        None => Vision::Blind {
            hint: String::new(),
        },
    }
}

//! Where Lathe keeps its state: the platform data directory (`$XDG_DATA_HOME/lathe`, usually
//! `~/.local/share/lathe`), overridden by `LATHE_DATA_DIR`; never the workspace.

use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use etcetera::BaseStrategy;

/// Run directories of one-shot `lathe tool` calls older than this are removed.
const RUN_DIR_MAX_AGE: Duration = Duration::from_secs(7 * 24 * 3600);

/// The data directory.
pub fn data_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("LATHE_DATA_DIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    match etcetera::choose_base_strategy() {
        Ok(strategy) => strategy.data_dir().join("lathe"),
        Err(_) => std::env::temp_dir().join("lathe"),
    }
}

/// The user's configuration directory (`~/.config/lathe`), unless `LATHE_CONFIG_DIR` says
/// otherwise.
pub fn config_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("LATHE_CONFIG_DIR").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(dir));
    }
    etcetera::choose_base_strategy()
        .ok()
        .map(|strategy| strategy.config_dir().join("lathe"))
}

/// A fresh state directory for one run of `lathe tool` (artifacts, saved results), and the
/// removal of old ones.
pub fn new_run_dir() -> PathBuf {
    let runs = data_dir().join("runs");
    prune(&runs);
    let stamp = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default()
        .as_millis();
    runs.join(format!("{stamp}-{}", std::process::id()))
}

fn prune(runs: &std::path::Path) {
    let Ok(entries) = std::fs::read_dir(runs) else {
        return;
    };
    let now = SystemTime::now();
    for entry in entries.flatten() {
        let old = entry
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|modified| now.duration_since(modified).ok())
            .is_some_and(|age| age > RUN_DIR_MAX_AGE);
        if old {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

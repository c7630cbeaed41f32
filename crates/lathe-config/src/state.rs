//! Where Lathe keeps its state: the platform data directory (`$XDG_DATA_HOME/lathe`, usually
//! `~/.local/share/lathe`), overridden by `LATHE_DATA_DIR`; never the workspace.

use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use anyhow::Context;
use etcetera::BaseStrategy;
use lathe_store::Store;

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

/// Where the run directories of `lathe tool` are.
pub fn runs_dir() -> PathBuf {
    data_dir().join("runs")
}

/// A fresh state directory for one run of `lathe tool` (artifacts, saved results), and the
/// removal of old ones. Its name starts with the time of its creation in milliseconds.
pub fn new_run_dir() -> PathBuf {
    let runs = runs_dir();
    let now = SystemTime::now();
    prune(&runs, now);
    let stamp = now
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default()
        .as_millis();
    runs.join(format!("{stamp}-{}", std::process::id()))
}

/// Removes a run directory that holds nothing (a run that kept no artifact and saved no
/// result), so that the directory of runs grows only with runs worth keeping.
pub fn remove_if_empty(run_dir: &std::path::Path) {
    // `remove_dir` refuses a directory that is not empty: exactly the check wanted.
    let _ = std::fs::remove_dir(run_dir);
}

/// Removes run directories older than [`RUN_DIR_MAX_AGE`]. The age comes from the name, so
/// that a start does not cost a `stat` per kept run; only candidates are checked for recent
/// changes (a long `--batch` session still writing there is kept).
fn prune(runs: &std::path::Path, now: SystemTime) {
    let Ok(entries) = std::fs::read_dir(runs) else {
        return;
    };
    let now_ms = now
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default()
        .as_millis();
    let max_age_ms = RUN_DIR_MAX_AGE.as_millis();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let created_ms = name
            .to_str()
            .and_then(|name| name.split_once('-'))
            .and_then(|(stamp, _)| stamp.parse::<u128>().ok());
        if created_ms.is_some_and(|created| now_ms.saturating_sub(created) <= max_age_ms) {
            continue;
        }
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

/// Opens the sessions database in Lathe's data directory.
pub fn open_store() -> anyhow::Result<Store> {
    let path = lathe_store::default_database_path(&data_dir());
    Store::open(&path)
        .with_context(|| format!("cannot open the sessions database {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set_age(dir: &std::path::Path, age: Duration) {
        let when = SystemTime::now() - age;
        std::fs::File::open(dir)
            .unwrap()
            .set_modified(when)
            .unwrap();
    }

    #[test]
    fn prune_removes_old_runs_by_name_and_keeps_recent_or_active_ones() {
        let tmp = tempfile::tempdir().unwrap();
        let runs = tmp.path();
        let now = SystemTime::now();
        let now_ms = now
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap()
            .as_millis();
        let week_ms = RUN_DIR_MAX_AGE.as_millis();
        let old = runs.join(format!("{}-1", now_ms - 2 * week_ms));
        let old_but_active = runs.join(format!("{}-2", now_ms - 2 * week_ms));
        let recent = runs.join(format!("{}-3", now_ms - 1000));
        let odd_old = runs.join("not-a-run");
        let odd_new = runs.join("kept");
        for dir in [&old, &old_but_active, &recent, &odd_old, &odd_new] {
            std::fs::create_dir(dir).unwrap();
            std::fs::write(dir.join("cmd-1"), "x").unwrap();
        }
        let month = Duration::from_secs(30 * 24 * 3600);
        set_age(&old, month);
        set_age(&odd_old, month);
        // A recent name is trusted without a look at the time of change.
        set_age(&recent, month);
        prune(runs, now);
        assert!(!old.exists());
        assert!(!odd_old.exists());
        assert!(old_but_active.exists());
        assert!(recent.exists());
        assert!(odd_new.exists());
    }

    #[test]
    fn only_an_empty_run_directory_is_removed() {
        let tmp = tempfile::tempdir().unwrap();
        let empty = tmp.path().join("empty");
        let kept = tmp.path().join("kept");
        std::fs::create_dir(&empty).unwrap();
        std::fs::create_dir(&kept).unwrap();
        std::fs::write(kept.join("cmd-1"), "output").unwrap();
        remove_if_empty(&empty);
        remove_if_empty(&kept);
        remove_if_empty(&tmp.path().join("never-created"));
        assert!(!empty.exists());
        assert!(kept.join("cmd-1").exists());
    }
}

//! One session's state: the workspace, the configuration, and what the tools remember between
//! calls (which files were read, running commands, pending previews).

use std::any::{Any, TypeId};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use serde::{Deserialize, Serialize};

use crate::workspace::Workspace;

/// Default cap on one tool result, in characters.
pub const DEFAULT_RESULT_BUDGET: usize = 20_000;

/// Configuration of the tool runtime. Every field has a default; the binary fills it from
/// configuration files and flags.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ToolConfig {
    /// The largest result, in characters, handed to the model. By default, 20,000.
    pub result_budget: usize,
    /// Extra directories the tools may read but never write.
    pub read_roots: Vec<PathBuf>,
    /// The longest side, in pixels, of an image `read_file` sends to a model that can see
    /// (larger ones are downscaled, keeping their aspect). By default, 1568.
    pub image_max_px: u32,
}

impl Default for ToolConfig {
    fn default() -> Self {
        ToolConfig {
            result_budget: DEFAULT_RESULT_BUDGET,
            read_roots: Vec::new(),
            image_max_px: crate::vision::DEFAULT_IMAGE_MAX_PX,
        }
    }
}

/// What the session knows of a file's content when it last read or wrote it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileStamp {
    /// Length in bytes.
    pub len: u64,
    /// A hash of the bytes (not cryptographic; detects change, not tampering).
    pub hash: u64,
}

impl FileStamp {
    /// The stamp of `bytes`.
    pub fn of(bytes: &[u8]) -> Self {
        use std::hash::{Hash, Hasher};
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        bytes.hash(&mut hasher);
        FileStamp {
            len: bytes.len() as u64,
            hash: hasher.finish(),
        }
    }
}

/// A session: created once per agent session, MCP connection or `lathe tool` run.
pub struct Session {
    workspace: Workspace,
    config: ToolConfig,
    state_dir: PathBuf,
    files: Mutex<HashMap<PathBuf, FileStamp>>,
    extensions: Mutex<HashMap<TypeId, Arc<dyn Any + Send + Sync>>>,
    pub(crate) pending: Mutex<crate::pending::PendingStack>,
    /// Tools offered on demand that were enabled in this session ([`Session::enable_tool`]).
    enabled_tools: Mutex<HashSet<String>>,
    /// The only tools this session may call now, with why ([`Session::allow_only`]).
    allowed_tools: Mutex<Option<(HashSet<String>, String)>>,
    result_counter: std::sync::atomic::AtomicU64,
    /// A lower cap on results than the configured budget, set by the agent from the model's
    /// window ([`Session::limit_result_budget`]); `usize::MAX` when there is none.
    result_limit: std::sync::atomic::AtomicUsize,
    shutdown_hooks: Mutex<Vec<Box<dyn FnOnce() + Send>>>,
    /// Held while the hooks run, so that a second `shutdown` (a signal arriving during the
    /// normal end) returns only when the first has finished.
    shutting_down: Mutex<()>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("workspace", &self.workspace.root())
            .field("state_dir", &self.state_dir)
            .finish_non_exhaustive()
    }
}

impl Session {
    /// A session over `workspace`, keeping its state (artifacts, saved results) in `state_dir`,
    /// which is created if missing and becomes readable (not writable) by the tools, as do the
    /// configured `read_roots`.
    pub fn new(
        mut workspace: Workspace,
        config: ToolConfig,
        state_dir: PathBuf,
    ) -> std::io::Result<Arc<Self>> {
        std::fs::create_dir_all(&state_dir)?;
        let state_dir = state_dir.canonicalize()?;
        // Saved results and artifacts are readable by the model, never writable.
        workspace.add_read_root(&state_dir)?;
        for root in &config.read_roots {
            workspace.add_read_root(root)?;
        }
        Ok(Arc::new(Session {
            workspace,
            config,
            state_dir,
            files: Mutex::new(HashMap::new()),
            extensions: Mutex::new(HashMap::new()),
            pending: Mutex::new(Default::default()),
            enabled_tools: Mutex::new(HashSet::new()),
            allowed_tools: Mutex::new(None),
            result_counter: std::sync::atomic::AtomicU64::new(0),
            result_limit: std::sync::atomic::AtomicUsize::new(usize::MAX),
            shutdown_hooks: Mutex::new(Vec::new()),
            shutting_down: Mutex::new(()),
        }))
    }

    /// The workspace every path is resolved against.
    pub fn workspace(&self) -> &Workspace {
        &self.workspace
    }

    /// The configuration.
    pub fn config(&self) -> &ToolConfig {
        &self.config
    }

    /// The largest result, in characters, handed to the model now: the configured
    /// `result_budget`, or less when the agent lowered it for a small window.
    pub fn result_budget(&self) -> usize {
        self.config
            .result_budget
            .min(self.result_limit.load(std::sync::atomic::Ordering::Relaxed))
    }

    /// Caps results at `chars` characters below the configured budget (the agent does so from
    /// the model's context window, which can change during a session); `None` lifts the cap.
    pub fn limit_result_budget(&self, chars: Option<usize>) {
        self.result_limit.store(
            chars.unwrap_or(usize::MAX),
            std::sync::atomic::Ordering::Relaxed,
        );
    }

    /// The directory that holds this session's artifacts.
    pub fn state_dir(&self) -> &Path {
        &self.state_dir
    }

    /// Offers the on-demand tool `name` from now on in this session (see
    /// [`Registry::defer`](crate::Registry::defer)). True when it was not enabled yet.
    pub fn enable_tool(&self, name: &str) -> bool {
        lock(&self.enabled_tools).insert(name.to_owned())
    }

    /// Whether the on-demand tool `name` was enabled in this session.
    pub fn tool_enabled(&self, name: &str) -> bool {
        lock(&self.enabled_tools).contains(name)
    }

    /// Narrows the tools this session offers and runs to `names` (registered names), until
    /// called with `None`: a project command's `allowed-tools`, a front end's own limit.
    /// `why` ends the message a call to another tool gets (`the command /review allows only
    /// these`). It only narrows: the policy still judges every call.
    pub fn allow_only(&self, names: Option<(Vec<String>, String)>) {
        *lock(&self.allowed_tools) = names.map(|(names, why)| (names.into_iter().collect(), why));
    }

    /// Whether the session may call the registered tool `name` now ([`Session::allow_only`]).
    pub fn tool_allowed(&self, name: &str) -> bool {
        lock(&self.allowed_tools)
            .as_ref()
            .is_none_or(|(names, _)| names.contains(name))
    }

    /// The tools [`Session::allow_only`] left, sorted, and why; `None` without a limit.
    pub fn allowed_tools(&self) -> Option<(Vec<String>, String)> {
        lock(&self.allowed_tools).as_ref().map(|(names, why)| {
            let mut names: Vec<String> = names.iter().cloned().collect();
            names.sort();
            (names, why.clone())
        })
    }

    /// Remembers the content of `path` as this session last saw it (after a read or a write).
    pub fn record_file(&self, path: &Path, bytes: &[u8]) {
        lock(&self.files).insert(path.to_path_buf(), FileStamp::of(bytes));
    }

    /// Forgets `path` (it was deleted or moved).
    pub fn forget_file(&self, path: &Path) {
        lock(&self.files).remove(path);
    }

    /// The stamp recorded for `path`, if this session has read or written it.
    pub fn file_stamp(&self, path: &Path) -> Option<FileStamp> {
        lock(&self.files).get(path).copied()
    }

    /// Checks that `current` (the bytes on disk now) is what this session last read or wrote at
    /// `path`. A file the session never saw passes. The error is the model-facing explanation.
    pub fn check_unchanged(&self, path: &Path, current: &[u8], shown: &str) -> Result<(), String> {
        match self.file_stamp(path) {
            Some(stamp) if stamp != FileStamp::of(current) => Err(format!(
                "{shown} changed on disk since this session last read or wrote it; \
                 read it again with read_file, then retry with the current content"
            )),
            _ => Ok(()),
        }
    }

    /// Per-session state of type `T`, created by `init` on first use. Tools keep their own
    /// state here (background commands, pending previews) without this type knowing them.
    pub fn extension<T, F>(&self, init: F) -> Arc<T>
    where
        T: Any + Send + Sync,
        F: FnOnce() -> T,
    {
        let mut map = lock(&self.extensions);
        let entry = map
            .entry(TypeId::of::<T>())
            .or_insert_with(|| Arc::new(init()) as Arc<dyn Any + Send + Sync>);
        Arc::clone(entry)
            .downcast::<T>()
            .unwrap_or_else(|_| unreachable!("extension map is keyed by TypeId"))
    }

    /// Per-session state of type `T` if it was created.
    pub fn existing_extension<T: Any + Send + Sync>(&self) -> Option<Arc<T>> {
        let map = lock(&self.extensions);
        map.get(&TypeId::of::<T>())
            .map(|entry| Arc::clone(entry).downcast::<T>().ok())?
    }

    /// Registers work to do when the session ends (kill running commands, remove temporary
    /// files). Hooks run once, in reverse order of registration.
    pub fn on_shutdown(&self, hook: impl FnOnce() + Send + 'static) {
        lock(&self.shutdown_hooks).push(Box::new(hook));
    }

    /// Ends the session: runs the shutdown hooks. Also done when the session is dropped. When
    /// it returns, the hooks have run, whichever caller ran them (calls from several threads
    /// wait for each other).
    pub fn shutdown(&self) {
        let _running = lock(&self.shutting_down);
        let hooks = std::mem::take(&mut *lock(&self.shutdown_hooks));
        for hook in hooks.into_iter().rev() {
            hook();
        }
    }

    /// A fresh number, unique in this session (for saved results and similar).
    pub fn next_number(&self) -> u64 {
        self.result_counter
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            + 1
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// Locks a mutex, recovering from poisoning: a panicked tool must not wedge the session.
pub fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Computes a [`FileStamp`] piece by piece, for files too large to hold in memory. Fed the
/// pieces of some bytes in order, it finishes with exactly [`FileStamp::of`] those bytes.
pub struct StampBuilder {
    hasher: std::collections::hash_map::DefaultHasher,
    expected: u64,
    seen: u64,
}

impl StampBuilder {
    /// A builder for content of `len` bytes (the length is hashed first, as `FileStamp::of`
    /// hashes a slice: its length, then its bytes).
    pub fn new(len: u64) -> Self {
        use std::hash::Hasher;
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        hasher.write_usize(len as usize);
        StampBuilder {
            hasher,
            expected: len,
            seen: 0,
        }
    }

    /// Adds the next piece.
    pub fn update(&mut self, bytes: &[u8]) {
        use std::hash::Hasher;
        self.hasher.write(bytes);
        self.seen += bytes.len() as u64;
    }

    /// The stamp, or `None` when the pieces did not add up to the announced length (the file
    /// changed while it was read, so no stamp describes it).
    pub fn finish(self) -> Option<FileStamp> {
        use std::hash::Hasher;
        (self.seen == self.expected).then(|| FileStamp {
            len: self.seen,
            hash: self.hasher.finish(),
        })
    }
}

impl Session {
    /// Remembers a stamp computed elsewhere (see [`StampBuilder`]) for `path`, as
    /// [`Session::record_file`] does for bytes in memory.
    pub fn record_stamp(&self, path: &Path, stamp: FileStamp) {
        lock(&self.files).insert(path.to_path_buf(), stamp);
    }
}

impl Session {
    /// [`Session::check_unchanged`] for a file whose current stamp was computed elsewhere (too
    /// large to hold in memory).
    pub fn check_unchanged_stamp(
        &self,
        path: &Path,
        current: FileStamp,
        shown: &str,
    ) -> Result<(), String> {
        match self.file_stamp(path) {
            Some(stamp) if stamp != current => Err(format!(
                "{shown} changed on disk since this session last read or wrote it; \
                 read it again with read_file, then retry with the current content"
            )),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod stamp_tests {
    use super::*;

    #[test]
    fn streamed_stamp_equals_stamp_of_whole_bytes() {
        let bytes: Vec<u8> = (0..100_000u32).map(|i| (i * 7 % 251) as u8).collect();
        for piece in [1usize, 3, 8, 13, 4096, 100_000] {
            let mut builder = StampBuilder::new(bytes.len() as u64);
            for chunk in bytes.chunks(piece) {
                builder.update(chunk);
            }
            assert_eq!(
                builder.finish(),
                Some(FileStamp::of(&bytes)),
                "pieces of {piece}"
            );
        }
        assert_eq!(StampBuilder::new(0).finish(), Some(FileStamp::of(b"")));
        let mut short = StampBuilder::new(10);
        short.update(b"abc");
        assert_eq!(short.finish(), None);
    }
}

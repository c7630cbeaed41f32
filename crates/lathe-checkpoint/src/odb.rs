//! Trees and commits of the shadow repository read and written in-process: what undo, redo
//! and the list of steps need (`git diff-tree -r`, `git log --first-parent`, `git cat-file`,
//! `git commit-tree`, `read-tree` + `update-index` + `write-tree` of a few paths) without a git
//! process each. Objects come from [`Objects`] (loose or packed); one it cannot read (a pack
//! format it does not know) is asked of `git cat-file`, so a reader's gap costs a process, never
//! a wrong answer.

use std::collections::BTreeMap;

use crate::git::Git;
use crate::objects::{self, Kind, Objects, Oid};
use crate::{Error, Result};

/// The mode of a tree entry that is a directory.
pub(crate) const MODE_TREE: u32 = 0o40000;

/// One entry of a tree object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TreeEntry {
    pub(crate) mode: u32,
    pub(crate) name: Vec<u8>,
    pub(crate) oid: Oid,
}

/// A path's state in a tree: its mode and id, or `None` where there is none.
pub(crate) type State = Option<(u32, Oid)>;

/// A path's components and the state to give it.
type Edit<'a> = (&'a [&'a [u8]], State);

/// A commit as the steps read it.
#[derive(Debug, Clone)]
pub(crate) struct Commit {
    pub(crate) id: String,
    pub(crate) tree: String,
    pub(crate) parent: Option<String>,
    /// The committer's time, in seconds since the epoch.
    pub(crate) time: Option<i64>,
    /// The message, as `git log --format=%B` shows it.
    pub(crate) message: String,
}

/// The shadow repository's objects, with git behind them for what this reader does not know.
pub(crate) struct Odb<'a> {
    git: &'a Git,
    objects: Objects,
}

impl<'a> Odb<'a> {
    pub(crate) fn new(git: &'a Git) -> Odb<'a> {
        Odb {
            git,
            objects: Objects::new(&git.git_dir),
        }
    }

    /// The bytes of object `oid`, which must be a `kind`.
    pub(crate) fn read(&self, oid: &Oid, kind: Kind) -> Result<Vec<u8>> {
        match self.objects.read(oid) {
            Some((found, bytes)) if found == kind => Ok(bytes),
            Some((found, _)) => Err(Error::Git {
                command: format!("cat-file {} {}", kind.name(), objects::hex(oid)),
                message: format!("it is a {}", found.name()),
            }),
            None => self
                .git
                .run(["cat-file", kind.name(), objects::hex(oid).as_str()]),
        }
    }

    /// The entries of tree `oid`.
    pub(crate) fn tree(&self, oid: &Oid) -> Result<Vec<TreeEntry>> {
        let bytes = self.read(oid, Kind::Tree)?;
        parse_tree(&bytes).ok_or_else(|| Error::Git {
            command: format!("cat-file tree {}", objects::hex(oid)),
            message: "a tree this reader cannot parse".into(),
        })
    }

    /// The entries of tree `oid` (none for no tree) by name: mode and id.
    fn by_name(&self, oid: Option<&Oid>) -> Result<BTreeMap<Vec<u8>, (u32, Oid)>> {
        Ok(match oid {
            Some(oid) => self
                .tree(oid)?
                .into_iter()
                .map(|e| (e.name, (e.mode, e.oid)))
                .collect(),
            None => BTreeMap::new(),
        })
    }

    /// Every path whose state differs between trees `from` and `to`, recursively (`git
    /// diff-tree -r --no-renames`): a directory on one side and a file on the other gives the
    /// file's change and each file under the directory.
    pub(crate) fn diff(&self, from: &str, to: &str) -> Result<Vec<(Vec<u8>, State, State)>> {
        let mut out = Vec::new();
        let (from, to) = (oid_of(from)?, oid_of(to)?);
        if from != to {
            self.diff_into(b"", Some(&from), Some(&to), &mut out)?;
        }
        Ok(out)
    }

    fn diff_into(
        &self,
        prefix: &[u8],
        from: Option<&Oid>,
        to: Option<&Oid>,
        out: &mut Vec<(Vec<u8>, State, State)>,
    ) -> Result<()> {
        let (a, b) = (self.by_name(from)?, self.by_name(to)?);
        let mut names: Vec<&Vec<u8>> = a.keys().chain(b.keys()).collect();
        names.sort();
        names.dedup();
        for name in names {
            let (old, new) = (a.get(name).copied(), b.get(name).copied());
            if old == new {
                continue;
            }
            let mut path = prefix.to_vec();
            path.extend_from_slice(name);
            let dir = |s: State| s.filter(|(mode, _)| *mode == MODE_TREE).map(|(_, oid)| oid);
            let file = |s: State| s.filter(|(mode, _)| *mode != MODE_TREE);
            let (old_dir, new_dir) = (dir(old), dir(new));
            if old_dir.is_some() || new_dir.is_some() {
                let mut sub = path.clone();
                sub.push(b'/');
                self.diff_into(&sub, old_dir.as_ref(), new_dir.as_ref(), out)?;
            }
            let (old_file, new_file) = (file(old), file(new));
            if old_file.is_some() || new_file.is_some() {
                out.push((path, old_file, new_file));
            }
        }
        Ok(())
    }

    /// Tree `base` with each path set to its state (`None` takes it out; a directory left
    /// empty goes too, as git's index cannot hold one): the new tree's id. Only the trees on
    /// the changed paths are written.
    pub(crate) fn edit(&self, base: &str, changes: &[(Vec<u8>, State)]) -> Result<String> {
        let split: Vec<(Vec<&[u8]>, State)> = changes
            .iter()
            .map(|(path, state)| (path.split(|&b| b == b'/').collect(), *state))
            .collect();
        let refs: Vec<Edit<'_>> = split.iter().map(|(c, s)| (c.as_slice(), *s)).collect();
        let root = self.edit_tree(Some(&oid_of(base)?), &refs)?;
        let root = match root {
            Some(oid) => oid,
            None => self.objects.write(Kind::Tree, b"")?,
        };
        Ok(objects::hex(&root))
    }

    fn edit_tree(&self, base: Option<&Oid>, changes: &[Edit<'_>]) -> Result<Option<Oid>> {
        let mut entries = self.by_name(base)?;
        let mut deeper: BTreeMap<&[u8], Vec<Edit<'_>>> = BTreeMap::new();
        for (components, state) in changes {
            match components {
                [] => {}
                [name] => match state {
                    Some(entry) => {
                        entries.insert(name.to_vec(), *entry);
                    }
                    None => {
                        entries.remove(*name);
                    }
                },
                [name, rest @ ..] => deeper.entry(name).or_default().push((rest, *state)),
            }
        }
        for (name, sub) in deeper {
            let existing = entries
                .get(name)
                .filter(|(mode, _)| *mode == MODE_TREE)
                .map(|(_, oid)| *oid);
            match self.edit_tree(existing.as_ref(), &sub)? {
                Some(oid) => {
                    entries.insert(name.to_vec(), (MODE_TREE, oid));
                }
                None if existing.is_some() => {
                    entries.remove(name);
                }
                None => {}
            }
        }
        if entries.is_empty() {
            return Ok(None);
        }
        let mut list: Vec<TreeEntry> = entries
            .into_iter()
            .map(|(name, (mode, oid))| TreeEntry { mode, name, oid })
            .collect();
        Ok(Some(
            self.objects.write(Kind::Tree, &tree_bytes(&mut list))?,
        ))
    }

    /// Stores a blob (unless it is there) and returns its id.
    pub(crate) fn write_blob(&self, bytes: &[u8]) -> Result<Oid> {
        self.objects.write(Kind::Blob, bytes)
    }

    /// A commit of `tree` on `parent` with `message`, by lathe, now (`git commit-tree`).
    pub(crate) fn commit(&self, tree: &str, parent: Option<&str>, message: &str) -> Result<String> {
        let seconds = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let bytes = commit_bytes(tree, parent, message, seconds);
        Ok(objects::hex(&self.objects.write(Kind::Commit, &bytes)?))
    }

    /// The commits from `head` down its first parents, newest first (`git log
    /// --first-parent`).
    pub(crate) fn log(&self, head: &str) -> Result<Vec<Commit>> {
        let mut commits = Vec::new();
        let mut next = Some(head.to_owned());
        while let Some(id) = next {
            let bytes = self.read(&oid_of(&id)?, Kind::Commit)?;
            let commit = parse_commit(id.clone(), &bytes).ok_or_else(|| Error::Git {
                command: format!("cat-file commit {id}"),
                message: "a commit this reader cannot parse".into(),
            })?;
            next = commit.parent.clone();
            commits.push(commit);
        }
        Ok(commits)
    }
}

/// The id forty hex digits spell.
pub(crate) fn oid_of(hex: &str) -> Result<Oid> {
    let bad = || Error::Git {
        command: "rev-parse".into(),
        message: format!("not an object id: {hex:?}"),
    };
    if hex.len() != 40 {
        return Err(bad());
    }
    let mut oid = [0u8; 20];
    for (i, byte) in oid.iter_mut().enumerate() {
        *byte = u8::from_str_radix(hex.get(2 * i..2 * i + 2).ok_or_else(bad)?, 16)
            .map_err(|_| bad())?;
    }
    Ok(oid)
}

/// A tree object's entries: `<octal mode> <name>\0<20-byte id>`, one after another.
pub(crate) fn parse_tree(mut bytes: &[u8]) -> Option<Vec<TreeEntry>> {
    let mut entries = Vec::new();
    while !bytes.is_empty() {
        let space = bytes.iter().position(|&b| b == b' ')?;
        let mode = u32::from_str_radix(std::str::from_utf8(&bytes[..space]).ok()?, 8).ok()?;
        let rest = &bytes[space + 1..];
        let nul = rest.iter().position(|&b| b == 0)?;
        let oid: Oid = rest.get(nul + 1..nul + 21)?.try_into().ok()?;
        entries.push(TreeEntry {
            mode,
            name: rest[..nul].to_vec(),
            oid,
        });
        bytes = &rest[nul + 21..];
    }
    Some(entries)
}

/// A tree object's bytes, its entries in git's order (a directory's name compared as if it
/// ended with `/`).
pub(crate) fn tree_bytes(entries: &mut [TreeEntry]) -> Vec<u8> {
    let key = |e: &TreeEntry| {
        let mut k = e.name.clone();
        if e.mode == MODE_TREE {
            k.push(b'/');
        }
        k
    };
    entries.sort_by_cached_key(key);
    let mut out = Vec::new();
    for e in entries.iter() {
        out.extend_from_slice(format!("{:o} ", e.mode).as_bytes());
        out.extend_from_slice(&e.name);
        out.push(0);
        out.extend_from_slice(&e.oid);
    }
    out
}

/// A commit object's bytes as `git commit-tree TREE [-p PARENT] -m MESSAGE` writes them with
/// lathe as author and committer at `seconds` (UTC).
pub(crate) fn commit_bytes(
    tree: &str,
    parent: Option<&str>,
    message: &str,
    seconds: u64,
) -> Vec<u8> {
    let mut out = format!("tree {tree}\n");
    if let Some(parent) = parent {
        out.push_str(&format!("parent {parent}\n"));
    }
    for role in ["author", "committer"] {
        out.push_str(&format!("{role} lathe <lathe@localhost> {seconds} +0000\n"));
    }
    out.push('\n');
    out.push_str(message);
    if !message.ends_with('\n') {
        out.push('\n');
    }
    out.into_bytes()
}

fn parse_commit(id: String, bytes: &[u8]) -> Option<Commit> {
    let text = String::from_utf8_lossy(bytes);
    let (head, message) = text.split_once("\n\n").unwrap_or((&text, ""));
    let (mut tree, mut parent, mut time) = (None, None, None);
    for line in head.lines() {
        if let Some(t) = line.strip_prefix("tree ") {
            tree = Some(t.trim().to_owned());
        } else if let Some(p) = line.strip_prefix("parent ") {
            parent = parent.or_else(|| Some(p.trim().to_owned()));
        } else if let Some(c) = line.strip_prefix("committer ") {
            // `Name <email> SECONDS ZONE`.
            time = c.rsplit(' ').nth(1).and_then(|s| s.parse::<i64>().ok());
        }
    }
    Some(Commit {
        id,
        tree: tree?,
        parent,
        time,
        message: message.to_owned(),
    })
}

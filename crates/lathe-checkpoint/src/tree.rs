//! Tree objects of an index's entries, in-process, as `git write-tree` makes them, and the
//! cache of their ids that the index keeps (its `TREE` extension, git's `cache-tree.c`): a
//! directory none of whose entries changed keeps its id, so a snapshot writes the trees of
//! the changed directories only (a changed file's directory and those above it).

use std::collections::HashMap;

use crate::Result;
use crate::index::{Entry, Reader};
use crate::objects::{Kind, Objects, Oid};

/// One directory's node of the cache: how many index entries it covers and its tree id, or
/// invalid (`entries` negative, no id) once one of its entries changed; its subdirectories'
/// nodes, by name, sorted as git writes them (shorter names first, then by bytes).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct CacheTree {
    pub(crate) entries: i32,
    pub(crate) oid: Option<Oid>,
    pub(crate) children: Vec<(Vec<u8>, CacheTree)>,
}

impl CacheTree {
    /// An invalid node: nothing known.
    pub(crate) fn unknown() -> CacheTree {
        CacheTree {
            entries: -1,
            oid: None,
            children: Vec::new(),
        }
    }

    /// The root's id, when it is valid.
    pub(crate) fn valid_root(&self) -> Option<Oid> {
        (self.entries >= 0).then_some(self.oid).flatten()
    }

    /// Parses the `TREE` extension's data: a node is its name, NUL, `<entries> <subtrees>\n`,
    /// the id when `entries` is not negative, then its subtrees' nodes.
    pub(crate) fn parse(data: &[u8]) -> std::result::Result<CacheTree, String> {
        let mut r = Reader { bytes: data, at: 0 };
        let (name, root) = parse_node(&mut r, 0)?;
        if !name.is_empty() || r.at != data.len() {
            return Err("a TREE extension with more than one root".into());
        }
        Ok(root)
    }

    /// Appends this node (named `name`) and its subtrees in the extension's format.
    pub(crate) fn write(&self, name: &[u8], out: &mut Vec<u8>) {
        out.extend_from_slice(name);
        out.push(0);
        out.extend_from_slice(format!("{} {}\n", self.entries, self.children.len()).as_bytes());
        if self.entries >= 0
            && let Some(oid) = &self.oid
        {
            out.extend_from_slice(oid);
        }
        for (name, child) in &self.children {
            child.write(name, out);
        }
    }

    /// Marks every directory above `path` (a file's, relative) as changed: the root and each
    /// directory on the way down.
    pub(crate) fn invalidate(&mut self, path: &[u8]) {
        self.entries = -1;
        self.oid = None;
        let Some(slash) = path.iter().position(|b| *b == b'/') else {
            return;
        };
        let (name, rest) = (&path[..slash], &path[slash + 1..]);
        if let Some((_, child)) = self.children.iter_mut().find(|(n, _)| n == name) {
            child.invalidate(rest);
        }
    }
}

fn parse_node(
    r: &mut Reader<'_>,
    depth: usize,
) -> std::result::Result<(Vec<u8>, CacheTree), String> {
    if depth > 4096 {
        return Err("a TREE extension nested too deep".into());
    }
    let name = r.until_nul()?.to_vec();
    let line = r.until(b'\n')?;
    let line = std::str::from_utf8(line).map_err(|_| "a TREE extension's counts".to_owned())?;
    let (entries, subtrees) = line
        .split_once(' ')
        .and_then(|(e, s)| Some((e.parse::<i32>().ok()?, s.parse::<usize>().ok()?)))
        .ok_or("a TREE extension's counts")?;
    let oid = if entries >= 0 {
        Some(r.take(20)?.try_into().expect("twenty bytes"))
    } else {
        None
    };
    let mut children = Vec::new();
    for _ in 0..subtrees {
        children.push(parse_node(r, depth + 1)?);
    }
    Ok((
        name,
        CacheTree {
            entries,
            oid,
            children,
        },
    ))
}

/// git's order of a node's subtrees (`subtree_name_cmp`): by length, then by bytes.
fn by_git_order(a: &(Vec<u8>, CacheTree), b: &(Vec<u8>, CacheTree)) -> std::cmp::Ordering {
    a.0.len().cmp(&b.0.len()).then_with(|| a.0.cmp(&b.0))
}

/// The tree of `entries` (sorted by path, as an index keeps them), its directories' trees
/// written to `objects` when their ids are not in `cache`; returns the cache of every
/// directory's id (the root's is the tree's).
pub(crate) fn build(entries: &[Entry], cache: CacheTree, objects: &Objects) -> Result<CacheTree> {
    directory(entries, 0, cache, objects)
}

/// The tree of one directory: `entries` are all under it, their paths' first `base` bytes its
/// path (with the trailing `/`).
fn directory(
    entries: &[Entry],
    base: usize,
    cache: CacheTree,
    objects: &Objects,
) -> Result<CacheTree> {
    if cache.entries >= 0 && cache.entries as usize == entries.len() && cache.oid.is_some() {
        return Ok(cache);
    }
    let mut known: HashMap<Vec<u8>, CacheTree> = cache.children.into_iter().collect();
    let mut content = Vec::new();
    let mut children = Vec::new();
    let mut i = 0;
    while i < entries.len() {
        let rest = &entries[i].path[base..];
        match rest.iter().position(|b| *b == b'/') {
            None => {
                let mode = format!("{:o} ", entries[i].stat.mode);
                content.extend_from_slice(mode.as_bytes());
                content.extend_from_slice(rest);
                content.push(0);
                content.extend_from_slice(&entries[i].oid);
                i += 1;
            }
            Some(slash) => {
                let name = &rest[..slash];
                // All paths under `<dir>/<name>/`, contiguous in the sorted entries.
                let prefix = &entries[i].path[..base + slash + 1];
                let n = entries[i..].partition_point(|e| e.path.starts_with(prefix));
                let child = known.remove(name).unwrap_or_else(CacheTree::unknown);
                let child = directory(&entries[i..i + n], base + slash + 1, child, objects)?;
                content.extend_from_slice(b"40000 ");
                content.extend_from_slice(name);
                content.push(0);
                content.extend_from_slice(child.oid.as_ref().expect("just built"));
                children.push((name.to_vec(), child));
                i += n;
            }
        }
    }
    let oid = objects.write(Kind::Tree, &content)?;
    children.sort_by(by_git_order);
    Ok(CacheTree {
        entries: entries.len() as i32,
        oid: Some(oid),
        children,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_extension_round_trips_and_invalidation_climbs_the_path() {
        let leaf = |n: i32, b: u8| CacheTree {
            entries: n,
            oid: Some([b; 20]),
            children: Vec::new(),
        };
        let mut root = CacheTree {
            entries: 5,
            oid: Some([1; 20]),
            children: vec![
                (b"b".to_vec(), leaf(1, 2)),
                (
                    b"src".to_vec(),
                    CacheTree {
                        entries: 3,
                        oid: Some([3; 20]),
                        children: vec![(b"deep".to_vec(), leaf(2, 4))],
                    },
                ),
            ],
        };
        let mut data = Vec::new();
        root.write(&[], &mut data);
        assert_eq!(CacheTree::parse(&data).unwrap(), root);

        root.invalidate(b"src/deep/x.rs");
        assert_eq!(root.valid_root(), None);
        assert_eq!(root.children[0].1, leaf(1, 2), "b/ untouched");
        assert_eq!(root.children[1].1.entries, -1);
        assert_eq!(root.children[1].1.children[0].1.entries, -1);
        let mut data = Vec::new();
        root.write(&[], &mut data);
        assert_eq!(CacheTree::parse(&data).unwrap(), root, "invalid nodes too");
        assert!(CacheTree::parse(b"\x001 0\n").is_err(), "an id cut short");
    }

    fn entry(path: &str, oid: u8) -> Entry {
        Entry {
            path: path.as_bytes().to_vec(),
            stat: crate::index::Stat {
                ctime: (0, 0),
                mtime: (0, 0),
                dev: 0,
                ino: 0,
                uid: 0,
                gid: 0,
                size: 0,
                mode: 0o100644,
            },
            oid: [oid; 20],
        }
    }

    /// A directory whose node is valid and covers as many entries as it holds keeps the id the
    /// cache says, unhashed (here an id no content has, to tell it from a rebuilt one); one
    /// whose count no longer matches, or that was invalidated, is built again.
    #[test]
    fn valid_directories_keep_their_cached_ids() {
        let dir = tempfile::tempdir().unwrap();
        let objects = Objects::new(dir.path());
        std::fs::create_dir(dir.path().join("objects")).unwrap();
        let entries = [
            entry("a/one", 1),
            entry("a/two", 2),
            entry("b/three", 3),
            entry("top", 4),
        ];
        let fresh = build(&entries, CacheTree::unknown(), &objects).unwrap();
        assert_eq!(fresh.entries, 4);
        let names: Vec<&[u8]> = fresh.children.iter().map(|(n, _)| n.as_slice()).collect();
        assert_eq!(names, [b"a".as_slice(), b"b"]);

        let mut cache = fresh.clone();
        cache.children[0].1.oid = Some([9; 20]);
        cache.invalidate(b"top");
        let built = build(&entries, cache.clone(), &objects).unwrap();
        assert_eq!(built.children[0].1.oid, Some([9; 20]), "a/ from the cache");
        assert_eq!(built.children[1].1, fresh.children[1].1);
        assert_ne!(built.oid, fresh.oid, "the root names a/ by the cached id");
        assert!(!objects.has_loose(&[9; 20]), "nothing written for it");

        cache.invalidate(b"a/one");
        let rebuilt = build(&entries, cache.clone(), &objects).unwrap();
        assert_eq!(rebuilt, fresh, "a/ invalidated: built again");
        let fewer = [entry("a/one", 1), entry("b/three", 3), entry("top", 4)];
        let mut stale = fresh.clone();
        stale.children[0].1.oid = Some([9; 20]);
        stale.invalidate(b"top");
        let built = build(&fewer, stale, &objects).unwrap();
        assert_ne!(
            built.children[0].1.oid,
            Some([9; 20]),
            "a/ holds fewer entries"
        );
        assert_eq!(built.children[0].1.entries, 1);
    }
}

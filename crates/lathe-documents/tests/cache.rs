//! The conversion cache: keyed by content and normalised selection.

use lathe_documents::{Cache, Selection};

use crate::support::{fixture, read};

#[test]
fn entries_are_keyed_by_content_and_normalised_selection() {
    let dir = tempfile::tempdir().unwrap();
    let cache = Cache::new(dir.path().join("documents"));
    let bytes = fixture("pages.pdf");
    let document = read("pages.pdf", "1-2,4").unwrap();
    let selection: Selection = "1-2,4".parse().unwrap();
    assert_eq!(cache.get(&bytes, &selection), None);
    cache.put(&bytes, &selection, &document).unwrap();
    let same: Selection = "4, 2, 1".parse().unwrap();
    assert_eq!(cache.get(&bytes, &same), Some(document));
    assert_eq!(cache.get(&bytes, &"1-4".parse().unwrap()), None);
    let mut changed = bytes.clone();
    changed.push(b'\n');
    assert_eq!(
        cache.get(&changed, &same),
        None,
        "another file's bytes miss"
    );
}

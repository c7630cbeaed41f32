//! ARCHITECTURE.md's code map names every crate of the workspace: a member of `[workspace]
//! members` without a heading `` ### `package-name` `` in the "Code map" section fails here, by
//! name, so that a new crate arrives with its purpose and its invariants written down.

use std::path::Path;

/// The section of ARCHITECTURE.md that holds one heading per crate.
const CODE_MAP: &str = "## Code map";

#[test]
fn every_workspace_member_has_a_heading_in_the_code_map() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("lathe-testkit lives in crates/ under the workspace root");
    let members = workspace_members(root);
    assert!(!members.is_empty(), "no [workspace] members in Cargo.toml");

    let architecture = std::fs::read_to_string(root.join("ARCHITECTURE.md"))
        .expect("ARCHITECTURE.md at the workspace root");
    let headings = code_map_headings(&architecture);

    let missing: Vec<String> = members
        .iter()
        .map(|member| package_name(&root.join(member)))
        .filter(|name| !headings.contains(name))
        .collect();
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md's code map has no heading `### `NAME`` for these workspace members: \
         {missing:?} (say what each crate does and what it must never do)"
    );
}

/// The paths under `[workspace] members` of the root manifest.
fn workspace_members(root: &Path) -> Vec<String> {
    let manifest = read_manifest(&root.join("Cargo.toml"));
    manifest["workspace"]["members"]
        .as_array()
        .expect("[workspace] members is a list")
        .iter()
        .map(|member| member.as_str().expect("a member is a path").to_owned())
        .collect()
}

/// `[package] name` of the crate in `dir`.
fn package_name(dir: &Path) -> String {
    let manifest = read_manifest(&dir.join("Cargo.toml"));
    manifest["package"]["name"]
        .as_str()
        .unwrap_or_else(|| panic!("{}: no [package] name", dir.display()))
        .to_owned()
}

fn read_manifest(path: &Path) -> toml::Table {
    let text =
        std::fs::read_to_string(path).unwrap_or_else(|err| panic!("{}: {err}", path.display()));
    text.parse()
        .unwrap_or_else(|err| panic!("{}: {err}", path.display()))
}

/// The crate names of the `` ### `name` `` headings between "## Code map" and the next `## `
/// heading.
fn code_map_headings(architecture: &str) -> Vec<String> {
    architecture
        .lines()
        .skip_while(|line| line.trim_end() != CODE_MAP)
        .skip(1)
        .take_while(|line| !line.starts_with("## "))
        .filter_map(|line| {
            line.trim_end()
                .strip_prefix("### `")?
                .strip_suffix('`')
                .map(str::to_owned)
        })
        .collect()
}

#[test]
fn headings_are_read_from_the_code_map_only() {
    let text = "# A\n### `before`\n## Code map\n### `one`\n### `two` and more\ntext\n\
                ### `three`\n## Next\n### `after`\n";
    assert_eq!(code_map_headings(text), ["one", "three"]);
}

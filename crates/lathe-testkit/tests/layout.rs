//! Every crate's integration tests are modules of one binary, `tests/tests.rs`, and its
//! Cargo.toml says `autotests = false` (or each file would be a binary of its own again). A file
//! in `tests/` that is not declared in tests.rs then never compiles or runs, so each must be.

use std::path::Path;

#[test]
fn every_test_file_is_a_module_of_its_crates_test_binary() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let mut undeclared = Vec::new();
    for krate in std::fs::read_dir(crates).unwrap().flatten() {
        let tests = krate.path().join("tests");
        let Ok(files) = std::fs::read_dir(&tests) else {
            continue;
        };
        let manifest = std::fs::read_to_string(krate.path().join("Cargo.toml")).unwrap();
        assert!(
            manifest.contains("\nautotests = false\n"),
            "{}: without `autotests = false` every file in tests/ is a binary of its own",
            krate.path().display()
        );
        let harness = std::fs::read_to_string(tests.join("tests.rs")).unwrap_or_default();
        let declared: Vec<&str> = harness
            .lines()
            .filter_map(|line| line.trim().strip_prefix("mod ")?.strip_suffix(';'))
            .collect();
        for file in files.flatten() {
            let name = file.file_name().to_string_lossy().into_owned();
            if let Some(module) = name.strip_suffix(".rs")
                && module != "tests"
                && !declared.contains(&module)
            {
                undeclared.push(tests.join(&name).display().to_string());
            }
        }
    }
    assert!(
        undeclared.is_empty(),
        "not declared with `mod NAME;` in their tests/tests.rs, so never run: {undeclared:#?}"
    );
}

//! The languages `ast_edit` is built with: their names as the model gives them, the file
//! extensions that select them (ast-grep's own table, so a tree is searched the same way as by
//! its CLI), and the grammar behind each. Only these grammars are compiled in (each adds to the
//! binary); ast-grep's other languages exist in its enum but have no parser here, so nothing
//! outside this list ever reaches it.

use std::path::Path;

use ast_grep_language::SupportLang;

/// A language `ast_edit` can parse.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum Lang {
    Bash,
    C,
    Cpp,
    Go,
    Java,
    JavaScript,
    Python,
    Rust,
    Tsx,
    TypeScript,
}

impl Lang {
    /// Every language, in the order they are listed to the model.
    pub const ALL: [Lang; 10] = [
        Lang::Rust,
        Lang::Python,
        Lang::JavaScript,
        Lang::TypeScript,
        Lang::Tsx,
        Lang::Go,
        Lang::Java,
        Lang::C,
        Lang::Cpp,
        Lang::Bash,
    ];

    /// The language's position in [`Lang::ALL`].
    pub fn index(self) -> usize {
        Lang::ALL
            .iter()
            .position(|&lang| lang == self)
            .unwrap_or_default()
    }

    /// The name shown and accepted (`language: "rust"`).
    pub fn name(self) -> &'static str {
        match self {
            Lang::Bash => "bash",
            Lang::C => "c",
            Lang::Cpp => "cpp",
            Lang::Go => "go",
            Lang::Java => "java",
            Lang::JavaScript => "javascript",
            Lang::Python => "python",
            Lang::Rust => "rust",
            Lang::Tsx => "tsx",
            Lang::TypeScript => "typescript",
        }
    }

    /// The name people read in prose (`Rust`, `C++`).
    pub fn title(self) -> &'static str {
        match self {
            Lang::Bash => "Bash",
            Lang::C => "C",
            Lang::Cpp => "C++",
            Lang::Go => "Go",
            Lang::Java => "Java",
            Lang::JavaScript => "JavaScript",
            Lang::Python => "Python",
            Lang::Rust => "Rust",
            Lang::Tsx => "TSX",
            Lang::TypeScript => "TypeScript",
        }
    }

    /// Other spellings accepted for the language (ast-grep's aliases, ripgrep's type names).
    fn aliases(self) -> &'static [&'static str] {
        match self {
            Lang::Bash => &["sh", "shell", "zsh"],
            Lang::C => &["h"],
            Lang::Cpp => &["c++", "cc", "cxx", "hpp"],
            Lang::Go => &["golang"],
            Lang::Java => &[],
            Lang::JavaScript => &["js", "jsx", "mjs", "cjs", "node"],
            Lang::Python => &["py", "python3", "py3"],
            Lang::Rust => &["rs"],
            Lang::Tsx => &[],
            Lang::TypeScript => &["ts", "mts", "cts"],
        }
    }

    /// File extensions of the language (ast-grep's table for these languages).
    pub fn extensions(self) -> &'static [&'static str] {
        match self {
            Lang::Bash => &[
                "bash", "bats", "cgi", "command", "env", "fcgi", "ksh", "sh", "tmux", "tool", "zsh",
            ],
            Lang::C => &["c", "h"],
            Lang::Cpp => &["cc", "hpp", "cpp", "c++", "hh", "cxx", "cu", "ino"],
            Lang::Go => &["go"],
            Lang::Java => &["java"],
            Lang::JavaScript => &["cjs", "js", "mjs", "jsx"],
            Lang::Python => &["py", "py3", "pyi", "bzl", "bazel"],
            Lang::Rust => &["rs"],
            Lang::Tsx => &["tsx"],
            Lang::TypeScript => &["ts", "cts", "mts"],
        }
    }

    /// ast-grep's language.
    pub fn support(self) -> SupportLang {
        match self {
            Lang::Bash => SupportLang::Bash,
            Lang::C => SupportLang::C,
            Lang::Cpp => SupportLang::Cpp,
            Lang::Go => SupportLang::Go,
            Lang::Java => SupportLang::Java,
            Lang::JavaScript => SupportLang::JavaScript,
            Lang::Python => SupportLang::Python,
            Lang::Rust => SupportLang::Rust,
            Lang::Tsx => SupportLang::Tsx,
            Lang::TypeScript => SupportLang::TypeScript,
        }
    }

    /// The language a name or alias stands for, in any case, with or without a leading dot.
    pub fn parse(name: &str) -> Option<Lang> {
        let name = name.trim().trim_start_matches('.').to_ascii_lowercase();
        Lang::ALL
            .into_iter()
            .find(|lang| lang.name() == name || lang.aliases().contains(&name.as_str()))
    }

    /// The language of a file, by its extension.
    pub fn of_path(path: &Path) -> Option<Lang> {
        let ext = path.extension()?.to_str()?;
        Lang::of_extension(ext)
    }

    /// The language of a file extension (without the dot), as ast-grep guesses it.
    pub fn of_extension(ext: &str) -> Option<Lang> {
        Lang::ALL
            .into_iter()
            .find(|lang| lang.extensions().contains(&ext))
    }

    /// `rust, python, ...`: the names the model can give.
    pub fn list() -> String {
        Lang::ALL.map(Lang::name).join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_aliases_and_extensions() {
        assert_eq!(Lang::parse("Rust"), Some(Lang::Rust));
        assert_eq!(Lang::parse("c++"), Some(Lang::Cpp));
        assert_eq!(Lang::parse(".py"), Some(Lang::Python));
        assert_eq!(Lang::parse("golang"), Some(Lang::Go));
        assert_eq!(Lang::parse("ts"), Some(Lang::TypeScript));
        assert_eq!(Lang::parse("kotlin"), None);
        assert_eq!(Lang::of_path(Path::new("src/a.h")), Some(Lang::C));
        assert_eq!(Lang::of_path(Path::new("x.tsx")), Some(Lang::Tsx));
        assert_eq!(Lang::of_path(Path::new("Makefile")), None);
        for lang in Lang::ALL {
            assert_eq!(Lang::parse(lang.name()), Some(lang));
            for ext in lang.extensions() {
                // Every extension leads back to its language (no two claim one).
                assert_eq!(Lang::of_extension(ext), Some(lang), "{ext}");
            }
        }
    }

    #[test]
    fn every_language_has_its_grammar() {
        use ast_grep_language::LanguageExt;
        // A language without its grammar compiled in panics here (ast-grep's stub), so this
        // checks the Cargo features against the list.
        for lang in Lang::ALL {
            let root = lang.support().ast_grep("x");
            assert!(!root.root().kind().is_empty(), "{lang:?}");
        }
    }
}

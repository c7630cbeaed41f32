//! Package managers and build tools: installs and publishing are dangerous, builds normal.

use super::{Cmd, Verdict};
use crate::severity::Severity;
use crate::word::Word;

#[rustfmt::skip]
const BUILD_TOOLS: &[&str] = &[
    "make", "gmake", "cmake", "ninja", "meson", "just", "task", "rake", "gradle", "gradlew", "mvn",
    "mvnw", "ant", "sbt", "bazel", "bazelisk", "buck", "buck2", "tox", "nox", "pytest", "jest",
    "vitest", "mocha", "tsc", "eslint", "prettier", "black", "ruff", "mypy", "pyright", "rustc",
    "gcc", "g++", "cc", "c++", "clang", "clang++", "javac", "zig", "swift", "swiftc", "dotnet",
    "flutter", "dart", "mix", "stack", "cabal", "rustfmt", "gofmt", "goimports", "clang-format",
    "clang-tidy", "golangci-lint", "biome", "vite", "webpack", "esbuild", "rollup", "turbo", "nx",
    "lerna", "xcodebuild", "ctest", "scons", "premake5", "xmake", "bear", "ccache", "sccache",
    "elm", "ghc", "ocaml", "dune", "opam", "nim", "crystal", "v", "gleam", "go-task", "maturin",
    "wasm-pack", "trunk", "tauri", "cross", "rebar3", "lein", "clojure", "clj", "kotlinc",
    "scalac", "protoc", "buf", "sqlx", "diesel", "alembic", "prisma", "terraform-docs", "hugo",
    "jekyll", "mkdocs", "sphinx-build", "ctags", "doxygen", "rustdoc",
];

pub(super) fn classify(cmd: &Cmd<'_>) -> Option<Verdict> {
    let p = cmd.program;
    let base = p.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    let v = match base {
        "npm" | "pnpm" | "yarn" | "cnpm" => js(cmd),
        "npx" | "pnpx" | "bunx" | "uvx" | "dnx" | "jbang" | "jbang.cmd" | "cs" | "coursier"
        | "pkgx" => Verdict::dangerous(format!("{p} downloads and runs a package")),
        "nix" => nix(cmd),
        "pip" => pip(cmd),
        "pipx" => match sub(cmd) {
            Some("list" | "environment") | None => Verdict::safe("pipx list only reads"),
            _ => Verdict::dangerous("pipx installs or runs packages from the network"),
        },
        "uv" => uv(cmd),
        "poetry" | "pdm" | "pipenv" | "hatch" | "rye" => match sub(cmd) {
            Some("add" | "remove" | "install" | "update" | "sync" | "upgrade" | "self") => {
                Verdict::dangerous(format!(
                    "{p} installs packages, which may run their setup code"
                ))
            }
            Some("publish" | "upload") => Verdict::dangerous(format!("{p} publishes a package")),
            Some("show" | "check" | "version" | "--version" | "list" | "graph" | "info") | None => {
                Verdict::safe(format!("{p} only shows project information"))
            }
            _ => Verdict::normal(format!("{p} works on the project in the workspace")),
        },
        "cargo" => cargo(cmd),
        "rustup" => match sub(cmd) {
            Some("show" | "which" | "--version" | "-V" | "help" | "doc") | None => {
                Verdict::safe("rustup only shows toolchains")
            }
            Some("toolchain" | "target" | "component") if cmd.values().any(|v| v == "list") => {
                Verdict::safe("rustup ... list only reads")
            }
            Some(s) => Verdict::dangerous(format!(
                "rustup {s} installs or changes toolchains outside the workspace"
            )),
        },
        "go" => match sub(cmd) {
            Some("install" | "get") => {
                Verdict::dangerous("go install/get downloads and installs packages")
            }
            Some("run" | "tool")
                if cmd
                    .operands(&[
                        "-C", "-exec", "-o", "-p", "-tags", "-ldflags", "-gcflags", "-mod",
                        "-modfile",
                    ])
                    .iter()
                    .skip(1)
                    .take(1)
                    .any(|w| w.known().is_none_or(|v| v.contains('@'))) =>
            {
                Verdict::dangerous("go run pkg@version downloads a module and runs it (like npx)")
            }
            Some("env") if cmd.has(&["-w", "-u"]) => {
                Verdict::dangerous("go env -w changes settings outside the workspace")
            }
            Some("version" | "env" | "help" | "doc") => {
                Verdict::safe("go version/env/doc only reads")
            }
            _ => Verdict::normal("go builds, tests or runs code in the workspace"),
        },
        "gem" => match sub(cmd) {
            Some("install" | "uninstall" | "update" | "push" | "yank" | "owner" | "signin") => {
                Verdict::dangerous("gem installs or publishes packages")
            }
            Some("exec") => Verdict::dangerous("gem exec downloads a gem and runs it (like npx)"),
            Some(
                "list" | "search" | "info" | "env" | "contents" | "which" | "--version" | "help"
                | "specification",
            )
            | None => Verdict::safe("gem only shows packages"),
            _ => Verdict::normal("gem works on packages"),
        },
        "bundle" | "bundler" => match sub(cmd) {
            None | Some("install" | "update" | "add" | "remove" | "package" | "binstubs") => {
                Verdict::dangerous("bundle installs gems, which may run their setup code")
            }
            Some(
                "check" | "list" | "show" | "outdated" | "info" | "--version" | "version" | "help",
            ) => Verdict::safe("bundle only shows gems"),
            _ => Verdict::normal("bundle works on the project"),
        },
        "composer" => match sub(cmd) {
            Some(
                "install" | "require" | "update" | "remove" | "create-project" | "global"
                | "upgrade",
            ) => Verdict::dangerous("composer installs packages, which may run scripts"),
            Some(
                "show" | "info" | "validate" | "outdated" | "licenses" | "depends" | "why"
                | "why-not" | "--version",
            )
            | None => Verdict::safe("composer only shows packages"),
            _ => Verdict::normal("composer runs project scripts"),
        },
        "apt" | "apt-get" | "aptitude" | "dnf" | "yum" | "zypper" | "apk" | "brew" | "port"
        | "snap" | "flatpak" | "pkg" | "xbps-install" | "opkg" | "emerge" | "choco" | "winget"
        | "scoop" | "conda" | "mamba" | "micromamba" | "nix-env" | "asdf" | "mise" | "sdk"
        | "nvm" | "pyenv" | "rbenv" | "volta" | "fnm" | "port-install" | "guix" => {
            system_packages(cmd)
        }
        "apt-cache" | "dpkg-query" | "apt-file" | "apt-mark"
            if !cmd.values().any(|v| v == "hold" || v == "unhold") =>
        {
            Verdict::safe(format!("{p} only queries packages"))
        }
        "pacman" | "yay" | "paru" => {
            let query = cmd.values().next().is_some_and(|v| {
                v.starts_with("-Q")
                    || v.starts_with("-Ss")
                    || v.starts_with("-Si")
                    || v.starts_with("-F")
                    || v == "--version"
                    || v == "-V"
            });
            match query {
                true => Verdict::safe(format!("{p} only queries packages")),
                false => Verdict::dangerous(format!("{p} installs or removes system packages")),
            }
        }
        "dpkg" => {
            #[rustfmt::skip]
            let query = [
                "-l", "-L", "-s", "-S", "-c", "-I", "-p", "--list", "--listfiles", "--status",
                "--search", "--contents", "--info", "--print-architecture", "--get-selections",
                "--print-avail", "--version",
            ];
            match cmd.has(&query) {
                true => Verdict::safe("dpkg only queries packages"),
                false => Verdict::dangerous("dpkg installs or removes system packages"),
            }
        }
        "rpm" => match cmd.values().next().is_some_and(|v| {
            v.starts_with("-q") || v == "--query" || v.starts_with("-V") || v == "--version"
        }) {
            true => Verdict::safe("rpm only queries packages"),
            false => Verdict::dangerous("rpm installs or removes system packages"),
        },
        "twine" => match sub(cmd) {
            Some("upload" | "register") => Verdict::dangerous("twine publishes a package"),
            _ => Verdict::normal("twine checks packages"),
        },
        _ if BUILD_TOOLS.contains(&p) => build(cmd),
        _ => return None,
    };
    Some(v)
}

fn sub<'a>(cmd: &'a Cmd<'_>) -> Option<&'a str> {
    cmd.first_operand().map(|(_, v)| v)
}

fn global(cmd: &Cmd<'_>, mut v: Verdict) -> Verdict {
    if cmd.has(&["-g", "--global", "--location=global"]) {
        v.raise(
            Severity::Dangerous,
            "installs globally, outside the workspace",
        );
    }
    v
}

fn js(cmd: &Cmd<'_>) -> Verdict {
    let p = cmd.program;
    let s = sub(cmd);
    let v = match s {
        None if p == "yarn" => {
            Verdict::dangerous("yarn installs packages, which may run install scripts")
        }
        None => Verdict::safe(format!("{p} without a command prints help")),
        Some(
            "install" | "i" | "in" | "ins" | "inst" | "insta" | "instal" | "isnt" | "isnta"
            | "isntal" | "add" | "ci" | "clean-install" | "install-test" | "it" | "install-ci-test"
            | "cit" | "update" | "up" | "upgrade" | "udpate" | "uninstall" | "un" | "unlink"
            | "remove" | "rm" | "r" | "link" | "ln" | "dedupe" | "ddp" | "prune" | "rebuild" | "rb"
            | "import" | "fetch" | "patch-commit" | "outdated-install",
        ) => Verdict::dangerous(format!(
            "{p} {} installs or changes packages, which may run install scripts",
            s.unwrap_or_default()
        )),
        Some("exec" | "x" | "dlx" | "create") => Verdict::dangerous(format!(
            "{p} {} downloads and runs a package",
            s.unwrap_or_default()
        )),
        Some("init") if cmd.operands(&[]).len() > 1 => Verdict::dangerous(format!(
            "{p} init <initializer> downloads and runs a package"
        )),
        Some("init") => Verdict::normal(format!("{p} init writes package.json")),
        Some(
            "publish" | "unpublish" | "deprecate" | "dist-tag" | "owner" | "access" | "adduser"
            | "login" | "logout" | "token" | "team" | "org" | "star" | "unstar" | "hook"
            | "profile",
        ) => Verdict::dangerous(format!(
            "{p} {} publishes or changes things on the registry",
            s.unwrap_or_default()
        )),
        Some(
            "ls" | "list" | "la" | "ll" | "why" | "explain" | "help" | "root" | "prefix" | "bin"
            | "-v" | "--version" | "-h" | "--help" | "licenses",
        ) => Verdict::safe(format!(
            "{p} {} only shows information",
            s.unwrap_or_default()
        )),
        Some("version") if cmd.operands(&[]).len() == 1 => {
            Verdict::safe(format!("{p} version only prints versions"))
        }
        Some("config") => match cmd.values().nth(1) {
            Some("get" | "list" | "ls") => Verdict::safe(format!("{p} config get/list only reads")),
            _ => Verdict::dangerous(format!(
                "{p} config changes settings in your home directory"
            )),
        },
        Some("audit") if cmd.values().any(|v| v == "fix") => {
            Verdict::dangerous(format!("{p} audit fix installs packages"))
        }
        Some(
            "view" | "info" | "show" | "v" | "outdated" | "search" | "s" | "se" | "audit"
            | "doctor" | "ping" | "whoami" | "repo" | "docs" | "bugs",
        ) => Verdict::normal(format!(
            "{p} {} queries the package registry",
            s.unwrap_or_default()
        )),
        Some(script) => Verdict::normal(format!("{p} {script} runs a script from package.json")),
    };
    global(cmd, v)
}

/// pip and `python -m pip`.
pub(super) fn pip(cmd: &Cmd<'_>) -> Verdict {
    match sub(cmd) {
        Some("install" | "uninstall" | "download" | "wheel") => global(
            cmd,
            Verdict::dangerous(format!(
                "pip {} installs packages, which may run their setup code",
                sub(cmd).unwrap_or_default()
            )),
        ),
        Some(
            "list" | "show" | "freeze" | "check" | "help" | "debug" | "inspect" | "index" | "hash"
            | "search",
        )
        | None => Verdict::safe("pip only shows packages"),
        Some("config") if matches!(cmd.values().nth(1), Some("list" | "get" | "debug")) => {
            Verdict::safe("pip config only reads")
        }
        Some(s) if s.starts_with('-') => Verdict::safe("pip only prints information"),
        Some("config") => Verdict::dangerous("pip config changes settings outside the workspace"),
        Some(s) => Verdict::normal(format!("pip {s} changes pip's state")),
    }
}

fn uv(cmd: &Cmd<'_>) -> Verdict {
    let words: Vec<&str> = cmd
        .values()
        .filter(|v| !v.starts_with('-'))
        .take(2)
        .collect();
    match words.as_slice() {
        ["add" | "remove" | "sync" | "self", ..]
        | ["pip", "install" | "sync" | "uninstall"]
        | ["python", "install" | "uninstall"] => {
            Verdict::dangerous("uv installs packages or interpreters")
        }
        ["tool", "install" | "run" | "upgrade" | "uninstall"] => {
            Verdict::dangerous("uv tool installs or runs packages from the network")
        }
        ["publish", ..] => Verdict::dangerous("uv publish publishes a package"),
        ["tree" | "version", ..]
        | ["pip", "list" | "show" | "freeze" | "check" | "tree"]
        | ["python", "list" | "find" | "dir"]
        | [] => Verdict::safe("uv only shows information"),
        [s, ..] => Verdict::normal(format!("uv {s} works on the project in the workspace")),
    }
}

fn cargo(cmd: &Cmd<'_>) -> Verdict {
    let args: Vec<&Word> = cmd
        .args
        .iter()
        .filter(|w| !w.known().is_some_and(|v| v.starts_with('+')))
        .collect();
    let first = args.iter().find_map(|w| {
        w.known().filter(|v| {
            !v.starts_with('-') || matches!(*v, "-V" | "--version" | "--list" | "-h" | "--help")
        })
    });
    match first {
        None => Verdict::safe("cargo without a command prints help"),
        Some("install" | "uninstall" | "binstall" | "quickinstall") => {
            Verdict::dangerous("cargo install installs programs outside the workspace")
        }
        Some("publish" | "yank" | "owner" | "login" | "logout") => {
            Verdict::dangerous("cargo publishes to or changes the registry")
        }
        Some("add") => Verdict::dangerous("cargo add adds a dependency (a package install)"),
        Some(
            "-V" | "--version" | "version" | "--list" | "-h" | "--help" | "help" | "locate-project"
            | "verify-project" | "read-manifest" | "pkgid",
        ) => Verdict::safe("cargo only prints information"),
        Some("search" | "info") => Verdict::normal("cargo queries the registry"),
        Some(s) => Verdict::normal(format!(
            "cargo {s} builds, tests or changes the project in the workspace"
        )),
    }
}

fn system_packages(cmd: &Cmd<'_>) -> Verdict {
    let p = cmd.program;
    #[rustfmt::skip]
    const QUERIES: &[&str] = &[
        "list", "search", "show", "info", "policy", "madison", "depends", "rdepends", "--version",
        "-v", "-V", "version", "help", "--help", "doctor", "config", "outdated", "deps", "leaves",
        "desc", "home", "uses", "which", "current", "ls", "ls-remote", "versions", "where",
        "changelog", "showpkg", "stats", "provides", "repolist", "whatprovides", "env", "--prefix",
        "shellenv", "commands",
    ];
    match sub(cmd) {
        None => Verdict::safe(format!("{p} without a command prints help")),
        Some(s) if QUERIES.contains(&s) => Verdict::safe(format!("{p} {s} only queries packages")),
        Some(s) => Verdict::dangerous(format!(
            "{p} {s} installs, removes or updates packages on the system"
        )),
    }
}

/// `nix run`/`nix shell` fetch or build packages and run them; `nix develop -c` runs a
/// command in the workspace's own environment.
fn nix(cmd: &Cmd<'_>) -> Verdict {
    let first = sub(cmd);
    let mut v = match first {
        Some("run" | "shell") => Verdict::dangerous(format!(
            "nix {} fetches a package and runs it (like npx)",
            first.unwrap_or_default()
        )),
        Some("profile" | "upgrade-nix" | "copy" | "store" | "registry") => {
            Verdict::dangerous("nix changes installed packages or the store outside the workspace")
        }
        Some(
            "eval" | "search" | "show-config" | "config" | "path-info" | "why-depends" | "log"
            | "flake" | "--version",
        )
        | None => Verdict::normal("nix evaluates or shows packages"),
        Some(s) => Verdict::normal(format!("nix {s} builds in the workspace")),
    };
    for c in cmd.option_values(&["-c"], &["--command"]) {
        let at = cmd.args.iter().position(|w| w.known() == c.known());
        let argv: Vec<Word> = at.map(|i| cmd.args[i..].to_vec()).unwrap_or_default();
        if !argv.is_empty() {
            v.inner.push(super::Inner::Argv {
                argv,
                per_item: None,
            });
        }
    }
    v
}

fn build(cmd: &Cmd<'_>) -> Verdict {
    let p = cmd.program;
    if cmd.args.len() == 1
        && matches!(
            cmd.arg(0),
            Some("--version" | "-v" | "-V" | "version" | "--help" | "-h")
        )
    {
        return Verdict::safe(format!("{p} only prints its version or help"));
    }
    let values: Vec<&str> = cmd.values().collect();
    let publishes = match p {
        "mvn" | "mvnw" => values
            .iter()
            .any(|v| *v == "deploy" || v.starts_with("release:")),
        "gradle" | "gradlew" => values
            .iter()
            .any(|v| v.starts_with("publish") || *v == "uploadArchives"),
        "dotnet" => values.windows(2).any(|w| {
            matches!(
                w,
                ["nuget", "push"] | ["add", "package"] | ["tool", "install"]
            )
        }),
        "opam" => values
            .first()
            .is_some_and(|v| matches!(*v, "install" | "upgrade" | "pin")),
        _ => false,
    };
    let mut v = match publishes {
        true => Verdict::dangerous(format!("{p} publishes or installs packages")),
        false => Verdict::normal(format!("{p} builds, checks or tests code in the workspace")),
    };
    v.writes = super::output_options(cmd);
    v
}

#[cfg(test)]
mod tests {
    use crate::classify::test_support::expect;
    use crate::severity::Severity::*;

    #[test]
    fn issue_12_2_runners_that_download_are_dangerous() {
        expect(&[
            ("go run example.com/x/cmd@latest", Dangerous),
            (
                "go run -mod=mod golang.org/x/tools/cmd/stringer@v0.1.0 -type=T",
                Dangerous,
            ),
            ("go run .", Normal),
            ("go run ./cmd/server", Normal),
            ("go run main.go", Normal),
            ("go test ./...", Normal),
            ("deno run -A https://example.com/x.ts", Dangerous),
            ("deno run npm:cowsay", Dangerous),
            ("deno run main.ts", Normal),
            ("bun create vite app", Dangerous),
            ("cargo binstall ripgrep", Dangerous),
            ("gem exec rails new x", Dangerous),
            ("dnx dotnet-ef", Dangerous),
            ("jbang https://x/hello.java", Dangerous),
            ("nix run nixpkgs#hello", Dangerous),
            ("nix shell nixpkgs#jq -c jq --version", Dangerous),
            ("nix develop -c sh -c 'rm -rf ~'", Critical),
            ("nix build", Normal),
            ("uv run --with requests script.py", Dangerous),
            ("uv run pytest", Normal),
            ("npx cowsay", Dangerous),
            ("pipx run black .", Dangerous),
            ("docker build -t x .", Dangerous),
            ("docker tag a b", Normal),
            (
                "docker run --mount type=bind,source=/,target=/h alpine",
                Critical,
            ),
            (
                "curl --unix-socket /var/run/docker.sock http://x/containers/json",
                Critical,
            ),
            ("socat - UNIX-CONNECT:/var/run/docker.sock", Critical),
        ]);
    }
}

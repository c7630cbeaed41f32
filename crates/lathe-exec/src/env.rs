//! The environment a command runs in: the parent's, minus secrets, plus settings that keep
//! programs from waiting for a terminal or a person.

use std::ffi::{OsStr, OsString};

/// Set for every command: no pager, no colour, no prompts, no interactive installers.
pub const AGENT_ENV: [(&str, &str); 6] = [
    ("TERM", "dumb"),
    ("PAGER", "cat"),
    ("GIT_PAGER", "cat"),
    ("GIT_TERMINAL_PROMPT", "0"),
    ("DEBIAN_FRONTEND", "noninteractive"),
    ("NO_COLOR", "1"),
];

/// Name fragments that mark a variable as secret (compared case-insensitively).
const SECRET_MARKERS: [&str; 7] = [
    "KEY",
    "SECRET",
    "TOKEN",
    "PASSWORD",
    "PASSWD",
    "PASSPHRASE",
    "CREDENTIAL",
];

/// Whole words of a name (split at `_`, `-` and `.`) that mark it as secret: `*_AUTH`,
/// `*_AUTH_*`, `AUTH_*` (`NPM_CONFIG__AUTH`, `PIP_AUTH_...`), `*_CREDS`, `MYSQL_PWD`.
/// `AUTHOR` and `XAUTHORITY` are other words.
const SECRET_WORDS: [&str; 5] = ["AUTH", "AUTHTOKEN", "OAUTH", "CREDS", "PWD"];

/// Query parameters whose value is a secret, in a URL inside a variable's value (compared
/// case-insensitively, on the parameter's words as for [`SECRET_WORDS`], or whole).
const SECRET_QUERY_WORDS: [&str; 10] = [
    "TOKEN",
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "PWD",
    "APIKEY",
    "KEY",
    "SIG",
    "SIGNATURE",
    "CREDENTIAL",
];

/// Whether a variable's name looks like it holds a secret, any case: it contains `KEY`,
/// `SECRET`, `TOKEN`, `PASSWORD`, `PASSWD`, `PASSPHRASE` or `CREDENTIAL`, or has the word `AUTH`,
/// `AUTHTOKEN`, `OAUTH`, `CREDS` or `PWD` (`GITHUB_AUTH`, `NPM_CONFIG__AUTH`, `MYSQL_PWD`).
/// `PWD` and `OLDPWD` themselves (directories) and socket paths (`SSH_AUTH_SOCK`, `*_SOCK`) are
/// not secrets.
pub fn is_secret_name(name: &OsStr) -> bool {
    let upper = name.to_string_lossy().to_ascii_uppercase();
    if upper == "PWD" || upper == "OLDPWD" || upper.ends_with("_SOCK") {
        return false;
    }
    SECRET_MARKERS.iter().any(|marker| upper.contains(marker))
        || words(&upper).any(|word| SECRET_WORDS.contains(&word))
}

/// Whether a variable's value carries a credential whatever its name: a URL with a password in
/// its user information (`postgres://app:hunter2@db/app`, `https://user:tok@proxy:3128`), a URL
/// with a secret query parameter (`?access_token=...`, `&api_key=...`, `sig=`), or an HTTP
/// authorisation value (`Bearer ...`, `Basic ...`). A URL with a user name only
/// (`ssh://git@host/repo`) or an empty password is not a secret.
pub fn is_secret_value(value: &OsStr) -> bool {
    let value = value.to_string_lossy();
    let trimmed = value.trim_start();
    let lower = trimmed.to_ascii_lowercase();
    if ["bearer ", "basic "]
        .iter()
        .any(|scheme| lower.starts_with(scheme) && lower.len() > scheme.len())
        || lower.contains("authorization:")
    {
        return true;
    }
    let mut rest = value.as_ref();
    while let Some(at) = rest.find("://") {
        rest = &rest[at + 3..];
        let end = rest
            .find(|c: char| c.is_whitespace() || matches!(c, ',' | ';' | '"' | '\'' | '<' | '>'))
            .unwrap_or(rest.len());
        if url_has_secret(&rest[..end]) {
            return true;
        }
        rest = &rest[end..];
    }
    false
}

/// `url` is what follows `scheme://`, up to the end of the URL.
fn url_has_secret(url: &str) -> bool {
    let authority_end = url.find(['/', '?', '#']).unwrap_or(url.len());
    let authority = &url[..authority_end];
    if let Some((userinfo, _host)) = authority.rsplit_once('@')
        && let Some((_user, password)) = userinfo.split_once(':')
        && !password.is_empty()
    {
        return true;
    }
    let Some(query_start) = url.find('?') else {
        return false;
    };
    let query = &url[query_start + 1..];
    let query = query.split('#').next().unwrap_or_default();
    query.split(['&', ';']).any(|pair| {
        let Some((name, value)) = pair.split_once('=') else {
            return false;
        };
        let name = name.to_ascii_uppercase();
        !value.is_empty()
            && (SECRET_QUERY_WORDS.contains(&name.as_str())
                || words(&name).any(|word| SECRET_QUERY_WORDS.contains(&word))
                || name.ends_with("TOKEN")
                || name.ends_with("APIKEY"))
    })
}

fn words(upper: &str) -> impl Iterator<Item = &str> {
    upper.split(['_', '-', '.']).filter(|word| !word.is_empty())
}

/// Variables that tell a program how to reach a daemon that acts for the user outside the
/// sandbox, removed from sandboxed commands' environment (a name ending in `*` is a prefix):
///
/// - terminal multiplexers, whose servers run commands on request (`tmux run-shell`,
///   `screen -X stuff`, `zellij run`): `TMUX*`, `STY`, `ZELLIJ*`;
/// - terminal emulators' and editors' remote control, which can open windows running commands or
///   type into them: `KITTY_LISTEN_ON`, `WEZTERM_UNIX_SOCKET`, `ALACRITTY_SOCKET`, `NVIM`,
///   `NVIM_LISTEN_ADDRESS`, `EMACS_SOCKET_NAME`, `VSCODE_IPC_HOOK*`, `VSCODE_GIT_IPC_HANDLE`;
/// - desktop sessions: `DISPLAY`, `XAUTHORITY`, `WAYLAND_DISPLAY`, `WAYLAND_SOCKET` (an X11
///   client can type into every other window), `DBUS_SESSION_BUS_ADDRESS`,
///   `DBUS_SYSTEM_BUS_ADDRESS` (`systemd-run --user`, `dbus-send`), `XDG_RUNTIME_DIR` (where
///   the session bus, `systemctl --user` and many user daemons keep their sockets);
/// - credential agents, which sign or log in as the user: `SSH_AUTH_SOCK`, `SSH_AGENT_PID`,
///   `GPG_AGENT_INFO`;
/// - container engines, which start containers as root outside the sandbox: `DOCKER_HOST`,
///   `DOCKER_CONTEXT`, `CONTAINER_HOST`, `CONTAINERD_ADDRESS`, `BUILDKIT_HOST`.
///
/// Removing a variable stops the program finding its daemon by it; a command that names the
/// socket path itself still reaches it where the sandbox allows the path (see the README).
pub const DAEMON_CONTROL_VARS: [&str; 27] = [
    "TMUX*",
    "STY",
    "ZELLIJ*",
    "KITTY_LISTEN_ON",
    "WEZTERM_UNIX_SOCKET",
    "ALACRITTY_SOCKET",
    "NVIM",
    "NVIM_LISTEN_ADDRESS",
    "EMACS_SOCKET_NAME",
    "VSCODE_IPC_HOOK*",
    "VSCODE_GIT_IPC_HANDLE",
    "DISPLAY",
    "XAUTHORITY",
    "WAYLAND_DISPLAY",
    "WAYLAND_SOCKET",
    "DBUS_SESSION_BUS_ADDRESS",
    "DBUS_SYSTEM_BUS_ADDRESS",
    "XDG_RUNTIME_DIR",
    "SSH_AUTH_SOCK",
    "SSH_AGENT_PID",
    "GPG_AGENT_INFO",
    "DOCKER_HOST",
    "DOCKER_CONTEXT",
    "CONTAINER_HOST",
    "CONTAINERD_ADDRESS",
    "BUILDKIT_HOST",
    "PODMAN_HOST*",
];

/// Whether `name` is one of [`DAEMON_CONTROL_VARS`] (exact, case-sensitive as the programs
/// read them; a `*` entry matches its prefix).
pub fn is_daemon_control_name(name: &OsStr) -> bool {
    let Some(name) = name.to_str() else {
        return false;
    };
    DAEMON_CONTROL_VARS
        .iter()
        .any(|entry| match entry.strip_suffix('*') {
            Some(prefix) => name.starts_with(prefix),
            None => name == *entry,
        })
}

/// The environment for a command: `base` without secrets (by name, [`is_secret_name`], or by
/// value, [`is_secret_value`]) unless `keep` names them exactly, with [`AGENT_ENV`] set over it.
pub fn prepare_env(
    base: impl IntoIterator<Item = (OsString, OsString)>,
    keep: &[String],
) -> Vec<(OsString, OsString)> {
    let mut env: Vec<(OsString, OsString)> = base
        .into_iter()
        .filter(|(name, value)| {
            !(is_secret_name(name) || is_secret_value(value))
                || keep.iter().any(|kept| OsStr::new(kept) == name)
        })
        .filter(|(name, _)| !AGENT_ENV.iter().any(|(fixed, _)| OsStr::new(fixed) == name))
        .collect();
    env.extend(
        AGENT_ENV
            .iter()
            .map(|(name, value)| (OsString::from(name), OsString::from(value))),
    );
    env
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(list: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
        list.iter()
            .map(|(k, v)| (OsString::from(k), OsString::from(v)))
            .collect()
    }

    #[test]
    fn secrets_are_removed_unless_kept_and_agent_settings_win() {
        let base = pairs(&[
            ("PATH", "/usr/bin"),
            ("OPENAI_API_KEY", "sk-1"),
            ("aws_secret_access_key", "x"),
            ("GITHUB_TOKEN", "t"),
            ("DB_PASSWORD", "p"),
            ("MY_Secret", "s"),
            ("KEEP_ME_TOKEN", "kept"),
            ("TERM", "xterm-256color"),
            ("PAGER", "less"),
            ("HOME", "/root"),
        ]);
        let env = prepare_env(base, &["KEEP_ME_TOKEN".to_owned()]);
        let get = |name: &str| {
            env.iter()
                .filter(|(k, _)| k == name)
                .map(|(_, v)| v.to_string_lossy().into_owned())
                .collect::<Vec<_>>()
        };
        for gone in [
            "OPENAI_API_KEY",
            "aws_secret_access_key",
            "GITHUB_TOKEN",
            "DB_PASSWORD",
            "MY_Secret",
        ] {
            assert!(get(gone).is_empty(), "{gone} should be removed");
        }
        assert_eq!(get("KEEP_ME_TOKEN"), ["kept"]);
        assert_eq!(get("PATH"), ["/usr/bin"]);
        assert_eq!(get("HOME"), ["/root"]);
        assert_eq!(get("TERM"), ["dumb"]);
        assert_eq!(get("PAGER"), ["cat"]);
        for (name, value) in AGENT_ENV {
            assert_eq!(get(name), [value], "{name}");
        }
    }

    #[test]
    fn credential_names_are_secret_and_look_alikes_are_not() {
        for name in [
            "NPM_CONFIG__AUTH",
            "npm_config__auth",
            "GITHUB_AUTH",
            "AUTH_HEADER",
            "PIP_AUTH_USER",
            "NGROK_AUTHTOKEN",
            "GOOGLE_APPLICATION_CREDENTIALS",
            "AZURE_CREDENTIALS",
            "DOCKER_CREDS",
            "MYSQL_PWD",
            "SMTP_PASSWD",
            "GPG_PASSPHRASE",
            "SLACK_OAUTH",
        ] {
            assert!(is_secret_name(OsStr::new(name)), "{name} should be secret");
        }
        for name in [
            "GIT_AUTHOR_NAME",
            "GIT_AUTHOR_EMAIL",
            "AUTHOR",
            "XAUTHORITY",
            "SSH_AUTH_SOCK",
            "PWD",
            "OLDPWD",
            "PATH",
            "HOME",
            "DATABASE_URL",
            "OAUTHLIB_INSECURE_TRANSPORT_X",
        ] {
            assert!(
                !is_secret_name(OsStr::new(name)),
                "{name} should not be secret"
            );
        }
    }

    #[test]
    fn credential_values_are_secret_and_plain_urls_are_not() {
        for value in [
            "postgres://app:hunter2@db.internal:5432/app",
            "mysql://root:pw@localhost/db?sslmode=disable",
            "http://user:p%40ss@proxy:3128",
            "redis://:onlypassword@cache:6379/0",
            "https://example.com/feed?access_token=abc123",
            "https://example.com/x?a=1&token=t0k",
            "https://maps.example/api?key=AIzaSyExample",
            "https://acct.blob.example/c/b?sv=2022&sig=abcd%3D",
            "https://api.example/v1?client_secret=s&client_id=i",
            "https://x.example/?API_KEY=k",
            "mirror1 https://u:p@mirror.example/simple",
            "Bearer eyJhbGciOi",
            "basic dXNlcjpwYXNz",
            "Authorization: token ghp_x",
        ] {
            assert!(
                is_secret_value(OsStr::new(value)),
                "{value} should be secret"
            );
        }
        for value in [
            "ssh://git@github.com/org/repo.git",
            "postgres://app@db.internal/app",
            "https://user:@host/x",
            "https://example.com/search?q=token&page=2",
            "https://example.com/x?token=",
            "https://example.com/path/token=abc",
            "/usr/local/bin:/usr/bin",
            "bearer",
            "en_US.UTF-8",
            "https://crates.io/api/v1/crates?keyword=sandbox",
        ] {
            assert!(
                !is_secret_value(OsStr::new(value)),
                "{value} should not be secret"
            );
        }
        let env = prepare_env(
            pairs(&[
                ("DATABASE_URL", "postgres://app:hunter2@db/app"),
                ("REPO", "ssh://git@example.invalid/r"),
            ]),
            &[],
        );
        assert!(env.iter().all(|(k, _)| k != "DATABASE_URL"));
        assert!(env.iter().any(|(k, _)| k == "REPO"));
        let kept = prepare_env(
            pairs(&[("DATABASE_URL", "postgres://app:hunter2@db/app")]),
            &["DATABASE_URL".to_owned()],
        );
        assert!(kept.iter().any(|(k, _)| k == "DATABASE_URL"));
    }

    #[test]
    fn daemon_control_names() {
        for name in [
            "TMUX",
            "TMUX_PANE",
            "STY",
            "ZELLIJ",
            "ZELLIJ_SESSION_NAME",
            "DBUS_SESSION_BUS_ADDRESS",
            "DOCKER_HOST",
            "SSH_AUTH_SOCK",
            "SSH_AGENT_PID",
            "GPG_AGENT_INFO",
            "DISPLAY",
            "XAUTHORITY",
            "WAYLAND_DISPLAY",
            "KITTY_LISTEN_ON",
            "WEZTERM_UNIX_SOCKET",
            "NVIM",
            "NVIM_LISTEN_ADDRESS",
            "VSCODE_IPC_HOOK",
            "VSCODE_IPC_HOOK_CLI",
            "XDG_RUNTIME_DIR",
        ] {
            assert!(is_daemon_control_name(OsStr::new(name)), "{name}");
        }
        for name in [
            "PATH",
            "HOME",
            "TERM",
            "SSH_CONNECTION",
            "DOCKER",
            "display",
            "TMPDIR",
        ] {
            assert!(!is_daemon_control_name(OsStr::new(name)), "{name}");
        }
    }
}

//! The network and other machines: downloads, connections, containers, clusters, clouds.

use super::{Cmd, Verdict};
use crate::severity::Severity;
use crate::word::Word;

pub(super) fn classify(cmd: &Cmd<'_>) -> Option<Verdict> {
    let p = cmd.program;
    let v = match p {
        "curl" | "curlie" => curl(cmd),
        "wget" | "wget2" => wget(cmd),
        "aria2c" | "axel" | "http" | "https" | "xh" | "xhs" | "fetch" | "lwp-download"
        | "lwp-request" | "httpie" | "lynx" | "w3m" | "links" | "elinks" | "yt-dlp"
        | "youtube-dl" => {
            let mut v = Verdict::dangerous(format!("{p} downloads from the network"));
            v.downloads = true;
            v
        }
        "nc" | "ncat" | "netcat" | "socat" | "telnet" | "ftp" | "tftp" | "nmap" | "masscan"
        | "ngrok" | "cloudflared" | "localtunnel" | "lt" | "bore" | "frpc" | "chisel" => {
            let mut v = Verdict::dangerous(format!("{p} opens network connections"));
            v.downloads = true;
            let exec = cmd.has(&["-e", "-c", "--exec", "--sh-exec", "--lua-exec"])
                || cmd.values().any(|x| {
                    x.to_ascii_uppercase().contains("EXEC:")
                        || x.to_ascii_uppercase().contains("SYSTEM:")
                });
            if exec {
                v.raise(
                    Severity::Critical,
                    format!("{p} connects a shell to the network (a remote shell)"),
                );
            }
            if cmd.values().any(|x| {
                daemon_socket(
                    x.trim_start_matches("UNIX-CONNECT:")
                        .trim_start_matches("UNIX-CLIENT:"),
                )
            }) {
                v.raise(
                    Severity::Critical,
                    format!(
                        "{p} talks to the container daemon's socket, which runs anything as root"
                    ),
                );
            }
            v
        }
        "ping" | "ping6" | "traceroute" | "traceroute6" | "tracepath" | "mtr" | "dig"
        | "nslookup" | "host" | "whois" | "arp" | "drill" | "resolvectl" => {
            Verdict::normal(format!("{p} queries the network"))
        }
        "ip" => {
            #[rustfmt::skip]
            let changes = [
                "add", "del", "delete", "set", "change", "replace", "flush", "append", "exec",
                "prepend", "save", "restore",
            ];
            match cmd.values().any(|v| changes.contains(&v)) {
                true => Verdict::dangerous("ip changes network configuration"),
                false => Verdict::safe("ip only shows network configuration"),
            }
        }
        "ifconfig" | "route" => match cmd.operands(&[]).len() <= usize::from(p == "ifconfig")
            && !cmd
                .values()
                .any(|v| matches!(v, "add" | "del" | "up" | "down"))
        {
            true => Verdict::safe(format!("{p} only shows network configuration")),
            false => Verdict::dangerous(format!("{p} changes network configuration")),
        },
        "iptables" | "ip6tables" | "nft" | "ufw" | "firewall-cmd" | "pfctl" | "tc" | "iw"
        | "nmcli" | "ethtool" | "brctl" => {
            let lists = cmd.values().any(|v| {
                matches!(
                    v,
                    "-L" | "-S"
                        | "--list"
                        | "--list-rules"
                        | "list"
                        | "status"
                        | "show"
                        | "-s"
                        | "--state"
                        | "--list-all"
                )
            });
            match lists && cmd.args.len() <= 3 {
                true => Verdict::safe(format!("{p} only shows network settings")),
                false => Verdict::dangerous(format!("{p} changes network or firewall settings")),
            }
        }
        "docker" | "podman" | "nerdctl" | "docker-compose" | "podman-compose" => containers(cmd),
        "kubectl" | "oc" | "minikube" | "kind" | "k3d" => kube(cmd),
        "helm" => match sub(cmd, 0) {
            Some(
                "list" | "ls" | "status" | "template" | "show" | "get" | "search" | "version"
                | "lint" | "history" | "env" | "help",
            )
            | None => Verdict::safe("helm only shows charts or releases"),
            _ => Verdict::dangerous("helm changes releases on a cluster"),
        },
        "terraform" | "tofu" | "terragrunt" | "pulumi" => match sub(cmd, 0) {
            Some(
                "validate" | "fmt" | "version" | "providers" | "graph" | "-version" | "--version"
                | "help" | "preview" | "whoami",
            )
            | None => Verdict::safe(format!("{p} only checks or shows the configuration")),
            Some("plan" | "init" | "output" | "show" | "get" | "console" | "stack") => {
                Verdict::normal(format!("{p} reads remote state or downloads providers"))
            }
            Some(s) => Verdict::dangerous(format!("{p} {s} changes real infrastructure")),
        },
        "aws" | "gcloud" | "gsutil" | "az" | "doctl" | "heroku" | "vercel" | "netlify" | "fly"
        | "flyctl" | "wrangler" | "firebase" | "railway" | "supabase" | "s3cmd" | "rclone"
        | "ansible" | "ansible-playbook" | "eksctl" | "linode-cli" | "oci" | "ibmcloud" | "scw"
        | "hcloud" => cloud(cmd),
        "gh" | "glab" | "hub" | "tea" => github(cmd),
        _ => return None,
    };
    Some(v)
}

fn sub<'a>(cmd: &'a Cmd<'_>, n: usize) -> Option<&'a str> {
    cmd.values().filter(|v| !v.starts_with('-')).nth(n)
}

fn curl(cmd: &Cmd<'_>) -> Verdict {
    let mut v = Verdict::dangerous("curl downloads from the network");
    v.downloads = true;
    v.writes = cmd
        .option_values(&["-o"], &["--output"])
        .into_iter()
        .filter(|w| w.known() != Some("-"))
        .collect();
    if cmd.flag('O', &["--remote-name", "--remote-name-all"]) {
        let dirs = cmd.option_values(&[], &["--output-dir"]);
        v.writes.push(
            dirs.into_iter()
                .next()
                .unwrap_or_else(|| Word::literal(".")),
        );
    }
    let mut uploads = cmd.option_values(&["-T"], &["--upload-file"]);
    for data in cmd.option_values(
        &["-d", "-F"],
        &[
            "--data",
            "--data-binary",
            "--data-raw",
            "--data-urlencode",
            "--form",
            "--json",
        ],
    ) {
        if let Some(text) = data.known()
            && let Some(at) = text.find(['@', '<'])
        {
            uploads.push(Word::literal(&text[at + 1..]));
        }
    }
    for u in uploads {
        v.raise(Severity::Dangerous, format!("curl uploads `{}`", u.display));
        v.reads.push(u);
    }
    for socket in cmd.option_values(&[], &["--unix-socket", "--abstract-unix-socket"]) {
        let path = socket.known().unwrap_or(socket.display.as_str());
        if daemon_socket(path) {
            v.raise(
                Severity::Critical,
                format!("curl talks to the container daemon's socket `{path}`, which runs anything as root"),
            );
        } else {
            v.raise(
                Severity::Dangerous,
                format!("curl talks to the local service behind `{path}`, outside the sandbox"),
            );
        }
    }
    v
}

/// A container daemon's control socket: whoever can write to it is root on the machine.
pub(super) fn daemon_socket(path: &str) -> bool {
    [
        "docker.sock",
        "podman.sock",
        "containerd.sock",
        "crio.sock",
        "buildkitd.sock",
    ]
    .iter()
    .any(|s| path.ends_with(s))
}

fn wget(cmd: &Cmd<'_>) -> Verdict {
    let mut v = Verdict::dangerous("wget downloads from the network");
    v.downloads = true;
    let outputs: Vec<Word> =
        cmd.option_values(&["-O", "-P"], &["--output-document", "--directory-prefix"]);
    let to_stdout = outputs.iter().any(|w| w.known() == Some("-"));
    v.writes = outputs
        .into_iter()
        .filter(|w| w.known() != Some("-"))
        .collect();
    if v.writes.is_empty() && !to_stdout {
        v.writes.push(Word::literal("."));
    }
    if cmd.flag('r', &["--recursive", "--mirror"]) {
        v.raise(Severity::Dangerous, "wget downloads recursively");
    }
    for u in cmd.option_values(&[], &["--post-file", "--body-file"]) {
        v.raise(Severity::Dangerous, format!("wget uploads `{}`", u.display));
        v.reads.push(u);
    }
    v
}

fn containers(cmd: &Cmd<'_>) -> Verdict {
    let p = cmd.program;
    let words: Vec<&str> = cmd.values().filter(|v| !v.starts_with('-')).collect();
    let (verb, object) = match words.as_slice() {
        [
            "compose" | "container" | "image" | "network" | "volume" | "system" | "buildx"
            | "context" | "manifest",
            v,
            ..,
        ] => (*v, words[0]),
        [v, ..] => (*v, ""),
        [] => ("", ""),
    };
    let verb = if p.ends_with("compose") {
        words.first().copied().unwrap_or("")
    } else {
        verb
    };
    #[rustfmt::skip]
    let safe = [
        "ps", "images", "ls", "list", "inspect", "logs", "version", "info", "stats", "top",
        "history", "port", "diff", "search", "config", "df", "show", "events", "help", "",
    ];
    // `build` runs the Dockerfile's RUN steps in the daemon, as root, outside the sandbox
    let normal = ["tag", "create", "commit", "save"];
    let mut v = if safe.contains(&verb) && !(object == "system" && verb == "prune") {
        Verdict::safe(format!("{p} only shows containers or images"))
    } else if normal.contains(&verb) {
        Verdict::normal(format!("{p} {verb} creates or tags images"))
    } else if matches!(verb, "build" | "bake" | "builder") {
        Verdict::dangerous(format!(
            "{p} {verb} runs the build's commands in the container daemon (as root, outside the sandbox)"
        ))
    } else {
        Verdict::dangerous(format!(
            "{p} {verb} runs, stops, deletes or publishes containers"
        ))
    };
    if matches!(verb, "prune" | "rm" | "rmi" | "down" | "kill") {
        v.destructive = true;
    }
    let host_access = cmd.has(&[
        "--privileged",
        "--pid=host",
        "--cap-add=ALL",
        "--cap-add=SYS_ADMIN",
    ]) || cmd.values().any(|x| {
        x.starts_with("/:")
            || x.contains("docker.sock")
            || x.starts_with("/etc:")
            || x == "--volume=/:/host"
            || x.split(',')
                .any(|kv| matches!(kv, "source=/" | "src=/" | "--mount=source=/"))
    });
    if host_access {
        v.raise(Severity::Critical, format!("{p} gives the container root access to the host (--privileged, / or the docker socket mounted)"));
    }
    v
}

fn kube(cmd: &Cmd<'_>) -> Verdict {
    let p = cmd.program;
    let verb = sub(cmd, 0).unwrap_or("");
    let raw = cmd.has(&["--raw"]);
    if verb == "get"
        && cmd.values().any(|v| v.starts_with("secret"))
        && cmd
            .values()
            .any(|v| v == "-o" || v.starts_with("-o") || v.starts_with("--output"))
    {
        return Verdict::critical(format!("{p} get secret -o prints secrets"));
    }
    if verb == "config" && raw {
        return Verdict::critical(format!("{p} config view --raw prints cluster credentials"));
    }
    match verb {
        "get" | "describe" | "logs" | "top" | "explain" | "version" | "api-resources"
        | "api-versions" | "cluster-info" | "events" | "diff" | "" | "status" => {
            Verdict::safe(format!("{p} {verb} only reads"))
        }
        "auth" if sub(cmd, 1) == Some("can-i") => {
            Verdict::safe(format!("{p} auth can-i only checks"))
        }
        "config"
            if matches!(
                sub(cmd, 1),
                Some("view" | "get-contexts" | "current-context" | "get-clusters" | "get-users")
            ) =>
        {
            Verdict::safe(format!("{p} config only shows contexts"))
        }
        _ => Verdict::dangerous(format!("{p} {verb} changes a cluster")),
    }
}

fn cloud(cmd: &Cmd<'_>) -> Verdict {
    let p = cmd.program;
    let values: Vec<&str> = cmd.values().collect();
    let token = values.iter().any(|v| {
        matches!(
            *v,
            "print-access-token"
                | "print-identity-token"
                | "get-access-token"
                | "export-credentials"
                | "get-session-token"
                | "auth:token"
                | "get-login-password"
                | "get-authorization-token"
        )
    }) || (p == "aws" && values.starts_with(&["configure", "get"]));
    if token {
        return Verdict::critical(format!("{p} prints credentials or access tokens"));
    }
    if values.len() == 1
        && matches!(
            values[0],
            "--version" | "version" | "help" | "--help" | "-v"
        )
    {
        return Verdict::safe(format!("{p} only prints its version or help"));
    }
    Verdict::dangerous(format!("{p} acts on remote infrastructure"))
}

fn github(cmd: &Cmd<'_>) -> Verdict {
    let p = cmd.program;
    let words: Vec<&str> = cmd.values().filter(|v| !v.starts_with('-')).collect();
    match words.as_slice() {
        ["auth", "token", ..] => {
            return Verdict::critical(format!("{p} auth token prints your access token"));
        }
        ["auth", "status", ..] if cmd.has(&["-t", "--show-token"]) => {
            return Verdict::critical(format!(
                "{p} auth status --show-token prints your access token"
            ));
        }
        _ => {}
    }
    if cmd.args.len() == 1
        && matches!(
            cmd.arg(0),
            Some("--version" | "version" | "help" | "--help")
        )
    {
        return Verdict::safe(format!("{p} only prints its version or help"));
    }
    let reading = match words.as_slice() {
        ["status" | "browse" | "search", ..] => true,
        [
            _,
            "view" | "list" | "ls" | "status" | "diff" | "checks" | "watch" | "download"
            | "checkout" | "clone",
            ..,
        ] => true,
        ["api", ..] => {
            let method = cmd.option_values(&["-X"], &["--method"]);
            let sends = cmd.has(&["-f", "-F", "--field", "--raw-field", "--input"]);
            !sends
                && method
                    .iter()
                    .all(|m| m.known().is_some_and(|x| x.eq_ignore_ascii_case("GET")))
        }
        _ => false,
    };
    match reading {
        true => Verdict::normal(format!("{p} reads from the code host")),
        false => Verdict::dangerous(format!("{p} publishes or changes things on the code host")),
    }
}

#!/usr/bin/env bash
# Lathe's `ast_edit` preview against the ast-grep CLI (`ast-grep run -p ... -r ...`), side by
# side: the same rewrite over this repository (a Rust pattern) and over the Linux kernel sources
# (a C pattern). One command; not part of CI.
#
#   bench/ast_edit.sh [RUNS] [TREES]   RUNS timed runs per command (default 5); TREES is
#                                      "repo kernel" (default) or either one
#
# It installs what is missing (the ast-grep CLI from PyPI, `ast-grep-cli`; Debian's
# linux-source, time, git, python3), unpacks the kernel tarball from /usr/src once into
# bench/.cache/linux (gitignored, shared with bench/search.sh), builds
# `cargo build --release -p lathe --bin lathe`, and times each case with both tools in the same run.
#
# What makes the comparison fair:
# - The same files. Both walk with .gitignore files honoured and hidden files skipped; the trees
#   are git repositories (this repository's tracked files extracted with `git archive` into a
#   fresh `git init`, the kernel unpacked and `git init`ed) so that ast-grep applies their
#   .gitignore files as Lathe does. Both choose files by the language's extensions.
# - The same work. Both parse every file that can match and rewrite every match in memory.
#   ast-grep prints a diff per changed file into a pipe that `cat > /dev/null` drains; Lathe
#   prints its preview (totals, every match, a unified diff per file), cut to the result budget
#   with the whole saved to a file, and holds the rewritten files as the pending plan. Neither
#   writes a source file.
# - Lathe's preview reads a file's bytes only once; files without the pattern's literal text
#   are not parsed (ast-grep parses every file of the language).
# - The same threads: both use all cores (their default).
# - A warm page cache: each command runs once untimed before its timed runs, and the timed runs
#   alternate between the two tools, so a noisy moment hits both alike. Besides the median
#   wall time the table gives the median CPU time (user + system), which other load disturbs
#   less. The ratio the target applies to is the wall-time one.
# - Whole processes: Lathe's times include starting the binary and opening its session; peak
#   memory is the maximum resident set size from /usr/bin/time (%M).
# Sanity: the matches (ast-grep's `--json=stream` records without the rewrite) and the files
# with matches must be the same; a difference is flagged in the table.
# Target: ratio (Lathe / ast-grep) at most 1.2.
set -euo pipefail

RUNS=${1:-5}
TREES=${2:-"repo kernel"}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE="$ROOT/bench/.cache"
KERNEL="$CACHE/linux"
LATHE="$ROOT/target/release/lathe"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

# --- what the benchmark needs -------------------------------------------------------------
missing=()
command -v git >/dev/null || missing+=(git)
command -v python3 >/dev/null || missing+=(python3)
[ -x /usr/bin/time ] || missing+=(time)
case " $TREES " in *" kernel "*) compgen -G "/usr/src/linux-source-*.tar.*" >/dev/null || missing+=(linux-source) ;; esac
if [ ${#missing[@]} -gt 0 ]; then
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    echo "installing: ${missing[*]}" >&2
    if ! $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >&2; then
        $SUDO apt-get update -qq >&2
        $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >&2
    fi
fi
if ! command -v ast-grep >/dev/null; then
    echo "installing: ast-grep-cli (PyPI)" >&2
    python3 -m pip install -q ast-grep-cli >&2
fi
# pyenv's shims find a command installed after the shell started only after a rehash.
command -v pyenv >/dev/null && pyenv rehash 2>/dev/null || true
SG=$(command -v ast-grep)

if [[ " $TREES " == *" kernel "* ]] && [ ! -d "$KERNEL" ]; then
    tarball=$(ls /usr/src/linux-source-*.tar.* | sort -V | tail -n 1)
    echo "unpacking $tarball into $KERNEL (once)" >&2
    mkdir -p "$CACHE"
    rm -rf "$CACHE/unpack"
    mkdir "$CACHE/unpack"
    tar -xf "$tarball" -C "$CACHE/unpack"
    git -C "$CACHE/unpack"/* init -q
    mv "$CACHE/unpack"/* "$KERNEL"
    rmdir "$CACHE/unpack"
fi
if [ -d "$KERNEL" ]; then
    # Debian's tarball ends the top-level .gitignore with `/*` and `!/debian/` (ignore all but
    # debian/), which would hide the whole kernel: dropped, as bench/search.sh does.
    sed -i -e '\|^/\*$|d' -e '\|^!/debian/$|d' "$KERNEL/.gitignore"
fi

REPO="$WORK/repo"
mkdir -p "$REPO"
git -C "$ROOT" archive HEAD | tar -x -C "$REPO"
git -C "$REPO" init -q

echo "building lathe (release)" >&2
(cd "$ROOT" && cargo build --release -q -p lathe --bin lathe)

export LATHE_DATA_DIR="$WORK/lathe-data"

# --- measuring ------------------------------------------------------------------------------
now_ns() { date +%s%N; }

# time_once NAME CMD...: one timed run; appends the wall time (us) to NAME.times, and the peak
# RSS (KiB) and CPU time (us) of the measured process to NAME.mem / NAME.cpu.
time_once() {
    local name=$1
    shift
    local start end
    start=$(now_ns)
    "$@" >/dev/null 2>>"$WORK/$name.err" || true
    end=$(now_ns)
    echo $(((end - start) / 1000)) >>"$WORK/$name.times"
    read -r mem user sys <"$WORK/mem"
    echo "$mem" >>"$WORK/$name.mem"
    awk -v u="$user" -v s="$sys" 'BEGIN {printf "%d\n", (u + s) * 1000000}' >>"$WORK/$name.cpu"
}

median() { sort -n "$1" | awk '{a[NR]=$1} END {m = (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2; print m}'; }
maximum() { sort -n "$1" | tail -n 1; }

lathe_args() { # PATTERN REWRITE LANG
    python3 -c 'import json, sys; print(json.dumps({"pattern": sys.argv[1], "rewrite": sys.argv[2], "language": sys.argv[3]}))' "$@"
}
lathe_run() { # TREE ARGS_JSON
    /usr/bin/time -f "%M %U %S" -o "$WORK/mem" "$LATHE" --workspace "$1" tool ast_edit "$2" | cat >/dev/null
}
sg_run() { # TREE PATTERN REWRITE LANG
    (cd "$1" && /usr/bin/time -f "%M %U %S" -o "$WORK/mem" "$SG" run --color never -p "$2" -r "$3" --lang "$4" . | cat >/dev/null)
}

# The cases: name, tree, pattern, rewrite, language.
NAMES=(); CASE_TREES=(); PATTERNS=(); REWRITES=(); LANGS=()
add_case() { NAMES+=("$1"); CASE_TREES+=("$2"); PATTERNS+=("$3"); REWRITES+=("$4"); LANGS+=("$5"); }
case " $TREES " in *" repo "*)
    add_case "repo: \$X.unwrap() (Rust)" "$REPO" '$X.unwrap()' '$X.expect("checked")' rust ;;
esac
case " $TREES " in *" kernel "*)
    add_case "kernel: kmalloc(\$S, GFP_KERNEL) (C)" "$KERNEL" 'kmalloc($S, GFP_KERNEL)' 'kzalloc($S, GFP_KERNEL)' c ;;
esac

printf '%s timed runs each, medians; ast-grep %s\n' "$RUNS" "$("$SG" --version | awk '{print $2}')"
printf '%-38s %9s %9s %6s   %9s %9s %6s   %9s %7s  %s\n' case "lathe ms" "sg ms" ratio \
    "lathe cpu" "sg cpu" ratio "lathe MiB" "sg MiB" "matches, files lathe/sg"
status=0
for i in "${!NAMES[@]}"; do
    tree=${CASE_TREES[$i]}
    args=$(lathe_args "${PATTERNS[$i]}" "${REWRITES[$i]}" "${LANGS[$i]}")
    lathe_run "$tree" "$args" || true
    sg_run "$tree" "${PATTERNS[$i]}" "${REWRITES[$i]}" "${LANGS[$i]}" || true
    for _ in $(seq "$RUNS"); do
        time_once "lathe$i" lathe_run "$tree" "$args"
        time_once "sg$i" sg_run "$tree" "${PATTERNS[$i]}" "${REWRITES[$i]}" "${LANGS[$i]}"
    done
    # Sanity: the same matches in the same files.
    read -r lathe_matches lathe_files < <({ "$LATHE" --workspace "$tree" tool ast_edit "$args" --json || true; } |
        python3 -c 'import json, sys; m = json.load(sys.stdin)["metadata"]; print(m.get("matches"), m.get("files"))')
    read -r sg_matches sg_files < <({ cd "$tree" && "$SG" run -p "${PATTERNS[$i]}" --lang "${LANGS[$i]}" --json=stream . || true; } |
        python3 -c 'import json, sys
files = set(); n = 0
for line in sys.stdin:
    if line.strip():
        n += 1
        files.add(json.loads(line)["file"])
print(n, len(files))')
    lt=$(median "$WORK/lathe$i.times")
    st=$(median "$WORK/sg$i.times")
    lc=$(median "$WORK/lathe$i.cpu")
    sc=$(median "$WORK/sg$i.cpu")
    lm=$(maximum "$WORK/lathe$i.mem")
    sm=$(maximum "$WORK/sg$i.mem")
    ratio=$(awk -v a="$lt" -v b="$st" 'BEGIN {printf "%.2f", a / b}')
    cpu_ratio=$(awk -v a="$lc" -v b="$sc" 'BEGIN {printf "%.2f", (b > 0) ? a / b : 0}')
    verdict=""
    if awk -v r="$ratio" 'BEGIN {exit !(r > 1.2)}'; then verdict="  <- ratio over 1.2"; status=1; fi
    if [ "$lathe_matches $lathe_files" != "$sg_matches $sg_files" ]; then verdict="$verdict  <- results differ"; status=1; fi
    printf '%-38s %9.1f %9.1f %6s   %9.1f %9.1f %6s   %9.1f %7.1f  %s%s\n' "${NAMES[$i]}" \
        "$(awk -v t="$lt" 'BEGIN {print t / 1000}')" "$(awk -v t="$st" 'BEGIN {print t / 1000}')" "$ratio" \
        "$(awk -v t="$lc" 'BEGIN {print t / 1000}')" "$(awk -v t="$sc" 'BEGIN {print t / 1000}')" "$cpu_ratio" \
        "$(awk -v m="$lm" 'BEGIN {print m / 1024}')" "$(awk -v m="$sm" 'BEGIN {print m / 1024}')" \
        "$lathe_matches/$sg_matches, $lathe_files/$sg_files" "$verdict"
done
if [ "$status" -eq 0 ]; then
    echo "every case within the target (ratio <= 1.2, same matches)"
else
    echo "some cases miss the target" >&2
fi
exit "$status"

#!/usr/bin/env bash
# Lathe's `grep` and `glob` against ripgrep and fd on the Linux kernel sources, side by side.
# One command; not part of CI.
#
#   bench/search.sh [RUNS]        RUNS timed runs per command (default 5); medians are printed
#
# It installs what is missing (Debian's linux-source, ripgrep, fd-find, time, git, python3),
# unpacks the kernel tarball from /usr/src once into bench/.cache/linux (gitignored), builds
# `cargo build --release -p lathe`, and times each case with Lathe (`lathe tool grep|glob`) and
# with the reference tool in the same run.
#
# What makes the comparison fair:
# - The same files. The cache tree is made a git repository (`git init`, nothing committed) so
#   that rg and fd honour its .gitignore files the way Lathe does everywhere (Lathe also applies
#   .gitignore outside a repository; ripgrep needs --no-require-git for that, and this fd has no
#   such flag). Hidden files are skipped by all three; binary files by rg and Lathe.
# - The same amount of work. Lathe reads every file to the end to give exact totals, then prints
#   one page (200 lines); rg prints every match, with line numbers (-n), into a pipe that
#   `cat > /dev/null` drains. (Its output must not go straight to /dev/null: ripgrep notices that
#   and stops at the first match.) `files_with_matches` may stop at a file's first match in both.
#   Lathe's glob also reads the modification time of every match (its default order is newest
#   first), which fd, listing unsorted, does not.
# - The same threads: every tool uses all cores (its default).
# - A warm page cache: each command runs once untimed before its timed runs.
# - Whole processes: Lathe's times include starting the binary and opening its session; peak
#   memory is the maximum resident set size from /usr/bin/time (%M).
# - A noisy machine: the timed runs alternate between the two tools, and besides the median wall
#   time the table gives the median CPU time (user + system), which other load disturbs less.
#   The ratio the target applies to is the wall-time one.
# Targets: every ratio (Lathe / reference) at most 1.2, Lathe's peak memory under 200 MiB.
set -euo pipefail

RUNS=${1:-5}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE="$ROOT/bench/.cache"
TREE="$CACHE/linux"
LATHE="$ROOT/target/release/lathe"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

# --- what the benchmark needs -------------------------------------------------------------
missing=()
command -v rg >/dev/null || missing+=(ripgrep)
command -v fdfind >/dev/null || missing+=(fd-find)
command -v git >/dev/null || missing+=(git)
command -v python3 >/dev/null || missing+=(python3)
[ -x /usr/bin/time ] || missing+=(time)
compgen -G "/usr/src/linux-source-*.tar.*" >/dev/null || missing+=(linux-source)
if [ ${#missing[@]} -gt 0 ]; then
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    echo "installing: ${missing[*]}" >&2
    if ! $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >&2; then
        $SUDO apt-get update -qq >&2
        $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >&2
    fi
fi

if [ ! -d "$TREE" ]; then
    tarball=$(ls /usr/src/linux-source-*.tar.* | sort -V | tail -n 1)
    echo "unpacking $tarball into $TREE (once)" >&2
    mkdir -p "$CACHE"
    rm -rf "$CACHE/unpack"
    mkdir "$CACHE/unpack"
    tar -xf "$tarball" -C "$CACHE/unpack"
    git -C "$CACHE/unpack"/* init -q
    mv "$CACHE/unpack"/* "$TREE"
    rmdir "$CACHE/unpack"
fi
# Debian's tarball ends the top-level .gitignore with its packaging rules, `/*` and `!/debian/`
# (ignore everything at the top level but debian/), which would hide the whole kernel from every
# tool here. Drop them so the tree is searched as the kernel's own .gitignore files describe it.
sed -i -e '\|^/\*$|d' -e '\|^!/debian/$|d' "$TREE/.gitignore"

echo "building lathe (release)" >&2
(cd "$ROOT" && cargo build --release -q -p lathe)

export LATHE_DATA_DIR="$WORK/lathe-data"

# --- measuring ------------------------------------------------------------------------------
now_ns() { date +%s%N; }

# time_once NAME CMD...: one timed run; appends the wall time (us) to NAME.times, and the peak
# RSS (KiB) and CPU time (us, user + system) of the measured process to NAME.mem / NAME.cpu.
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

# The measured commands; /usr/bin/time writes the peak RSS of the measured process to $WORK/mem.
lathe_run() { # TOOL ARGS_JSON
    /usr/bin/time -f "%M %U %S" -o "$WORK/mem" "$LATHE" --workspace "$TREE" tool "$1" "$2"
}
ref_run() { # COMMAND...
    /usr/bin/time -f "%M %U %S" -o "$WORK/mem" "$@" . | cat >/dev/null
}

# The cases: name, Lathe tool, its arguments, the reference command, and what the totals count
# (lathe's metadata key / how to total the reference's output).
NAMES=(); TOOLS=(); ARGS=(); KEYS=(); TOTALS=()
add_case() { NAMES+=("$1"); TOOLS+=("$2"); ARGS+=("$3"); KEYS+=("$4"); TOTALS+=("$5"); }
add_case "literal" grep '{"pattern":"EXPORT_SYMBOL_GPL","fixed_strings":true}' matches lines
add_case "case-insensitive alternation" grep '{"pattern":"mutex_lock|spin_lock","case_insensitive":true}' matches lines
add_case "regex with a character class" grep '{"pattern":"0x[0-9a-fA-F]{8}\\b"}' matches lines
add_case "files_with_matches" grep '{"pattern":"kmalloc","output_mode":"files_with_matches"}' files lines
add_case "count" grep '{"pattern":"printk","output_mode":"count"}' matches sum
add_case "glob **/*.c" glob '{"pattern":"**/*.c"}' files lines
reference() { # N: the reference command of case N in REF
    case $1 in
        0) REF=(rg -n -F EXPORT_SYMBOL_GPL) ;;
        1) REF=(rg -n -i 'mutex_lock|spin_lock') ;;
        2) REF=(rg -n '0x[0-9a-fA-F]{8}\b') ;;
        3) REF=(rg -l kmalloc) ;;
        4) REF=(rg -c printk) ;;
        5) REF=(fdfind -t f -g '*.c') ;;
    esac
}

cd "$TREE"
printf '%s: %s files (rg --files), %s timed runs each, medians\n' \
    "$(basename "$(ls /usr/src/linux-source-*.tar.* | sort -V | tail -n 1)")" "$({ rg --files || true; } | wc -l)" "$RUNS"
printf '%-30s %9s %9s %6s   %9s %9s %6s   %9s %7s  %s\n' case "lathe ms" "ref ms" ratio \
    "lathe cpu" "ref cpu" ratio "lathe MiB" "ref MiB" "totals lathe/ref"
status=0
for i in "${!NAMES[@]}"; do
    reference "$i"
    # One untimed run of each to warm the page cache, then timed runs taken in turns, so that
    # a noisy moment on the machine hits both tools alike.
    lathe_run "${TOOLS[$i]}" "${ARGS[$i]}" >/dev/null 2>&1 || true
    ref_run "${REF[@]}" >/dev/null 2>&1 || true
    for _ in $(seq "$RUNS"); do
        time_once "lathe$i" lathe_run "${TOOLS[$i]}" "${ARGS[$i]}"
        time_once "ref$i" ref_run "${REF[@]}"
    done
    # Sanity: both found the same (Lathe's exact total against the reference's full output).
    # (rg exits with 1 when nothing matches, and pipefail is on.)
    lathe_total=$({ "$LATHE" --workspace "$TREE" tool "${TOOLS[$i]}" "${ARGS[$i]}" --json || true; } |
        python3 -c 'import json, sys; print(json.load(sys.stdin)["metadata"].get(sys.argv[1]))' "${KEYS[$i]}")
    if [ "${TOTALS[$i]}" = sum ]; then
        ref_total=$({ "${REF[@]}" . || true; } | awk -F: '{s += $NF} END {print s + 0}')
    else
        ref_total=$({ "${REF[@]}" . || true; } | wc -l)
    fi
    lt=$(median "$WORK/lathe$i.times")
    rt=$(median "$WORK/ref$i.times")
    lc=$(median "$WORK/lathe$i.cpu")
    rc=$(median "$WORK/ref$i.cpu")
    lm=$(maximum "$WORK/lathe$i.mem")
    rmem=$(maximum "$WORK/ref$i.mem")
    ratio=$(awk -v a="$lt" -v b="$rt" 'BEGIN {printf "%.2f", a / b}')
    verdict=""
    if awk -v r="$ratio" 'BEGIN {exit !(r > 1.2)}'; then verdict="  <- ratio over 1.2"; status=1; fi
    if [ "$lm" -ge $((200 * 1024)) ]; then verdict="$verdict  <- memory over 200 MiB"; status=1; fi
    if [ "$lathe_total" != "$ref_total" ]; then verdict="$verdict  <- totals differ"; fi
    cpu_ratio=$(awk -v a="$lc" -v b="$rc" 'BEGIN {printf "%.2f", (b > 0) ? a / b : 0}')
    printf '%-30s %9.1f %9.1f %6s   %9.1f %9.1f %6s   %9.1f %7.1f  %s%s\n' "${NAMES[$i]}" \
        "$(awk -v t="$lt" 'BEGIN {print t / 1000}')" "$(awk -v t="$rt" 'BEGIN {print t / 1000}')" "$ratio" \
        "$(awk -v t="$lc" 'BEGIN {print t / 1000}')" "$(awk -v t="$rc" 'BEGIN {print t / 1000}')" "$cpu_ratio" \
        "$(awk -v m="$lm" 'BEGIN {print m / 1024}')" "$(awk -v m="$rmem" 'BEGIN {print m / 1024}')" \
        "$lathe_total/$ref_total" "$verdict"
done
if [ "$status" -eq 0 ]; then
    echo "every case within the target (ratio <= 1.2, Lathe's peak < 200 MiB)"
else
    echo "some cases miss the target" >&2
fi
exit "$status"

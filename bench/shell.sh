#!/usr/bin/env bash
# Lathe's `shell` tool against the plain shell, side by side. One command; not part of CI.
#
#   bench/shell.sh [RUNS] [ITERATIONS]
#       RUNS        timed runs of the 1 GiB case (default 9; medians decide, the best are shown)
#       ITERATIONS  runs of `true` for the overhead case (default 200)
#
# It builds `cargo build --release -p lathe` and measures, in one run:
# 1. Throughput: a command writing 1 GiB to stdout, run by `lathe tool shell` (Lathe reads the
#    pipe, keeps the head and tail for the preview and writes every byte to its artifact), versus
#    the same command with its output redirected to a file by the shell (`bash -c 'CMD > FILE'`).
#    Both write the same 1 GiB to the same file system. Target: ratio at most 1.3.
# 2. Lathe's peak memory during (1): the maximum resident set size of the `lathe` process, from
#    /usr/bin/time when installed, else polled from /proc/PID/status (VmHWM). Target: < 64 MiB.
# 3. Overhead: `true` through `lathe tool shell` versus `bash -c true`, as whole processes (the
#    figure a person running `lathe tool` sees: binary start, configuration, session, tool call;
#    Lathe's start alone, `lathe tool list_commands`, is shown beside it), and per call inside one
#    `lathe tool --batch` session (the cost of supervising a command alone: spawn, pipe, reader,
#    artifact, reaping). Target: under 5 ms added.
#
# Lathe's state (artifacts) goes to a temporary LATHE_DATA_DIR, removed at the end. Nothing is
# installed.
set -euo pipefail

RUNS=${1:-9}
ITERATIONS=${2:-200}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
LATHE="$ROOT/target/release/lathe"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/lathe-bench-shell.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
export LATHE_DATA_DIR="$WORK/data"
WS="$WORK/ws"
mkdir -p "$WS" "$LATHE_DATA_DIR"

GIB=1073741824
# A line-oriented producer (lines of 48 bytes), as a build or test log is.
PRODUCER="yes 'lathe benchmark line of output, 48 bytes.' | head -c $GIB"

echo "building lathe (release)..." >&2
if ! (cd "$ROOT" && cargo build --release -q -p lathe); then
    [ -x "$LATHE" ] || exit 2
    echo "bench/shell.sh: the build failed; measuring the existing $LATHE ($(date -r "$LATHE"))" >&2
fi

if ! "$LATHE" tool shell '{"command":"true"}' >/dev/null 2>&1; then
    echo "bench/shell.sh: '$LATHE tool shell' does not work yet" >&2
    exit 2
fi

now() { echo "${EPOCHREALTIME/[.,]/}"; } # microseconds
median() { sort -n | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
secs() { awk -v us="$1" 'BEGIN { printf "%.3f s", us / 1e6 }'; }
ms() { awk -v us="$1" 'BEGIN { printf "%.2f ms", us / 1e3 }'; }
clear_artifacts() { rm -rf "$LATHE_DATA_DIR/runs"; }

# Runs "$@", prints its wall time (µs) on stdout and its peak RSS (KiB) into $WORK/peak.
timed_with_peak() {
    local start end
    if [ -x /usr/bin/time ]; then
        start=$(now)
        /usr/bin/time -f "%M" -o "$WORK/peak" "$@" >/dev/null
        end=$(now)
    else
        start=$(now)
        "$@" >/dev/null &
        local pid=$! peak=0 hwm
        while kill -0 "$pid" 2>/dev/null; do
            hwm=$(awk '/^VmHWM:/ { print $2 }' "/proc/$pid/status" 2>/dev/null || true)
            [ -n "$hwm" ] && [ "$hwm" -gt "$peak" ] && peak=$hwm
            sleep 0.01
        done
        wait "$pid"
        end=$(now)
        echo "$peak" >"$WORK/peak"
    fi
    echo $((end - start))
}

# Load before measuring (this is a shared machine: other work skews both sides, Lathe's more,
# since it runs a third stage beside `yes | head`), and CPU time stolen by the host meanwhile.
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
steal() { awk '/^cpu / { print $9 }' /proc/stat; }
steal_before=$(steal)

# --- 1 and 2: 1 GiB through lathe vs redirected by the shell ------------------------------
args=$(printf '{"command": "%s"}' "${PRODUCER//\"/\\\"}")
shell_times=() lathe_times=() peaks=()
# One untimed run of each warms the page cache and the binary.
bash -c "$PRODUCER > '$WORK/out'"
"$LATHE" --workspace "$WS" tool shell "$args" >/dev/null
clear_artifacts
# Before each timed run the file system is synced, so that no write-back of the previous run
# (a gigabyte of dirty pages) competes with the next one.
for _ in $(seq "$RUNS"); do
    rm -f "$WORK/out"
    sync
    start=$(now)
    bash -c "$PRODUCER > '$WORK/out'"
    end=$(now)
    shell_times+=($((end - start)))
    sync
    lathe_times+=("$(timed_with_peak "$LATHE" --workspace "$WS" tool shell "$args")")
    peaks+=("$(cat "$WORK/peak")")
    artifact=$(find "$LATHE_DATA_DIR/runs" -name 'cmd-*' | head -n 1)
    size=$(stat -c %s "$artifact")
    [ "$size" -eq "$GIB" ] || { echo "artifact holds $size bytes, expected $GIB" >&2; exit 1; }
    cmp -s "$artifact" "$WORK/out" || { echo "artifact differs from the shell's file" >&2; exit 1; }
    clear_artifacts
done
shell_med=$(printf '%s\n' "${shell_times[@]}" | median)
lathe_med=$(printf '%s\n' "${lathe_times[@]}" | median)
shell_best=$(printf '%s\n' "${shell_times[@]}" | sort -n | head -n 1)
lathe_best=$(printf '%s\n' "${lathe_times[@]}" | sort -n | head -n 1)
best_ratio=$(awk -v a="$lathe_best" -v b="$shell_best" 'BEGIN { printf "%.2f", a / b }')
peak_max=$(printf '%s\n' "${peaks[@]}" | sort -n | tail -n 1)
ratio=$(awk -v a="$lathe_med" -v b="$shell_med" 'BEGIN { printf "%.2f", a / b }')

# --- 3: overhead of `true` -------------------------------------------------------------------
# Measured in interleaved rounds, so that every variant sees the same load on a busy machine.
ROUND=20
ROUNDS=$(((ITERATIONS + ROUND - 1) / ROUND))
CALLS=$((ROUNDS * ROUND))
batch_line='{"name": "shell", "arguments": {"command": "true"}}'
for _ in $(seq "$ROUND"); do echo "$batch_line"; done >"$WORK/batch"
: >"$WORK/empty"
for _ in 1 2 3; do bash -c true; "$LATHE" --workspace "$WS" tool shell '{"command":"true"}' >/dev/null; done
"$LATHE" --workspace "$WS" tool --batch <"$WORK/batch" >/dev/null
clear_artifacts
bash_total=0 lathe_total=0 startup_total=0 batch_total=0 empty_total=0
for _ in $(seq "$ROUNDS"); do
    start=$(now)
    for _ in $(seq "$ROUND"); do bash -c true; done
    end=$(now)
    bash_total=$((bash_total + end - start))
    start=$(now)
    for _ in $(seq "$ROUND"); do "$LATHE" --workspace "$WS" tool shell '{"command":"true"}' >/dev/null; done
    end=$(now)
    lathe_total=$((lathe_total + end - start))
    # Lathe's own start (binary, configuration, registry, session) without running anything.
    start=$(now)
    for _ in $(seq "$ROUND"); do "$LATHE" --workspace "$WS" tool list_commands '{}' >/dev/null; done
    end=$(now)
    startup_total=$((startup_total + end - start))
    # In one session: a batch of ROUND calls minus a batch of none (the process start).
    start=$(now)
    "$LATHE" --workspace "$WS" tool --batch <"$WORK/empty" >/dev/null
    end=$(now)
    empty_total=$((empty_total + end - start))
    start=$(now)
    "$LATHE" --workspace "$WS" tool --batch <"$WORK/batch" >"$WORK/batch.out"
    end=$(now)
    batch_total=$((batch_total + end - start))
    ok=$(grep -c 'exit code 0' "$WORK/batch.out" || true)
    [ "$ok" -eq "$ROUND" ] || { echo "batch: $ok of $ROUND calls reported exit code 0" >&2; exit 1; }
    clear_artifacts
done
bash_per=$((bash_total / CALLS))
lathe_per=$((lathe_total / CALLS))
startup_per=$((startup_total / CALLS))
batch_per=$(((batch_total - empty_total) / CALLS))

verdict() { if [ "$1" = 1 ]; then echo "ok"; else echo "MISSED"; fi; }
ratio_ok=$(awk -v r="$ratio" 'BEGIN { print (r <= 1.3) }')
peak_ok=$(awk -v p="$peak_max" 'BEGIN { print (p < 65536) }')
added_process=$((lathe_per - bash_per))
added_call=$((batch_per - bash_per))
call_ok=$(awk -v a="$added_call" 'BEGIN { print (a < 5000) }')
process_ok=$(awk -v a="$added_process" 'BEGIN { print (a < 5000) }')

printf '\n%-44s %14s %14s %10s %8s\n' "case" "plain shell" "lathe" "ratio/diff" "target"
printf '%-44s %14s %14s %10s %8s\n' "1 GiB to stdout (median of $RUNS)" "$(secs "$shell_med")" "$(secs "$lathe_med")" "x$ratio" "$(verdict "$ratio_ok")"
printf '%-44s %14s %14s %10s %8s\n' "  best of $RUNS" "$(secs "$shell_best")" "$(secs "$lathe_best")" "x$best_ratio" ""
printf '%-44s %14s %14s %10s %8s\n' "lathe peak memory (max RSS)" "" "$((peak_max / 1024)) MiB" "" "$(verdict "$peak_ok")"
printf '%-44s %14s %14s %10s %8s\n' "true, whole process (mean of $CALLS)" "$(ms "$bash_per")" "$(ms "$lathe_per")" "+$(ms "$added_process")" "$(verdict "$process_ok")"
printf '%-44s %14s %14s %10s %8s\n' "  of which lathe's start (tool list_commands)" "" "$(ms "$startup_per")" "" ""
printf '%-44s %14s %14s %10s %8s\n' "true, per call in one session ($CALLS)" "$(ms "$bash_per")" "$(ms "$batch_per")" "+$(ms "$added_call")" "$(verdict "$call_ok")"
printf '\nload average before: %s; CPU time stolen by the host during the runs: %s\n' \
    "$load_before" "$(awk -v t="$(($(steal) - steal_before))" -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.2f s", t / hz }')"
printf 'memory from %s; 1 GiB case: %s\n' \
    "$([ -x /usr/bin/time ] && echo "/usr/bin/time" || echo "/proc VmHWM polling")" "$PRODUCER"

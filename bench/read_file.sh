#!/usr/bin/env bash
# Lathe's `read_file` against `sed -n 'A,Bp;Bq'`: 2,000 lines near the end of a file of more
# than 1 GiB, side by side. One command; not part of CI.
#
#   bench/read_file.sh [RUNS]     RUNS timed runs per command (default 5); medians are printed
#
# It generates the file once into bench/.cache/read_file (gitignored): this repository's Rust
# sources, concatenated over and over until the file passes 1 GiB (real code lines of every
# length). It builds `cargo build --release -p lathe`, then times
#   lathe --workspace CACHE tool read_file '{"path":"big.txt","offset":A,"limit":2000}'
#   sed -n 'A,Bp;Bq' big.txt                      (B = A + 1999)
# with A about 3,000 lines before the end, and checks both printed the same lines.
#
# What makes the comparison fair:
# - The same output: Lathe runs with a result budget large enough to print all 2,000 lines (the
#   default budget would print a head and a tail and save the rest to a file), and both write
#   into a pipe drained by `cat > /dev/null`.
# - Not the same work: sed stops at line B (`Bq`) while Lathe reads on to the end to say how many
#   lines the file has ("showing lines A-B of N") and hashes every byte so a later write can tell
#   whether the file changed. Near the end of the file that difference is small.
# - A warm page cache: each command runs once untimed before its timed runs.
# - Whole processes: Lathe's times include starting the binary and opening its session.
# Peak memory: the maximum resident set size of the Lathe process, from /usr/bin/time -f %M,
# else an external `time`, else the kernel's rusage of a child (python3).
# Targets: ratio (Lathe / sed) at most 1.0, Lathe's peak memory under 32 MiB.
set -euo pipefail

RUNS=${1:-5}
LIMIT=2000
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE="$ROOT/bench/.cache/read_file"
BIG="$CACHE/big.txt"
LATHE="$ROOT/target/release/lathe"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

# --- the file (once) ----------------------------------------------------------------------------
MIN_BYTES=$((1 << 30))
if [ ! -f "$BIG" ] || [ "$(stat -c %s "$BIG")" -lt "$MIN_BYTES" ]; then
    echo "generating $BIG (once)" >&2
    mkdir -p "$CACHE"
    seed="$CACHE/seed.txt"
    find "$ROOT/crates" -name '*.rs' -type f -print0 | sort -z | xargs -0 cat >"$seed"
    # Every copy must end a line, so the copies do not run together.
    [ -z "$(tail -c 1 "$seed")" ] || echo >>"$seed"
    seed_bytes=$(stat -c %s "$seed")
    copies=$((MIN_BYTES / seed_bytes + 1))
    tmp="$BIG.partial"
    : >"$tmp"
    for _ in $(seq "$copies"); do cat "$seed"; done >>"$tmp"
    mv "$tmp" "$BIG"
    rm -f "$seed"
fi

echo "building lathe (release)" >&2
(cd "$ROOT" && cargo build --release -q -p lathe)

export LATHE_DATA_DIR="$WORK/lathe-data"
CONFIG="$WORK/config.toml"
printf '[tools]\nresult_budget = 100000000\n' >"$CONFIG"

TOTAL=$(wc -l <"$BIG")
A=$((TOTAL - 3000))
B=$((A + LIMIT - 1))
ARGS="{\"path\":\"big.txt\",\"offset\":$A,\"limit\":$LIMIT}"

# --- measuring ----------------------------------------------------------------------------------
# peak_kib CMD...: runs CMD (stdout to a drained pipe) and writes its peak RSS in KiB to $WORK/mem.
if [ -x /usr/bin/time ]; then
    peak_kib() { /usr/bin/time -f %M -o "$WORK/mem" "$@" | cat >/dev/null; }
elif command -v -p time >/dev/null 2>&1 && [ "$(command -v -p time)" != time ]; then
    peak_kib() { command time -f %M -o "$WORK/mem" "$@" | cat >/dev/null; }
elif command -v python3 >/dev/null; then
    peak_kib() {
        python3 -c '
import resource, subprocess, sys
subprocess.run(sys.argv[2:], stdout=subprocess.DEVNULL)
open(sys.argv[1], "w").write("%d\n" % resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
' "$WORK/mem" "$@"
    }
else
    peak_kib() { "$@" | cat >/dev/null; echo 0 >"$WORK/mem"; }
    echo "no /usr/bin/time, external time or python3: peak memory not measured" >&2
fi

now_ns() { date +%s%N; }

LATHE_CMD=("$LATHE" --workspace "$CACHE" --config "$CONFIG" tool read_file "$ARGS")
SED_CMD=(sed -n "${A},${B}p;${B}q" "$BIG")

# run_timed NAME CMD...: RUNS timed runs after one warm-up; wall times in microseconds.
run_timed() {
    local name=$1
    shift
    "$@" >/dev/null
    : >"$WORK/$name.times"
    : >"$WORK/$name.mem"
    for _ in $(seq "$RUNS"); do
        local start end
        start=$(now_ns)
        peak_kib "$@"
        end=$(now_ns)
        echo $(((end - start) / 1000)) >>"$WORK/$name.times"
        tail -n 1 "$WORK/mem" >>"$WORK/$name.mem"
    done
}

median() { sort -n "$1" | awk '{a[NR]=$1} END {m = (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2; print m}'; }
maximum() { sort -n "$1" | tail -n 1; }

# --- the same lines? ----------------------------------------------------------------------------
"${LATHE_CMD[@]}" | awk -F'\t' '/^ *[0-9]+\t/ {sub(/^ *[0-9]+\t/, ""); print}' >"$WORK/lathe.out"
"${SED_CMD[@]}" >"$WORK/sed.out"
if ! cmp -s "$WORK/lathe.out" "$WORK/sed.out"; then
    echo "lathe and sed printed different lines" >&2
    exit 1
fi
note=$("${LATHE_CMD[@]}" | tail -n 1)

run_timed lathe "${LATHE_CMD[@]}"
run_timed sed "${SED_CMD[@]}"

lt=$(median "$WORK/lathe.times")
st=$(median "$WORK/sed.times")
lm=$(maximum "$WORK/lathe.mem")
ratio=$(awk -v a="$lt" -v b="$st" 'BEGIN {printf "%.2f", a / b}')
printf '%s: %s bytes, %s lines; lines %s-%s; %s timed runs each, medians\n' \
    "$(basename "$BIG")" "$(stat -c %s "$BIG")" "$TOTAL" "$A" "$B" "$RUNS"
printf 'lathe: %s\n' "$note"
printf '%-10s %10s\n' "" "ms"
printf '%-10s %10.1f\n' lathe "$(awk -v t="$lt" 'BEGIN {print t / 1000}')"
printf '%-10s %10.1f\n' sed "$(awk -v t="$st" 'BEGIN {print t / 1000}')"
printf 'ratio (lathe / sed): %s\n' "$ratio"
printf "lathe's peak memory: %.1f MiB\n" "$(awk -v m="$lm" 'BEGIN {print m / 1024}')"
status=0
if awk -v r="$ratio" 'BEGIN {exit !(r > 1.0)}'; then echo "ratio over the 1.0 target" >&2; status=1; fi
if [ "$lm" -ge $((32 * 1024)) ]; then echo "peak memory over the 32 MiB target" >&2; status=1; fi
[ "$status" -eq 0 ] && echo "within the targets (ratio <= 1.0, peak < 32 MiB)"
exit "$status"

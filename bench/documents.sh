#!/usr/bin/env bash
# Lathe's `read_document` against poppler's `pdftotext` on a generated 200-page PDF, and
# `read_document` alone on a large generated DOCX. One command; not part of CI.
#
#   bench/documents.sh [RUNS] [MODE]   RUNS timed runs per command (default 5); MODE `lathe`
#                                      (default: `lathe tool read_document`, whole binary) or
#                                      `worker` (only lathe-documents' worker, fed its request
#                                      on stdin: the conversion without Lathe's start-up, and a
#                                      much smaller release build)
#
# It installs what is missing (Debian's poppler-utils and time; fpdf2 and python-docx from
# PyPI for the inputs), builds `cargo build --release -p lathe --bin lathe`, writes the inputs
# with crates/lathe-documents/tests/fixtures/generate.py --bench into a temporary directory,
# and times each command in the same run.
#
# What makes the comparison fair:
# - Whole processes on both sides: Lathe's time includes starting the binary, opening its
#   session, the worker child (`lathe __document-worker`) and the Markdown; pdftotext writes
#   plain text to a file. Peak memory is the maximum resident set size from /usr/bin/time (%M),
#   which covers the largest process of the tree (the worker, for Lathe).
# - No cache: every Lathe run gets a fresh data directory, so each one parses the PDF.
# - Warm page cache: each command runs once untimed first; timed runs alternate between the
#   tools. The table gives the median wall time and the median CPU time (user + system).
# Target: ratio (Lathe / pdftotext) at most 1.0 for the PDF, peak memory under 200 MiB.
set -euo pipefail

RUNS=${1:-5}
MODE=${2:-lathe}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
LATHE="$ROOT/target/release/lathe"
WORKER="$ROOT/target/release/lathe-document-worker"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

missing=()
command -v pdftotext >/dev/null || missing+=(poppler-utils)
[ -x /usr/bin/time ] || missing+=(time)
command -v python3 >/dev/null || missing+=(python3 python3-pip)
if [ ${#missing[@]} -gt 0 ]; then
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    echo "installing: ${missing[*]}" >&2
    if ! $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >&2; then
        $SUDO apt-get update -qq >&2
        $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >&2
    fi
fi
python3 -c "import fpdf, docx" 2>/dev/null || python3 -m pip install -q fpdf2 python-docx >&2

case "$MODE" in
    lathe) (cd "$ROOT" && cargo build --release -q -p lathe --bin lathe) ;;
    worker) (cd "$ROOT" && cargo build --release -q -p lathe-documents --bin lathe-document-worker) ;;
    *) echo "MODE is lathe or worker, not $MODE" >&2; exit 2 ;;
esac
mkdir -p "$WORK/ws"
python3 "$ROOT/crates/lathe-documents/tests/fixtures/generate.py" --bench "$WORK/ws"

# One timed run of shell function $1: prints "wall_s cpu_s peak_kib".
timed() {
    /usr/bin/time -f "%e %U %S %M" -o "$WORK/time" bash -c "$1" >"$WORK/out" 2>"$WORK/err" || {
        echo "failed: $*" >&2
        cat "$WORK/err" >&2
        exit 1
    }
    awk '{ printf "%s %.2f %s\n", $1, $2 + $3, $4 }' "$WORK/time"
}

lathe_read() {
    if [ "$MODE" = worker ]; then
        local format=${1##*.}
        { printf '{"format": "%s", "pages": "all"}\n' "$format"; cat "$WORK/ws/$1"; } | "$WORKER"
        return
    fi
    local data
    data=$(mktemp -d "$WORK/data.XXXX")
    LATHE_DATA_DIR="$data" LATHE_CONFIG_DIR="$data/config" \
        "$LATHE" --workspace "$WORK/ws" tool read_document "{\"path\": \"$1\"}"
}

median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

# Runs "name command..." pairs alternately RUNS times; prints one table row per name.
compare() {
    local names=() i
    : >"$WORK/results"
    while [ $# -gt 0 ]; do
        names+=("$1")
        eval "cmd_$1=\"\$2\""
        shift 2
    done
    for name in "${names[@]}"; do eval "\$cmd_$name" >/dev/null 2>&1 || true; done
    for ((i = 0; i < RUNS; i++)); do
        for name in "${names[@]}"; do
            echo "$name $(eval "timed \$cmd_$name")" >>"$WORK/results"
        done
    done
    for name in "${names[@]}"; do
        local wall cpu peak
        wall=$(awk -v n="$name" '$1 == n { print $2 }' "$WORK/results" | median)
        cpu=$(awk -v n="$name" '$1 == n { print $3 }' "$WORK/results" | median)
        peak=$(awk -v n="$name" '$1 == n { print $4 }' "$WORK/results" | median)
        printf "| %s | %s s | %s s | %d MiB |\n" "$name" "$wall" "$cpu" $((peak / 1024))
        echo "$name $wall" >>"$WORK/walls"
    done
}

pdf_lathe() { lathe_read big.pdf; }
pdf_poppler() { pdftotext "$WORK/ws/big.pdf" "$WORK/big.txt"; }
docx_lathe() { lathe_read big.docx; }
export -f lathe_read pdf_lathe pdf_poppler docx_lathe
export WORK MODE LATHE WORKER

# Sanity: every page was read, and with text (pdftotext reads them all too).
if [ "$MODE" = worker ]; then
    pages=$(lathe_read big.pdf | python3 -c 'import json, sys; d = json.load(sys.stdin)["done"]; print(sum(1 for u in d["units"] if u["text"]))')
    [ "$pages" = 200 ] || { echo "the worker read $pages of 200 pages with text" >&2; exit 1; }
else
    lathe_read big.pdf | head -1 | grep -q "all 200 pages; 200 of 200 pages had text" ||
        { echo "read_document did not read all 200 pages" >&2; exit 1; }
fi

echo "inputs: big.pdf $(du -k "$WORK/ws/big.pdf" | cut -f1) KiB (200 pages), big.docx $(du -k "$WORK/ws/big.docx" | cut -f1) KiB"
echo
echo "| command | wall (median of $RUNS) | cpu | peak memory |"
echo "|---|---|---|---|"
: >"$WORK/walls"
compare read_document_pdf pdf_lathe pdftotext pdf_poppler
compare read_document_docx docx_lathe
lathe=$(awk '$1 == "read_document_pdf" { print $2 }' "$WORK/walls")
poppler=$(awk '$1 == "pdftotext" { print $2 }' "$WORK/walls")
echo
awk -v a="$lathe" -v b="$poppler" 'BEGIN { printf "PDF ratio (read_document / pdftotext, wall): %.2fx\n", a / b }'

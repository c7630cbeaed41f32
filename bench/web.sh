#!/usr/bin/env bash
# `web_fetch` on a generated 2 MB article page (navigation, sidebars, scripts and ~6,900
# paragraphs around the article), served from loopback: the whole `lathe tool web_fetch`
# process (fetch, charset, readability extraction and Markdown with dom_smoothie, the
# page kept for paging) against `curl` fetching the same bytes to a file, in the same run.
# One command; not part of CI.
#
#   bench/web.sh [RUNS]    RUNS timed runs per command (default 5)
#
# curl is the floor (the transfer alone), not a competitor: the ratio says what the
# extraction costs on top. Peak memory is the maximum resident set size from /usr/bin/time.
# No cache: every Lathe run gets a fresh data directory.
set -euo pipefail

RUNS=${1:-5}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
LATHE="$ROOT/target/release/lathe"
WORK=$(mktemp -d)
SERVER=""
cleanup() { [ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null; rm -rf "$WORK"; }
trap cleanup EXIT

missing=()
command -v curl >/dev/null || missing+=(curl)
[ -x /usr/bin/time ] || missing+=(time)
if [ ${#missing[@]} -gt 0 ]; then
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >&2
fi

echo "building lathe (release)" >&2
(cd "$ROOT" && cargo build --release -q -p lathe --bin lathe)

mkdir -p "$WORK/site" "$WORK/ws"
python3 - "$WORK/site/article.html" <<'PY'
import sys, random
random.seed(7)
words = ("the parser reads each token and keeps the state of the stream so that a call "
         "split across many pieces is still one call when it ends").split()
def sentence():
    return " ".join(random.choice(words) for _ in range(random.randint(8, 20))).capitalize() + "."
nav = "".join(f'<li><a href="/docs/{i}">Section {i}</a></li>' for i in range(400))
side = "".join(f'<div class="ad"><a href="/promo/{i}">Offer {i}</a></div>' for i in range(200))
body = []
for i in range(6900):
    if i % 40 == 0:
        body.append(f"<h2>Part {i // 40 + 1}</h2>")
    body.append("<p>" + " ".join(sentence() for _ in range(4)) + "</p>")
    if i % 150 == 0:
        body.append("<pre><code>fn main() {\n    println!(\"hello\");\n}</code></pre>")
page = (f"<!doctype html><html><head><meta charset=\"utf-8\"><title>Streaming parsers</title>"
        f"<script>{'var x=1;' * 2000}</script></head><body><header><nav><ul>{nav}</ul></nav></header>"
        f"<aside>{side}</aside><main><article><h1>Streaming parsers</h1>{''.join(body)}</article></main>"
        f"<footer>{nav}</footer></body></html>")
open(sys.argv[1], "w").write(page)
PY
SIZE=$(stat -c %s "$WORK/site/article.html")

PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
(cd "$WORK/site" && exec python3 -m http.server "$PORT" --bind 127.0.0.1 >/dev/null 2>&1) &
SERVER=$!
for _ in $(seq 50); do curl -fs -o /dev/null "http://127.0.0.1:$PORT/article.html" && break; sleep 0.1; done

URL="http://127.0.0.1:$PORT/article.html"
printf '[permissions]\nallow = ["fetch(127.0.0.1)"]\n[web]\nmax_bytes = 8388608\n' > "$WORK/config.toml"
CALL="{\"url\": \"$URL\"}"

lathe_run() {
    rm -rf "$WORK/data"
    LATHE_DATA_DIR="$WORK/data" LATHE_CONFIG_DIR="$WORK/cfg" \
        "$LATHE" --workspace "$WORK/ws" --config "$WORK/config.toml" tool web_fetch "$CALL" > "$WORK/out.md"
}
curl_run() { curl -fs -o "$WORK/curl.html" "$URL"; }

measure() { # NAME FUNCTION: prints "wall_s cpu_s maxrss_kb"
    /usr/bin/time -f "%e %U %S %M" -o "$WORK/t" bash -c "$(declare -f "$2" lathe_run curl_run); $2" >/dev/null
    awk '{ printf "%s %.3f %s\n", $1, $2 + $3, $4 }' "$WORK/t"
}
export WORK LATHE CALL URL
lathe_run; curl_run  # warm up
: > "$WORK/lathe.times"; : > "$WORK/curl.times"
for _ in $(seq "$RUNS"); do
    measure lathe lathe_run >> "$WORK/lathe.times"
    measure curl curl_run >> "$WORK/curl.times"
done
median() { sort -n -k"$2" "$1" | awk -v c="$2" '{ v[NR] = $c } END { print v[int((NR + 1) / 2)] }'; }
lw=$(median "$WORK/lathe.times" 1); lc=$(median "$WORK/lathe.times" 2); lm=$(sort -n -k3 "$WORK/lathe.times" | tail -1 | cut -d' ' -f3)
cw=$(median "$WORK/curl.times" 1); cc=$(median "$WORK/curl.times" 2); cm=$(sort -n -k3 "$WORK/curl.times" | tail -1 | cut -d' ' -f3)
lines=$(grep -c '' "$WORK/out.md" || true)
echo "page: $SIZE bytes of HTML; web_fetch's first result: $lines lines of Markdown"
head -c 300 "$WORK/out.md" | head -3 >&2 || true
printf '%-32s %10s %10s %12s\n' "command" "wall (s)" "cpu (s)" "peak RSS"
printf '%-32s %10s %10s %9d MiB\n' "lathe tool web_fetch" "$lw" "$lc" "$((lm / 1024))"
printf '%-32s %10s %10s %9d MiB\n' "curl (transfer only)" "$cw" "$cc" "$((cm / 1024))"
awk -v a="$lw" -v b="$cw" 'BEGIN { if (b > 0) printf "ratio (lathe / curl, wall): %.1fx\n", a / b }'
uptime

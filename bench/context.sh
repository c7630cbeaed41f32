#!/usr/bin/env bash
# How Lathe keeps a long session inside small windows. One command; not part of CI.
#
#   bench/context.sh
#
# It builds and runs `cargo bench --profile dev -p lathe-agent --bench context` (nothing is timed,
# so the debug build the tests use serves): a scripted
# model server on loopback plays a 40-turn task (each turn one read_file of a real file of 600
# to 9,000 characters) at windows of 4k, 8k and 32k tokens, each with the agent `lathe exec`
# builds (built-in and web tools, sub-agents, the prompt profile the window gets: compact at
# 16k and less), and once more at 8k with the full profile forced. Per run: the fixed part of
# every request (system prompt and tool definitions, estimated tokens), the largest request
# sent (prompt + reply cap; it must fit the window), the number of compactions, and the prefix
# reuse: the share of each request that is byte-identical to the start of the previous one,
# averaged over the turns with no compaction between them (target: at least 90%); beside it
# the share of the previous request kept, and the ceiling (the share of each request that is
# not new content, which no history could reuse).
#
# LATHE_BENCH_TURNS=1 bench/context.sh prints each request's reuse and what broke the prefix.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
exec cargo bench --profile dev -p lathe-agent --bench context "$@"

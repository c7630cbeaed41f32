#!/usr/bin/env bash
# How Lathe keeps a long session inside small windows. One command; not part of CI.
#
#   bench/context.sh
#
# It builds and runs `cargo bench --profile dev -p lathe-agent --bench context` (nothing is timed,
# so the debug build the tests use serves): a scripted
# model server on loopback plays a 40-turn task (each turn one read_file of a real file of 600
# to 9,000 characters) at windows of 4k, 8k and 32k tokens, with every built-in tool ("full")
# and with six core tools ("core"). Per run: the fixed part of every request (system prompt and
# tool definitions, estimated tokens), the largest request sent (prompt + reply cap; it must fit
# the window), the number of compactions, and the prefix reuse: the share of each request that
# is byte-identical to the start of the previous one, averaged over the turns with no
# compaction between them (target: at least 90%).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
exec cargo bench --profile dev -p lathe-agent --bench context "$@"

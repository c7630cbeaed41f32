#!/usr/bin/env bash
# The agent loop's own overhead per turn: everything Lathe does in a turn except waiting for the
# model and running the tools. One command; not part of CI.
#
#   bench/agent_loop.sh
#
# It builds and runs `cargo bench -p lathe-agent --bench agent_loop` (release profile): a
# scripted model server on loopback answers each turn at once with one tool call (alternately a
# file read and a shell command line, which the policy analyses), and the tools return at once.
# Per turn it times, on the loop's side, everything between two requests — the context check,
# building and encoding the request, decoding and scanning the streamed reply, the approval
# gate, the tool runner and its events — and subtracts the time spent awaiting the model
# server. Writing every event and message to SQLite on disk and encoding each event as JSON
# happen on the event sink's writer thread meanwhile, on the same cores; the whole run until
# the last event is stored and shown is reported per turn as well. Runs of 20 and 100 turns
# (the history, and so each request, grows with the turns); medians, means, p90 and max of the
# best of three runs. Target: under 5 ms per turn.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
exec cargo bench -p lathe-agent --bench agent_loop "$@"

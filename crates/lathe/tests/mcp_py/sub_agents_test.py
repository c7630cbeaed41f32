"""Sub-agents over `lathe mcp`, driven with the official MCP Python SDK.

Run by crates/lathe/tests/mcp_sub_agents.rs, one scenario per process, against the scripted
model server the test started (LATHE_TEST_MODEL_URL, LATHE_TEST_MODEL); the helpers are those
of client_test.py.
"""

from __future__ import annotations

import os

import anyio

from client_test import (
    WORKSPACE,
    check,
    connect,
    elicitation,
    is_error,
    main,
    names,
    processes_with,
    server,
    text,
    wait,
)

MODEL_URL = os.environ.get("LATHE_TEST_MODEL_URL", "")
MODEL = os.environ.get("LATHE_TEST_MODEL", "")
MARK = os.environ.get("LATHE_TEST_MARK", "")
AGENT_TOOLS = ["spawn_agent", "read_sub_agent"]


def with_model(*extra: str):
    return server("--model", MODEL, "--base-url", MODEL_URL, *extra)


async def not_offered_without_model() -> None:
    async with connect(server()) as conn:
        listed = names(await conn.list_tools())
        for name in AGENT_TOOLS:
            check(name not in listed, f"{name} offered without a model: {listed}")


async def foreground_with_progress() -> None:
    updates: list[str] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        updates.append(message or "")

    async with connect(with_model("--approval", "auto")) as conn:
        listed = names(await conn.list_tools())
        for name in AGENT_TOOLS:
            check(name in listed, f"{name} not offered with a model: {listed}")
        result = await conn.call("spawn_agent", {"task": "what does a.txt say?"}, progress=on_progress)
        check(not is_error(result), text(result))
        check(text(result).startswith("a.txt says alpha."), text(result))
        check('read_sub_agent with id="sub-1"' in text(result), text(result))
        joined = "\n".join(updates)
        check("sub-agent sub-1: read_file a.txt" in joined, f"progress: {updates}")
        check("sub-agent sub-1: finished" in joined, f"progress: {updates}")
        transcript = await conn.call("read_sub_agent", {"id": "sub-1"})
        check(not is_error(transcript), text(transcript))
        shown = text(transcript)
        # Numbered lines, as read_file shows a file.
        check("\t## user\n" in shown and "\tYou are sub-agent sub-1," in shown, shown)
        check('\t-> read_file {"path":"a.txt"}\n' in shown, shown)
        check("\t## result of read_file\n" in shown and "\ta.txt says alpha." in shown, shown)


async def approval_by_elicitation() -> None:
    seen: list[str] = []
    async with connect(with_model("--approval", "ask"), elicitation=elicitation("accept", seen)) as conn:
        result = await conn.call("spawn_agent", {"task": "write b.txt", "profile": "general"})
        check(not is_error(result), text(result))
        # The call that ran the child is a checkpoint holding what the child changed.
        checkpoints = text(await conn.call("checkpoint_list", {}))
        check("  b.txt +1 -0" in checkpoints, checkpoints)
    check(len(seen) == 1, f"the client was asked {seen}")
    check("[sub-agent sub-1: write b.txt]" in seen[0], f"the question names the child: {seen[0]!r}")
    check("write_file" in seen[0], seen[0])
    with open(os.path.join(WORKSPACE, "b.txt")) as f:
        check(f.read() == "beta\n", "the child's approved write")


async def denied_reaches_the_child() -> None:
    seen: list[str] = []
    async with connect(with_model("--approval", "ask"), elicitation=elicitation("decline", seen)) as conn:
        result = await conn.call("spawn_agent", {"task": "write b.txt", "profile": "general"})
        check(not is_error(result), text(result))
        check(text(result).startswith("I was not allowed to write b.txt."), text(result))
        transcript = text(await conn.call("read_sub_agent", {"id": "sub-1"}))
        check("## result of write_file\n" in transcript and "denied" in transcript, transcript)
    check(len(seen) == 1, f"the client was asked {seen}")
    check(not os.path.exists(os.path.join(WORKSPACE, "b.txt")), "the declined write happened")


async def cancel_stops_the_child() -> None:
    async with connect(with_model("--approval", "auto")) as conn:
        with anyio.fail_after(60):
            await conn.cancel_while_running(
                "spawn_agent",
                {"task": "wait", "profile": "general"},
                lambda: processes_with(MARK),
            )
        await wait(lambda: not processes_with(MARK), "the cancelled child's command is gone")
        # The session keeps serving; the stopped child's transcript is readable once it ended.
        for _ in range(300):
            shown = text(await conn.call("read_sub_agent", {"id": "sub-1"}))
            if "-> shell" in shown:
                break
            await anyio.sleep(0.1)
        check("-> shell" in shown, shown)


SCENARIOS = {
    "not_offered_without_model": not_offered_without_model,
    "foreground_with_progress": foreground_with_progress,
    "approval_by_elicitation": approval_by_elicitation,
    "denied_reaches_the_child": denied_reaches_the_child,
    "cancel_stops_the_child": cancel_stops_the_child,
}

if __name__ == "__main__":
    main(SCENARIOS)

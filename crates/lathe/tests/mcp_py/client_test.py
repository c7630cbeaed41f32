"""Drives `lathe mcp` with the official MCP Python SDK (`pip install mcp`).

Run by crates/lathe/tests/mcp_python.rs, one scenario per process:

    LATHE_BIN=... LATHE_TEST_WORKSPACE=... python3 client_test.py SCENARIO

Every scenario talks to a real `lathe mcp` child over stdio (or streamable HTTP), prints `ok`
and exits 0, or raises. Process checks scan /proc for a marker that only the scenario's own
commands carry.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import uuid
from typing import Any

import anyio
import mcp_types as types
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError

LATHE = os.environ["LATHE_BIN"]
WORKSPACE = os.environ["LATHE_TEST_WORKSPACE"]
DEADLINE = 30.0


def server(*extra: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=LATHE,
        args=["mcp", "--workspace", WORKSPACE, *extra],
        env={k: v for k, v in os.environ.items() if k.startswith(("LATHE_", "PATH", "HOME"))},
    )


def text(result: types.CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, types.TextContent))


def check(condition: bool, message: str) -> None:
    if not condition:
        raise AssertionError(message)


def marker() -> str:
    # A number that appears in the command line of the shell and of `sleep` itself.
    return f"{uuid.uuid4().int % 10**9}.{uuid.uuid4().int % 10**6 + 1}"


def processes_with(mark: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read()
            with open(f"/proc/{entry}/stat", "rb") as f:
                state = f.read().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        if mark.encode() in cmdline and state != b"Z":
            found.append(int(entry))
    return found


def wait_until(predicate, what: str) -> None:
    deadline = time.monotonic() + DEADLINE
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting until {what}")


def command_id(result: types.CallToolResult) -> str:
    structured = result.structured_content or {}
    for key in ("id", "command_id", "commandId"):
        if isinstance(structured.get(key), (str, int)):
            return str(structured[key])
    found = re.search(r"\b(cmd[-_]?\d+)\b", text(result))
    check(found is not None, f"no command id in the shell result: {text(result)!r} {structured!r}")
    return found.group(1)


async def call(client: Client, name: str, arguments: dict[str, Any]) -> types.CallToolResult:
    return await client.call_tool(name, arguments)


# --- scenarios --------------------------------------------------------------------------------


async def initialize_and_list() -> None:
    definitions = json.loads(subprocess.run([LATHE, "tools", "--json"], check=True, capture_output=True).stdout)
    expected = [d["function"] for d in definitions]
    async with Client(server(), mode="legacy") as client:
        check(client.server_info is not None and client.server_info.name == "lathe", f"server info {client.server_info}")
        check(client.protocol_version in ("2025-11-25", "2025-06-18"), f"negotiated {client.protocol_version}")
        check(client.server_capabilities.tools is not None, "tools capability")
        listed = (await client.list_tools()).tools
    check([t.name for t in listed] == [d["name"] for d in expected], f"names {[t.name for t in listed]}")
    for tool, definition in zip(listed, expected):
        check(tool.input_schema == definition["parameters"], f"schema of {tool.name} differs")
        check(tool.description == definition["description"], f"description of {tool.name} differs")
        annotations = tool.annotations
        check(annotations is not None, f"{tool.name} has no annotations")
        for hint in ("read_only_hint", "destructive_hint", "idempotent_hint", "open_world_hint"):
            check(isinstance(getattr(annotations, hint), bool), f"{tool.name}: {hint} not set")
        check(bool(tool.title), f"{tool.name} has no title")
    by_name = {t.name: t for t in listed}
    for reader in ("read_file", "grep", "glob", "list_files"):
        if reader in by_name:
            check(by_name[reader].annotations.read_only_hint is True, f"{reader} should be read-only")
    for writer in ("write_file", "edit_file", "shell"):
        if writer in by_name:
            check(by_name[writer].annotations.read_only_hint is False, f"{writer} should not be read-only")


async def modern_lifecycle() -> None:
    """The SDK's default: `server/discover`, then self-contained requests (2026-07-28)."""
    with open(os.path.join(WORKSPACE, "modern.txt"), "w") as f:
        f.write("discovered\n")
    async with Client(server()) as client:
        check(client.protocol_version == "2026-07-28", f"negotiated {client.protocol_version}")
        names = [t.name for t in (await client.list_tools()).tools]
        check("read_file" in names, f"tools {names}")
        result = await call(client, "read_file", {"path": "modern.txt"})
        check(not result.is_error and "discovered" in text(result), text(result))


async def read_and_edit() -> None:
    path = os.path.join(WORKSPACE, "notes.txt")
    with open(path, "w") as f:
        f.write("alpha\nbeta\ngamma\n")
    async with Client(server(), mode="legacy") as client:
        read = await call(client, "read_file", {"path": "notes.txt"})
        check(not read.is_error, text(read))
        check("beta" in text(read), text(read))
        edited = await call(client, "edit_file", {"path": "notes.txt", "old_string": "beta", "new_string": "BETA"})
        check(not edited.is_error, text(edited))
        with open(path) as f:
            check(f.read() == "alpha\nBETA\ngamma\n", "the file was not edited")
        missing = await call(client, "read_file", {"path": "no/such/file.txt"})
        check(missing.is_error, "reading a missing file should be an error result")
        try:
            await call(client, "no_such_tool", {})
        except MCPError as err:
            check("read_file" in str(err) or "tools are" in str(err), str(err))
        else:
            raise AssertionError("an unknown tool should be a protocol error")


async def shell_background() -> None:
    mark = marker()
    async with Client(server(), mode="legacy") as client:
        # A soft timeout moves the command to the background instead of killing it.
        started = await call(client, "shell", {"command": f"echo started-{mark}; sleep {mark}", "timeout": 1})
        check(not started.is_error, text(started))
        ident = command_id(started)
        wait_until(lambda: processes_with(mark), "the command runs")
        output = await call(client, "command_output", {"id": ident})
        check(f"started-{mark}" in text(output), text(output))
        listed = await call(client, "list_commands", {})
        check(ident in text(listed), text(listed))
        killed = await call(client, "kill_command", {"id": ident})
        check(not killed.is_error, text(killed))
        wait_until(lambda: not processes_with(mark), "the killed command is gone")

        # The same with `background: true`.
        mark = marker()
        started = await call(client, "shell", {"command": f"echo bg-{mark}; sleep {mark}", "background": True})
        check(not started.is_error, text(started))
        ident = command_id(started)
        wait_until(lambda: processes_with(mark), "the background command runs")
        killed = await call(client, "kill_command", {"id": ident})
        check(not killed.is_error, text(killed))
        wait_until(lambda: not processes_with(mark), "the killed background command is gone")


async def denied_read_only() -> None:
    with open(os.path.join(WORKSPACE, "keep.txt"), "w") as f:
        f.write("unchanged\n")
    async with Client(server("--approval", "read-only"), mode="legacy") as client:
        result = await call(client, "write_file", {"path": "keep.txt", "content": "overwritten\n"})
        check(result.is_error, "a write in read-only mode must be refused")
        check("read-only" in text(result) and "--approval" in text(result), text(result))
        read = await call(client, "read_file", {"path": "keep.txt"})
        check(not read.is_error, text(read))
    with open(os.path.join(WORKSPACE, "keep.txt")) as f:
        check(f.read() == "unchanged\n", "the file changed")


async def denied_by_rule() -> None:
    """A deny rule refuses whatever the mode; the model reads why."""
    config = os.path.join(WORKSPACE, "..", "deny.toml")
    with open(config, "w") as f:
        f.write('[permissions]\ndeny = ["shell(touch *)", "tool(write_file)"]\n')
    async with Client(server("--approval", "full", "--config", config), mode="legacy") as client:
        refused = await call(client, "shell", {"command": "echo hi && touch denied.txt"})
        check(refused.is_error, "a denied command must be refused")
        check("touch" in text(refused) and "denied" in text(refused).lower(), text(refused))
        refused = await call(client, "write_file", {"path": "denied2.txt", "content": "x"})
        check(refused.is_error, "a denied tool must be refused")
        allowed = await call(client, "shell", {"command": "echo allowed-here"})
        check(not allowed.is_error and "allowed-here" in text(allowed), text(allowed))
    for name in ("denied.txt", "denied2.txt"):
        check(not os.path.exists(os.path.join(WORKSPACE, name)), f"{name} was created")


async def ask_without_elicitation() -> None:
    async with Client(server("--approval", "ask"), mode="legacy") as client:
        result = await call(client, "write_file", {"path": "asked.txt", "content": "x\n"})
        check(result.is_error, "an asking call must be refused when the client cannot be asked")
        check("[permissions]" in text(result) and "--approval" in text(result), text(result))
    check(not os.path.exists(os.path.join(WORKSPACE, "asked.txt")), "the refused write happened")


def elicitation(answer: str, seen: list[str]):
    async def callback(context, params):
        seen.append(params.message)
        if answer == "accept":
            return types.ElicitResult(action="accept", content={"remember": False})
        return types.ElicitResult(action=answer)

    return callback


async def ask_with_elicitation(mode: str) -> None:
    for answer in ("accept", "decline"):
        seen: list[str] = []
        name = f"elicited-{answer}-{mode}.txt"
        async with Client(server("--approval", "ask"), mode=mode, elicitation_callback=elicitation(answer, seen)) as client:
            result = await call(client, "write_file", {"path": name, "content": "yes\n"})
        check(len(seen) == 1 and "write_file" in seen[0], f"the client was asked {seen}")
        check("+yes" in seen[0], f"the question shows the diff: {seen[0]!r}")
        exists = os.path.exists(os.path.join(WORKSPACE, name))
        if answer == "accept":
            check(not result.is_error and exists, text(result))
        else:
            check(result.is_error and not exists, text(result))
            check("denied" in text(result), text(result))


async def elicitation_legacy() -> None:
    await ask_with_elicitation("legacy")


async def elicitation_modern() -> None:
    await ask_with_elicitation("auto")


async def cancel_running_call(mode: str = "legacy") -> None:
    mark = marker()
    async with Client(server(), mode=mode) as client:
        with anyio.move_on_after(60) as outer:
            async with anyio.create_task_group() as group:

                async def long_call() -> None:
                    await call(client, "shell", {"command": f"sleep {mark}", "timeout": 3600})

                group.start_soon(long_call)
                await anyio.to_thread.run_sync(wait_until, lambda: processes_with(mark), "the command runs")
                # Cancelling the caller sends notifications/cancelled.
                group.cancel_scope.cancel()
        check(not outer.cancelled_caught, "the call did not start")
        await anyio.to_thread.run_sync(wait_until, lambda: not processes_with(mark), "the cancelled command is gone")
        # The server keeps serving.
        result = await call(client, "list_commands", {})
        check(not result.is_error, text(result))


async def disconnect_kills_background(mode: str = "legacy") -> None:
    mark = marker()
    async with Client(server(), mode=mode) as client:
        started = await call(client, "shell", {"command": f"sleep {mark}", "background": True})
        check(not started.is_error, text(started))
        await anyio.to_thread.run_sync(wait_until, lambda: processes_with(mark), "the background command runs")
    await anyio.to_thread.run_sync(wait_until, lambda: not processes_with(mark), "no process is left behind")


async def progress_notifications() -> None:
    updates: list[tuple[float, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        updates.append((progress, message))

    script = "for i in 1 2 3 4 5; do echo tick-$i; sleep 0.3; done"
    async with Client(server(), mode="legacy") as client:
        result = await client.call_tool("shell", {"command": script, "timeout": 60}, progress_callback=on_progress)
    check(not result.is_error, text(result))
    check(len(updates) >= 1, "no progress notifications")
    values = [p for p, _ in updates]
    check(values == sorted(values) and len(set(values)) == len(values), f"progress must increase: {values}")
    check(any(m and "tick-" in m for _, m in updates), f"progress carries output: {updates}")


async def streamable_http() -> None:
    child = subprocess.Popen(
        [LATHE, "mcp", "--workspace", WORKSPACE, "--listen", "127.0.0.1:0"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        url = None
        deadline = time.monotonic() + DEADLINE
        while url is None and time.monotonic() < deadline:
            line = child.stderr.readline()
            found = re.search(r"listening on (http://\S+)", line or "")
            if found:
                url = found.group(1)
            elif not line and child.poll() is not None:
                raise AssertionError(f"lathe mcp --listen exited with {child.returncode}")
        check(url is not None, "no listening address on stderr")
        with open(os.path.join(WORKSPACE, "http.txt"), "w") as f:
            f.write("over http\n")
        for mode in ("legacy", "auto"):
            mark = marker()
            async with Client(url, mode=mode) as client:
                names = [t.name for t in (await client.list_tools()).tools]
                check("read_file" in names, f"tools {names}")
                result = await call(client, "read_file", {"path": "http.txt"})
                check(not result.is_error and "over http" in text(result), text(result))
                started = await call(client, "shell", {"command": f"sleep {mark}", "background": True})
                check(not started.is_error, text(started))
                ident = command_id(started)
                listed = await call(client, "list_commands", {})
                check(ident in text(listed), f"the background command belongs to the session: {text(listed)}")
                await anyio.to_thread.run_sync(wait_until, lambda: processes_with(mark), "the command runs")
            if mode == "legacy":
                # Closing an HTTP session ends its Lathe session.
                await anyio.to_thread.run_sync(wait_until, lambda: not processes_with(mark), "the session's command is gone")
        child.terminate()
        child.wait(timeout=DEADLINE)
        # Stopping the server ends the shared session of stateless requests.
        await anyio.to_thread.run_sync(wait_until, lambda: not processes_with(mark), "no process is left behind")
    finally:
        child.terminate()
        child.wait(timeout=DEADLINE)


SCENARIOS = {
    "initialize_and_list": initialize_and_list,
    "modern_lifecycle": modern_lifecycle,
    "read_and_edit": read_and_edit,
    "shell_background": shell_background,
    "denied_read_only": denied_read_only,
    "denied_by_rule": denied_by_rule,
    "ask_without_elicitation": ask_without_elicitation,
    "elicitation_legacy": elicitation_legacy,
    "elicitation_modern": elicitation_modern,
    "cancel_running_call": cancel_running_call,
    "cancel_running_call_modern": lambda: cancel_running_call("auto"),
    "disconnect_kills_background": disconnect_kills_background,
    "disconnect_kills_background_modern": lambda: disconnect_kills_background("auto"),
    "progress_notifications": progress_notifications,
    "streamable_http": streamable_http,
}

if __name__ == "__main__":
    name = sys.argv[1]
    anyio.run(SCENARIOS[name])
    print("ok")

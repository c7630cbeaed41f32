"""Drives `lathe mcp` with the official MCP Python SDK (`pip install mcp`).

Run by crates/lathe/tests/mcp_python.rs, one scenario per process:

    LATHE_BIN=... LATHE_TEST_WORKSPACE=... python3 client_test.py SCENARIO

Every scenario talks to a real `lathe mcp` child over stdio (or streamable HTTP), prints `ok`
and exits 0, or raises. Process checks scan /proc for a marker that only the scenario's own
commands carry.

Works with the SDK's 1.x line (`ClientSession`, handshake protocol versions only) and its 2.x
line (`Client`, also the 2026-07-28 lifecycle); results are compared in their wire shape
(`isError`, `structuredContent`, `inputSchema`, ...), which both lines produce. Scenarios of the
2026-07-28 lifecycle say SKIPPED loudly on 1.x.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import uuid
from contextlib import asynccontextmanager
from typing import Any, AsyncIterator

import anyio
from mcp import StdioServerParameters

try:  # mcp >= 2
    import mcp_types as types
    from mcp import Client
    from mcp.shared.exceptions import MCPError as ProtocolError

    SDK = 2
except ImportError:  # mcp 1.x
    import mcp.types as types
    from mcp import ClientSession
    from mcp.client.stdio import stdio_client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared.exceptions import McpError as ProtocolError

    SDK = 1

LATHE = os.environ["LATHE_BIN"]
WORKSPACE = os.environ["LATHE_TEST_WORKSPACE"]
DEADLINE = 30.0
HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")


class Skip(Exception):
    """The installed SDK cannot run this scenario."""


def server(*extra: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=LATHE,
        args=["mcp", "--workspace", WORKSPACE, *extra],
        env={k: v for k, v in os.environ.items() if k.startswith(("LATHE_", "PATH", "HOME"))},
    )


def wire(model: Any) -> dict[str, Any]:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


class Conn:
    """One connection, whatever the SDK line: results come back as wire-shaped dicts."""

    def __init__(self, session: Any, server_info: dict[str, Any], protocol_version: str, capabilities: dict[str, Any]):
        self.session = session
        self.server_info = server_info
        self.protocol_version = protocol_version
        self.capabilities = capabilities

    async def list_tools(self) -> list[dict[str, Any]]:
        return [wire(tool) for tool in (await self.session.list_tools()).tools]

    async def call(self, name: str, arguments: dict[str, Any], progress=None) -> dict[str, Any]:
        result = await self.session.call_tool(name, arguments, progress_callback=progress)
        return wire(result)

    async def cancel_while_running(self, name: str, arguments: dict[str, Any], running) -> None:
        """Starts the call, waits until `running()` is true, then cancels it the way the SDK
        does (2.x sends `notifications/cancelled` when the caller gives up; 1.x does not, so it
        is sent by hand with the request's id)."""
        request_id = getattr(self.session, "_request_id", None) if SDK == 1 else None
        async with anyio.create_task_group() as group:

            async def long_call() -> None:
                await self.session.call_tool(name, arguments)

            group.start_soon(long_call)
            await anyio.to_thread.run_sync(wait_until, running, "the command runs")
            if SDK == 1:
                await self.session.send_notification(
                    types.ClientNotification(
                        types.CancelledNotification(
                            params=types.CancelledNotificationParams(requestId=request_id, reason="test")
                        )
                    )
                )
            group.cancel_scope.cancel()


@asynccontextmanager
async def connect(
    target: StdioServerParameters | str, mode: str = "legacy", elicitation=None, messages=None
) -> AsyncIterator[Conn]:
    if SDK >= 2:
        options = {"elicitation_callback": elicitation} if elicitation else {}
        if messages:
            options["message_handler"] = messages
        async with Client(target, mode=mode, **options) as client:
            info = client.server_info
            yield Conn(
                client,
                wire(info) if info else {},
                client.protocol_version,
                wire(client.server_capabilities),
            )
        return
    if mode != "legacy":
        raise Skip(f"mcp {SDK}.x has no {mode!r} lifecycle (2026-07-28); install mcp>=2 to run this")
    transport = streamable_http_client(target) if isinstance(target, str) else stdio_client(target)
    async with transport as streams:
        read, write = streams[0], streams[1]
        async with ClientSession(read, write, elicitation_callback=elicitation, message_handler=messages) as session:
            init = await session.initialize()
            yield Conn(session, wire(init.serverInfo), init.protocolVersion, wire(init.capabilities))


def text(result: dict[str, Any]) -> str:
    return "\n".join(block.get("text", "") for block in result.get("content", []) if block.get("type") == "text")


def is_error(result: dict[str, Any]) -> bool:
    return bool(result.get("isError"))


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


async def wait(predicate, what: str) -> None:
    await anyio.to_thread.run_sync(wait_until, predicate, what)


def command_id(result: dict[str, Any]) -> str:
    structured = result.get("structuredContent") or {}
    for key in ("command_id", "id"):
        if isinstance(structured.get(key), (str, int)):
            return str(structured[key])
    found = re.search(r"\b(cmd[-_]?\d+)\b", text(result))
    check(found is not None, f"no command id in the shell result: {text(result)!r} {structured!r}")
    return found.group(1)


# --- scenarios --------------------------------------------------------------------------------


async def initialize_and_list() -> None:
    definitions = json.loads(subprocess.run([LATHE, "tools", "--json"], check=True, capture_output=True).stdout)
    # The agent tools (spawn_agent, read_sub_agent) are offered only when a model is configured.
    expected = [d["function"] for d in definitions if not d.get("agent_tool")]
    async with connect(server()) as conn:
        check(conn.server_info.get("name") == "lathe", f"server info {conn.server_info}")
        check(bool(conn.server_info.get("version")), f"server version {conn.server_info}")
        check(conn.protocol_version in HANDSHAKE_VERSIONS, f"negotiated {conn.protocol_version}")
        check("tools" in conn.capabilities, f"tools capability {conn.capabilities}")
        listed = await conn.list_tools()
    # `resolve` is listed only while a previewed change is pending in the session.
    # `web_search` only when a search backend is configured ([web] search_url; none here).
    expected = [d for d in expected if d["name"] not in ("resolve", "web_search")]
    # `lathe mcp` alone adds the checkpoint tools (the model of exec and chat has lathe undo).
    own = [t["name"] for t in listed if t["name"].startswith("checkpoint_")]
    check(own == ["checkpoint_list", "checkpoint_restore"], f"checkpoint tools {own}")
    listed = [t for t in listed if t["name"] not in own]
    check([t["name"] for t in listed] == [d["name"] for d in expected], f"names {[t['name'] for t in listed]}")
    for tool, definition in zip(listed, expected):
        check(tool["inputSchema"] == definition["parameters"], f"schema of {tool['name']} differs")
        check(tool.get("description") == definition["description"], f"description of {tool['name']} differs")
        check(bool(tool.get("title")), f"{tool['name']} has no title")
        annotations = tool.get("annotations") or {}
        for hint in ("readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"):
            check(isinstance(annotations.get(hint), bool), f"{tool['name']}: {hint} not set: {annotations}")
        check("outputSchema" not in tool, f"{tool['name']} declares an output schema")
    by_name = {t["name"]: t for t in listed}
    for reader in ("read_file", "grep", "glob", "list_files"):
        if reader in by_name:
            check(by_name[reader]["annotations"]["readOnlyHint"] is True, f"{reader} should be read-only")
    for writer in ("write_file", "edit_file", "shell"):
        if writer in by_name:
            check(by_name[writer]["annotations"]["readOnlyHint"] is False, f"{writer} should not be read-only")


async def modern_lifecycle() -> None:
    """The 2.x SDK's default: `server/discover`, then self-contained requests (2026-07-28)."""
    with open(os.path.join(WORKSPACE, "modern.txt"), "w") as f:
        f.write("discovered\n")
    async with connect(server(), mode="auto") as conn:
        check(conn.protocol_version == "2026-07-28", f"negotiated {conn.protocol_version}")
        names = [t["name"] for t in await conn.list_tools()]
        check("read_file" in names, f"tools {names}")
        result = await conn.call("read_file", {"path": "modern.txt"})
        check(not is_error(result) and "discovered" in text(result), text(result))


async def read_and_edit() -> None:
    path = os.path.join(WORKSPACE, "notes.txt")
    with open(path, "w") as f:
        f.write("alpha\nbeta\ngamma\n")
    async with connect(server()) as conn:
        read = await conn.call("read_file", {"path": "notes.txt"})
        check(not is_error(read) and "beta" in text(read), text(read))
        edited = await conn.call("edit_file", {"path": "notes.txt", "old_string": "beta", "new_string": "BETA"})
        check(not is_error(edited), text(edited))
        with open(path) as f:
            check(f.read() == "alpha\nBETA\ngamma\n", "the file was not edited")
        missing = await conn.call("read_file", {"path": "no/such/file.txt"})
        check(is_error(missing), "reading a missing file should be an error result")
        try:
            await conn.call("no_such_tool", {})
        except ProtocolError as err:
            check("read_file" in str(err) or "tools are" in str(err), str(err))
        else:
            raise AssertionError("an unknown tool should be a protocol error")


async def shell_background() -> None:
    mark = marker()
    async with connect(server()) as conn:
        # A soft timeout moves the command to the background instead of killing it.
        started = await conn.call("shell", {"command": f"echo started-{mark}; sleep {mark}", "timeout": 1})
        check(not is_error(started), text(started))
        ident = command_id(started)
        await wait(lambda: processes_with(mark), "the command runs")
        output = await conn.call("command_output", {"id": ident})
        check(f"started-{mark}" in text(output), text(output))
        listed = await conn.call("list_commands", {})
        check(ident in text(listed), text(listed))
        killed = await conn.call("kill_command", {"id": ident})
        check(not is_error(killed), text(killed))
        await wait(lambda: not processes_with(mark), "the killed command is gone")

        # The same with `background: true`.
        mark = marker()
        started = await conn.call("shell", {"command": f"echo bg-{mark}; sleep {mark}", "background": True})
        check(not is_error(started), text(started))
        ident = command_id(started)
        await wait(lambda: processes_with(mark), "the background command runs")
        killed = await conn.call("kill_command", {"id": ident})
        check(not is_error(killed), text(killed))
        await wait(lambda: not processes_with(mark), "the killed background command is gone")


async def denied_read_only() -> None:
    with open(os.path.join(WORKSPACE, "keep.txt"), "w") as f:
        f.write("unchanged\n")
    async with connect(server("--approval", "read-only")) as conn:
        result = await conn.call("write_file", {"path": "keep.txt", "content": "overwritten\n"})
        check(is_error(result), "a write in read-only mode must be refused")
        check("read-only" in text(result) and "--approval" in text(result), text(result))
        read = await conn.call("read_file", {"path": "keep.txt"})
        check(not is_error(read), text(read))
    with open(os.path.join(WORKSPACE, "keep.txt")) as f:
        check(f.read() == "unchanged\n", "the file changed")


async def denied_by_rule() -> None:
    """A deny rule refuses whatever the mode; the model reads why."""
    config = os.path.join(WORKSPACE, "..", "deny.toml")
    with open(config, "w") as f:
        f.write('[permissions]\ndeny = ["shell(touch *)", "tool(write_file)"]\n')
    async with connect(server("--approval", "full", "--config", config)) as conn:
        refused = await conn.call("shell", {"command": "echo hi && touch denied.txt"})
        check(is_error(refused), "a denied command must be refused")
        check("touch" in text(refused) and "denied" in text(refused).lower(), text(refused))
        refused = await conn.call("write_file", {"path": "denied2.txt", "content": "x"})
        check(is_error(refused), "a denied tool must be refused")
        allowed = await conn.call("shell", {"command": "echo allowed-here"})
        check(not is_error(allowed) and "allowed-here" in text(allowed), text(allowed))
    for name in ("denied.txt", "denied2.txt"):
        check(not os.path.exists(os.path.join(WORKSPACE, name)), f"{name} was created")


async def ask_without_elicitation() -> None:
    async with connect(server("--approval", "ask")) as conn:
        result = await conn.call("write_file", {"path": "asked.txt", "content": "x\n"})
        check(is_error(result), "an asking call must be refused when the client cannot be asked")
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
        async with connect(server("--approval", "ask"), mode=mode, elicitation=elicitation(answer, seen)) as conn:
            result = await conn.call("write_file", {"path": name, "content": "yes\n"})
        check(len(seen) == 1 and "write_file" in seen[0], f"the client was asked {seen}")
        check("+yes" in seen[0], f"the question shows the diff: {seen[0]!r}")
        exists = os.path.exists(os.path.join(WORKSPACE, name))
        if answer == "accept":
            check(not is_error(result) and exists, text(result))
        else:
            check(is_error(result) and not exists, text(result))
            check("denied" in text(result), text(result))


async def cancel_running_call(mode: str = "legacy") -> None:
    mark = marker()
    async with connect(server(), mode=mode) as conn:
        with anyio.fail_after(60):
            await conn.cancel_while_running(
                "shell", {"command": f"sleep {mark}", "timeout": 3600}, lambda: processes_with(mark)
            )
        await wait(lambda: not processes_with(mark), "the cancelled command is gone")
        # The server keeps serving.
        result = await conn.call("list_commands", {})
        check(not is_error(result), text(result))


async def disconnect_kills_background(mode: str = "legacy") -> None:
    mark = marker()
    async with connect(server(), mode=mode) as conn:
        started = await conn.call("shell", {"command": f"sleep {mark}", "background": True})
        check(not is_error(started), text(started))
        await wait(lambda: processes_with(mark), "the background command runs")
    await wait(lambda: not processes_with(mark), "no process is left behind")


async def progress_notifications() -> None:
    updates: list[tuple[float, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        updates.append((progress, message))

    script = "for i in 1 2 3 4 5; do echo tick-$i; sleep 0.3; done"
    async with connect(server()) as conn:
        result = await conn.call("shell", {"command": script, "timeout": 60}, progress=on_progress)
    check(not is_error(result), text(result))
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
        modes = ("legacy", "auto") if SDK >= 2 else ("legacy",)
        for mode in modes:
            mark = marker()
            async with connect(url, mode=mode) as conn:
                names = [t["name"] for t in await conn.list_tools()]
                check("read_file" in names, f"tools {names}")
                result = await conn.call("read_file", {"path": "http.txt"})
                check(not is_error(result) and "over http" in text(result), text(result))
                started = await conn.call("shell", {"command": f"sleep {mark}", "background": True})
                check(not is_error(started), text(started))
                ident = command_id(started)
                listed = await conn.call("list_commands", {})
                check(ident in text(listed), f"the background command belongs to the session: {text(listed)}")
                await wait(lambda: processes_with(mark), "the command runs")
            if mode == "legacy":
                # Closing an HTTP session ends its Lathe session.
                await wait(lambda: not processes_with(mark), "the session's command is gone")
        child.terminate()
        child.wait(timeout=DEADLINE)
        # Stopping the server ends the shared session of stateless requests.
        await wait(lambda: not processes_with(mark), "no process is left behind")
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(timeout=DEADLINE)


# --- pending actions (a preview waits for `resolve`) ---------------------------------------------

NOTHING_PENDING = "No pending action to resolve. Nothing to apply or discard."
PREVIEW = {"patch": "*** Begin Patch\n*** Add File: a.txt\n+hi\n*** End Patch", "preview": True}


def notifications(seen: list[str]):
    """A message handler that records the method of each server notification."""

    async def handler(message) -> None:
        method = getattr(message, "method", None) or getattr(getattr(message, "root", None), "method", None)
        if isinstance(method, str):
            seen.append(method)
        else:
            await anyio.lowlevel.checkpoint()

    return handler


def names(tools: list[dict[str, Any]]) -> list[str]:
    return [t["name"] for t in tools]


async def resolve_offered_only_while_pending() -> None:
    """Nothing pending: `resolve` is not listed, answers that nothing waits, and the server says
    that its list of tools changes."""
    async with connect(server()) as conn:
        tools = conn.capabilities.get("tools") or {}
        check(tools.get("listChanged") is True, f"tools capability {conn.capabilities}")
        check("resolve" not in names(await conn.list_tools()), "resolve is listed with nothing pending")
        result = await conn.call("resolve", {"action": "apply"})
        check(is_error(result) and text(result) == NOTHING_PENDING, text(result))


def listen() -> tuple[subprocess.Popen, str]:
    child = subprocess.Popen(
        [LATHE, "mcp", "--workspace", WORKSPACE, "--listen", "127.0.0.1:0"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + DEADLINE
    while time.monotonic() < deadline:
        line = child.stderr.readline()
        found = re.search(r"listening on (http://\S+)", line or "")
        if found:
            return child, found.group(1)
        if not line and child.poll() is not None:
            raise AssertionError(f"lathe mcp --listen exited with {child.returncode}")
    child.kill()
    raise AssertionError("no listening address on stderr")


async def pending_per_session() -> None:
    """Two MCP sessions of one server: a preview in one waits there alone; `resolve` applies it
    there, and `tools/list_changed` tells that session when `resolve` comes and goes."""
    child, url = listen()
    target = os.path.join(WORKSPACE, "a.txt")
    try:
        seen: list[str] = []
        async with connect(url, messages=notifications(seen)) as one, connect(url) as other:
            preview = await one.call("apply_patch", PREVIEW)
            check(not is_error(preview), text(preview))
            check(not os.path.exists(target), "a preview wrote the file")
            await wait(lambda: "notifications/tools/list_changed" in seen, "list_changed after the preview")
            check("resolve" in names(await one.list_tools()), "resolve is not listed where a change waits")
            check("resolve" not in names(await other.list_tools()), "resolve is listed in the other session")
            elsewhere = await other.call("resolve", {"action": "apply"})
            check(is_error(elsewhere) and text(elsewhere) == NOTHING_PENDING, text(elsewhere))
            check(not os.path.exists(target), "the other session applied the preview")
            applied = await one.call("resolve", {"action": "apply"})
            check(not is_error(applied), text(applied))
            with open(target) as f:
                check(f.read() == "hi\n", "the applied file")
            await wait(lambda: seen.count("notifications/tools/list_changed") >= 2, "list_changed after resolve")
            check("resolve" not in names(await one.list_tools()), "resolve is listed with nothing pending")
    finally:
        child.terminate()
        child.wait(timeout=DEADLINE)


async def pending_apply_asks() -> None:
    """In `ask`, `resolve apply` is the preview's own write: the client is asked with its diff, a
    decline leaves it pending, and a client that cannot be asked is refused."""
    target = os.path.join(WORKSPACE, "a.txt")
    for answer in ("decline", "accept"):
        seen: list[str] = []
        async with connect(server("--approval", "ask"), elicitation=elicitation(answer, seen)) as conn:
            preview = await conn.call("apply_patch", PREVIEW)
            check(not is_error(preview), text(preview))
            check(seen == [], f"a preview was asked about: {seen}")
            result = await conn.call("resolve", {"action": "apply"})
            check(len(seen) == 1 and "+hi" in seen[0], f"the question shows the diff: {seen}")
            if answer == "accept":
                check(not is_error(result) and os.path.exists(target), text(result))
            else:
                check(is_error(result) and not os.path.exists(target), text(result))
                check("resolve" in names(await conn.list_tools()), "a declined apply left nothing pending")
    os.remove(target)
    async with connect(server("--approval", "ask")) as conn:
        preview = await conn.call("apply_patch", PREVIEW)
        check(not is_error(preview), text(preview))
        refused = await conn.call("resolve", {"action": "apply"})
        check(is_error(refused) and "--approval" in text(refused), text(refused))
        check(not os.path.exists(target), "an apply nobody approved wrote the file")
        dropped = await conn.call("resolve", {"action": "discard"})
        check(not is_error(dropped), text(dropped))
    async with connect(server("--approval", "read-only")) as conn:
        preview = await conn.call("apply_patch", PREVIEW)
        check(not is_error(preview), f"a preview only reads: {text(preview)}")
        refused = await conn.call("resolve", {"action": "apply"})
        check(is_error(refused) and "read-only" in text(refused), text(refused))
    check(not os.path.exists(target), "read-only applied the preview")


async def project_prompts() -> None:
    """Project commands (`.lathe/commands/NAME.md`, and the user's) as MCP prompts."""
    commands = os.path.join(WORKSPACE, ".lathe", "commands")
    os.makedirs(commands, exist_ok=True)
    with open(os.path.join(commands, "review.md"), "w") as f:
        f.write("---\ndescription: Review a file\nargument-hint: FILE\n---\nReview $ARGUMENTS for bugs.\n")
    user = os.path.join(os.environ["LATHE_CONFIG_DIR"], "commands")
    os.makedirs(user, exist_ok=True)
    with open(os.path.join(user, "explain.md"), "w") as f:
        f.write("Explain the code.\n")
    async with connect(server()) as conn:
        check("prompts" in conn.capabilities, f"prompts capability {conn.capabilities}")
        listed = [wire(p) for p in (await conn.session.list_prompts()).prompts]
        check([p["name"] for p in listed] == ["review", "explain"], f"prompts {listed}")
        check(listed[0].get("description") == "Review a file", f"description {listed[0]}")
        check([a["name"] for a in listed[0].get("arguments", [])] == ["arguments"], f"arguments {listed[0]}")
        got = wire(await conn.session.get_prompt("review", {"arguments": "src/a.rs"}))
        messages = got["messages"]
        check(len(messages) == 1 and messages[0]["role"] == "user", f"messages {messages}")
        check(messages[0]["content"]["text"] == "Review src/a.rs for bugs.", f"text {messages[0]}")
        plain = wire(await conn.session.get_prompt("explain", {"arguments": "main.rs"}))
        check(plain["messages"][0]["content"]["text"] == "Explain the code.\n\nARGUMENTS: main.rs", f"{plain}")
        try:
            await conn.session.get_prompt("nope")
        except ProtocolError as err:
            check("/review" in str(err) and "/explain" in str(err), str(err))
        else:
            raise AssertionError("an unknown prompt should be a protocol error")


SCENARIOS = {
    "project_prompts": project_prompts,
    "resolve_offered_only_while_pending": resolve_offered_only_while_pending,
    "pending_per_session": pending_per_session,
    "pending_apply_asks": pending_apply_asks,
    "initialize_and_list": initialize_and_list,
    "modern_lifecycle": modern_lifecycle,
    "read_and_edit": read_and_edit,
    "shell_background": shell_background,
    "denied_read_only": denied_read_only,
    "denied_by_rule": denied_by_rule,
    "ask_without_elicitation": ask_without_elicitation,
    "elicitation_legacy": lambda: ask_with_elicitation("legacy"),
    "elicitation_modern": lambda: ask_with_elicitation("auto"),
    "cancel_running_call": cancel_running_call,
    "cancel_running_call_modern": lambda: cancel_running_call("auto"),
    "disconnect_kills_background": disconnect_kills_background,
    "disconnect_kills_background_modern": lambda: disconnect_kills_background("auto"),
    "progress_notifications": progress_notifications,
    "streamable_http": streamable_http,
}

def main(scenarios: dict[str, Any]) -> None:
    """Runs the scenario named by the first argument: prints `ok`, or `skipped` (loudly, on
    stderr) when the installed SDK cannot run it, or raises."""
    name = sys.argv[1]
    try:
        anyio.run(scenarios[name])
    except Skip as skip:
        banner = "!" * 80
        print(f"{banner}\nSKIPPED {name}: {skip}\n{banner}", file=sys.stderr)
        print("skipped")
        sys.exit(0)
    print("ok")


if __name__ == "__main__":
    main(SCENARIOS)

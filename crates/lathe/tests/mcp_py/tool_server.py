"""An MCP server written with the official Python SDK, for Lathe's MCP client tests.

Usage: tool_server.py MODE, MODE one of:
  normal  tools add, lookup (readOnlyHint), ask_name (elicitation), crash (exits the process on its first call, marked
          by the file $MARKER), slow (waits; writes $MARKER.cancelled when cancelled)
  many    200 tools tool_0 .. tool_199
  fail    exits at once, saying why on stderr
"""

import os
import sys

import anyio
from pydantic import BaseModel
from mcp.server.mcpserver import Context, MCPServer
from mcp.types import ToolAnnotations

mode = sys.argv[1] if len(sys.argv) > 1 else "normal"

if mode == "fail":
    print("cannot open the database /nonexistent/db.sqlite", file=sys.stderr)
    sys.exit(3)

server = MCPServer("lathe-test-server")

if mode == "many":
    for i in range(200):

        def make(i):
            def tool(text: str) -> str:
                return f"tool {i} got {text}"

            return tool

        server.tool(name=f"tool_{i}", description=f"Tool number {i}: echoes its text.")(make(i))
else:

    @server.tool(description="Adds two integers.")
    def add(a: int, b: int) -> str:
        return f"sum {a + b}"

    @server.tool(
        description="Looks a key up (reads only).",
        annotations=ToolAnnotations(readOnlyHint=True),
    )
    def lookup(key: str) -> str:
        return f"value of {key}"

    @server.tool(description="Crashes the server on its first call.")
    def crash() -> str:
        marker = os.environ["MARKER"]
        if not os.path.exists(marker):
            open(marker, "w").close()
            os._exit(1)
        return "survived the restart"

    class Person(BaseModel):
        name: str
        age: int

    @server.tool(description="Asks the user who they are (elicitation).")
    async def ask_name(ctx: Context) -> str:
        answer = await ctx.elicit(message="Who is asking?", schema=Person)
        if answer.action == "accept":
            return f"hello {answer.data.name}, {answer.data.age}"
        return f"the user answered {answer.action}"

    @server.tool(description="Waits until cancelled.")
    async def slow() -> str:
        marker = os.environ["MARKER"]
        open(marker + ".started", "w").close()
        try:
            await anyio.sleep(600)
        except anyio.get_cancelled_exc_class():
            open(marker + ".cancelled", "w").close()
            raise
        return "done"

server.run("stdio")

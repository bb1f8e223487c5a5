"""``kernelseek mcp``: the harness's tools for an agent outside the process, over MCP (stdio).

Four tools, each a request to the session's engine (``host.py``), so each is a recorded tool
call of the session: ``evaluate`` (the workspace's kernel, or a given file copied over it, on
the objective or a named set: the verdict, the failing scenarios with reasons, speedup,
vs-FA3, the commit, and the harness's question when the evaluation is a decision moment),
``draw_question``, ``finish`` (answered with a question at most N times) and ``status``. The
reply's text is what the agent reads; the same figures come as structured content.
"""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp_types import CallToolResult, TextContent

from kernelseek_tui.external.host import ExternalHost
from kernelseek_tui.external.replies import ExternalReply

SERVER_NAME = "kernelseek"

INSTRUCTIONS = (
    "KernelSeek holds the objective for a CUDA kernel: every candidate must pass every scenario "
    "of the objective, and is then timed against the kernel the session started from. Call "
    "`status` first: it names the kernel file the harness judges. Edit that file (or your own "
    "copy and pass its path to `evaluate`), and call `evaluate` after each change; a verified "
    "candidate becomes a git commit. When a reply carries a question from the harness, think "
    "it through before going on. Call `finish` when you are done; it may answer with a question."
)


def build_server(host: ExternalHost) -> MCPServer:
    """An MCP server whose tools are requests to ``host``'s session."""
    server: MCPServer = MCPServer(SERVER_NAME, instructions=INSTRUCTIONS)

    @server.tool(
        description="Judge the kernel: build it, check every scenario against the reference "
        "and time it against the starting kernel and FA3. Without `set` it runs the objective "
        "(a verified candidate is committed); with `set` only that scenario set. `path` copies "
        "that file over the workspace's kernel first. `knobs` sets the task's tunable knobs."
    )
    async def evaluate(
        set: str | None = None,
        path: str | None = None,
        knobs: dict[str, int] | None = None,
    ) -> CallToolResult:
        arguments: dict[str, Any] = {}
        if set is not None:
            arguments["set"] = set
        if path is not None:
            arguments["path"] = path
        if knobs is not None:
            arguments["knobs"] = knobs
        return as_result(await host.call_async("evaluate", arguments))

    @server.tool(description="Draw one question from the harness's repertoire, to think with.")
    async def draw_question() -> CallToolResult:
        return as_result(await host.call_async("draw_question", {}))

    @server.tool(
        description="Say that you are done, and why. The harness may answer with a question "
        "first; then think it through and go on."
    )
    async def finish(reason: str) -> CallToolResult:
        return as_result(await host.call_async("finish", {"reason": reason}))

    @server.tool(
        description="The session: the kernel file the harness judges, evaluations, commits, "
        "the best verified speedup."
    )
    async def status() -> CallToolResult:
        return as_result(await host.call_async("status", {}))

    return server


def as_result(reply: ExternalReply) -> CallToolResult:
    """An MCP tool result: the text the agent reads, the figures as structured content."""
    structured = {**reply.data, "questions": reply.questions, "ended": reply.ended}
    return CallToolResult(
        content=[TextContent(type="text", text=reply.full_text())],
        structured_content=structured,
        is_error=reply.is_error,
    )


async def serve_stdio(host: ExternalHost) -> None:
    """Serve over stdin/stdout until the client goes away; then the session ends, unless it
    ended already."""
    try:
        await build_server(host).run_stdio_async()
    finally:
        host.leave(detail="the MCP client disconnected")
        host.wait()

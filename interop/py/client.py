"""A client on the Python SDK (mcp 2.3, pinned in requirements.txt), driven
against `tern serve` by crates/tern-cli/tests/api/interop_py.rs.

    python client.py [--revision REV] stdio <command> [args...]
    python client.py [--revision REV] http <url>

Without --revision the SDK negotiates as it does by default (mode="auto":
probe `server/discover` at 2026-07-28, fall back to `initialize`). With
`--revision 2025-11-25` it runs the initialize handshake (mode="legacy");
with `--revision 2026-07-28` it adopts that revision without probing.

It declares elicitation (the SDK offers both form and url once a callback
is set), roots and sampling, and answers the server's questions as a person
and a model would: server-sent requests in 2025-11-25, `input_required`
rounds in 2026-07-28 (the SDK routes both to the same callbacks). It runs
the reference workload and prints one JSON object with what it saw, in the
shape legacy-client.mjs prints, plus the negotiated `revision`.
"""

from __future__ import annotations

import argparse
import json
import sys
from importlib.metadata import version
from typing import Any

import anyio
import mcp_types as types
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

MODES = {None: "auto", "2025-11-25": "legacy", "2026-07-28": "2026-07-28"}


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description="Run the interop workload against an MCP server.")
    p.add_argument("--revision", choices=[r for r in MODES if r], default=None)
    p.add_argument("transport", choices=["stdio", "http"])
    p.add_argument("target", nargs=argparse.REMAINDER)
    a = p.parse_args()
    if not a.target:
        p.error("missing the command or URL")
    return a


class Peer:
    """The person and the model behind the client, and a log of what was asked."""

    def __init__(self) -> None:
        self.decline = False
        self.asked: list[str] = []

    async def elicit(self, _ctx: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        self.asked.append(f"elicitation/create: {params.message}")
        if self.decline:
            return types.ElicitResult(action="decline")
        return types.ElicitResult(action="accept", content={"approved": True})

    async def roots(self, _ctx: Any) -> types.ListRootsResult:
        self.asked.append("roots/list")
        return types.ListRootsResult(roots=[types.Root(uri="file:///tmp", name="tmp")])

    async def sample(self, _ctx: Any, _params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        self.asked.append("sampling/createMessage")
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text="42"),
            model="interop-model",
            stop_reason="endTurn",
        )


def text(result: types.CallToolResult) -> str:
    return "".join(getattr(c, "text", "") or "" for c in result.content)


def describe(e: BaseException) -> str:
    # anyio task groups wrap the real failure; report the innermost ones.
    if isinstance(e, BaseExceptionGroup):
        return "; ".join(describe(x) for x in e.exceptions)
    return f"{type(e).__name__}: {e}"


async def main(a: argparse.Namespace) -> dict[str, Any]:
    if a.transport == "stdio":
        # Keep the server's stderr (logs) on ours: the test shows it on failure.
        server: Any = stdio_client(
            StdioServerParameters(command=a.target[0], args=a.target[1:]), errlog=sys.stderr
        )
    else:
        server = a.target[0]
    peer = Peer()
    client = Client(
        server,
        mode=MODES[a.revision],
        client_info=types.Implementation(name="interop-py", version=version("mcp")),
        elicitation_callback=peer.elicit,
        list_roots_callback=peer.roots,
        sampling_callback=peer.sample,
        read_timeout_seconds=30,
    )
    out: dict[str, Any] = {}
    try:
        # A hang in the server ends as an error line, not a stuck test.
        with anyio.fail_after(60):
            await workload(client, peer, out)
    except Exception as e:  # the test wants a JSON line whatever failed
        out["error"] = describe(e)
        out["asked"] = peer.asked
    return out


async def workload(client: Client, peer: Peer, out: dict[str, Any]) -> None:
    async with client:
        out["revision"] = client.protocol_version
        info = client.server_info
        out["server"] = info.model_dump(by_alias=True, mode="json", exclude_none=True) if info else None
        out["tools"] = sorted(t.name for t in (await client.list_tools()).tools)
        out["echo"] = text(await client.call_tool("echo", {"text": "hello"}))
        out["deploy"] = text(await client.call_tool("deploy", {"environment": "staging"}))
        out["ask_model"] = text(await client.call_tool("ask_model", {"question": "6 x 7?"}))
        peer.decline = True
        declined = await client.call_tool("deploy", {"environment": "prod"})
        out["declined"] = {"text": text(declined), "isError": declined.is_error is True}
        out["asked"] = peer.asked


if __name__ == "__main__":
    args = parse_args()
    result = anyio.run(main, args)
    print(json.dumps(result))
    sys.exit(1 if "error" in result else 0)

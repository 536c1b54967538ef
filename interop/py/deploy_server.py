"""A deploy-like tool on the Python SDK (mcp 2.3, pinned in requirements.txt),
served over stdio for `tern probe` (crates/tern-cli/tests/api/probe.rs).

    python deploy_server.py

One round asks a form (an approval) and the client's roots, as the reference
workload's deploy does; the SDK seals requestState with its own codec.
"""

from typing import Annotated

import mcp_types as types
from pydantic import BaseModel

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.resolve import Elicit, ListRoots, Resolve
from mcp.server.request_state import RequestStateSecurity

server = MCPServer(
    "py-deploy",
    request_state_security=RequestStateSecurity(keys=["probe-test-key-" + "0" * 49]),
)


class Approval(BaseModel):
    approved: bool


def ask_approval(environment: str) -> Elicit[Approval]:
    return Elicit(f"Approve deployment to {environment}?", Approval)


def ask_roots() -> ListRoots:
    return ListRoots()


@server.tool()
async def deploy(
    environment: str,
    approval: Annotated[Approval, Resolve(ask_approval)],
    roots: Annotated[types.ListRootsResult, Resolve(ask_roots)],
) -> str:
    if not approval.approved:
        return f"deployment to {environment} was not approved"
    return f"deployed to {environment} with {len(roots.roots)} workspace root(s)"


server.run("stdio")

"""The MCP server's resources: the persona's files as every prompt reads them, and each
skill's SKILL.md, for a client that attaches them rather than calling a tool.

The persona is read through ``PersonaLoader``: MEMORY.md without the kept notes' dated
lines (each note is read only where it was said, by the notes layer), so nothing one
place said reaches another through a resource. Skills are the whole team's. Each read is
in the audit log, as each tool call is, a read of nothing there as a failed one.

Decided: read through the two templates only, and listed one by one afresh at each
``resources/list`` (``ToolServer.add_listing``), not registered one by one at the start:
a skill approved, or a persona file written, while the server runs is listed at once.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import anyio
from mcp.types import Resource as MCPResource

from bridge.mcp.opening import Opening
from bridge.mcp.tool_server import ReadNotFound, ToolServer
from bridge.pipeline.tools.arguments import said
from layers.shared.errors import BadInput

if TYPE_CHECKING:
    from bridge.app import Thoth

PERSONA_URI = "thoth://persona/{name}"
SKILL_URI = "thoth://skills/{name}"
MARKDOWN = "text/markdown"

# A read in the audit log: its kind, the name read, and the error if there was none.
Audit = Callable[[str, str, str], Awaitable[None]]


def add_resources(server: ToolServer, app: Opening[Thoth], audited: Audit) -> None:
    """Register the persona's files and the skills (each listed, and any by its name)."""

    # Each read imports what it reads with once the memory is open (it is loaded then):
    # the handshake is answered before (opening.py).
    async def persona_file(name: str) -> str:
        def read() -> str:
            from layers.procedural.persona import PERSONA_FILES

            text = app.opened().persona.load().file(name)
            if name not in PERSONA_FILES or not text.strip():
                raise BadInput(f"no persona file {said(name)}; the persona's files are"
                               f" {', '.join(PERSONA_FILES)}")
            return text

        return await _read(read, audited, "persona", name)

    async def skill_file(name: str) -> str:
        # As the get_skill tool reads it (bridge/pipeline/tools/skills.py).
        from bridge.pipeline.tools.skills import skill_md

        return await _read(lambda: skill_md(app.opened().skills, name), audited, "skill",
                           name)

    async def listed() -> list[MCPResource]:
        return await anyio.to_thread.run_sync(lambda: _listed(app.opened()))

    server.resource(PERSONA_URI, name="persona", mime_type=MARKDOWN, description=(
        "One of Thoth's persona files (IDENTITY.md, SOUL.md, RULES.md, …) as every prompt"
        " reads it."))(persona_file)
    server.resource(SKILL_URI, name="skill", mime_type=MARKDOWN, description=(
        "One of the team's skills: its SKILL.md, front matter and instructions."))(skill_file)
    server.add_listing(listed)


async def _read(read: Callable[[], str], audited: Audit, kind: str, name: str) -> str:
    """``read`` on a worker thread (it reads files), audited; nothing there is the
    protocol's resource-not-found (``ToolServer`` codes it)."""
    try:
        text = await anyio.to_thread.run_sync(read)
    except BadInput as error:
        await audited(kind, name, str(error))
        raise ReadNotFound(str(error)) from error
    await audited(kind, name, "")
    return text


def _listed(app: Thoth) -> list[MCPResource]:
    """Each persona file with text and each skill, as they are now."""
    persona = [MCPResource(uri=PERSONA_URI.format(name=file.name), name=file.name,
                           mime_type=MARKDOWN)
               for file in app.persona.load().files if file.text.strip()]
    skills = [MCPResource(uri=SKILL_URI.format(name=slug), name=slug,
                          description=skill.description, mime_type=MARKDOWN)
              for slug, skill in sorted(app.skills.skills().items())]
    return persona + skills

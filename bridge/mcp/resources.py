"""The MCP server's resources: the persona's files as every prompt reads them, and each
skill's SKILL.md, for a client that attaches them rather than calling a tool.

The persona is read through ``PersonaLoader``: MEMORY.md without the kept notes' dated
lines (each note is read only where it was said, by the notes layer), so nothing one
place said reaches another through a resource. Skills are the whole team's. Each read is
in the audit log, as each tool call is.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError

from bridge.app import Thoth
from bridge.pipeline.tools.skills import skill_md
from layers.procedural.persona import PERSONA_FILES
from layers.shared.errors import BadInput

PERSONA_URI = "thoth://persona/{name}"
SKILL_URI = "thoth://skills/{name}"

Audit = Callable[[str, str], Awaitable[None]]


def add_resources(server: MCPServer, app: Thoth, audited: Audit) -> None:
    """Register the persona's files and the skills (each listed, and any by its name)."""

    async def persona_file(name: str) -> str:
        def read() -> str:
            text = app.persona.load().file(name)
            if name not in PERSONA_FILES or not text.strip():
                raise ResourceError(f"no persona file {name!r}; the persona's files are"
                                    f" {', '.join(PERSONA_FILES)}")
            return text

        text = await anyio.to_thread.run_sync(read)
        await audited("persona", name)
        return text

    async def skill_file(name: str) -> str:
        # As the get_skill tool reads it (bridge/pipeline/tools/skills.py).
        try:
            text = await anyio.to_thread.run_sync(skill_md, app.skills, name)
        except BadInput as error:
            raise ResourceError(str(error)) from error
        await audited("skill", name)
        return text

    server.resource(PERSONA_URI, name="persona", mime_type="text/markdown", description=(
        "One of Thoth's persona files (IDENTITY.md, SOUL.md, RULES.md, …) as every prompt"
        " reads it."))(persona_file)
    server.resource(SKILL_URI, name="skill", mime_type="text/markdown", description=(
        "One of the team's skills: its SKILL.md, front matter and instructions."))(skill_file)
    # Listed one by one as well, so a client can show what there is to attach.
    for persona in app.persona.load().files:
        if persona.text.strip():
            server.resource(PERSONA_URI.format(name=persona.name), name=persona.name,
                            mime_type="text/markdown")(_reader(persona_file, persona.name))
    for slug, skill in sorted(app.skills.skills().items()):
        server.resource(SKILL_URI.format(name=slug), name=slug, description=skill.description,
                        mime_type="text/markdown")(_reader(skill_file, slug))


def _reader(read: Callable[[str], Awaitable[str]], name: str) -> Callable[[], Awaitable[str]]:
    async def listed() -> str:
        return await read(name)

    return listed

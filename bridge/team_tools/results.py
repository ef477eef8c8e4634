"""What a team's tool answered, as the model reads it: quoted, capped, never stored raw.

Its text is quoted data (``result_text``); the images it answered with are shown to the
model as images (``result_images``), read as a shared file's are
(``bridge/files/reading.py``): their kind told by their bytes, a decompression bomb
refused unopened, a large one scaled within what the Messages API takes (8000 px a
side, 5 MB of base64), on the shared files' reader thread (``bridge/files/reader.py``),
never on the event loop. One that cannot be shown is named, with why.
"""

from __future__ import annotations

import base64
import binascii
import json

import mcp_types as types

from bridge.files.reader import FileReader
from bridge.files.reading import Read, Unread
from bridge.files.shared_file import SharedFile
from bridge.model.protocol import Attachment

# Characters of a tool's result the model reads; past them, the head and a note.
RESULT_CHARS = 20_000
# Images of one result shown; the rest are named (a request holds 100 at most, and past
# 20 each must be smaller).
RESULT_IMAGES = 5


def result_text(result: types.CallToolResult) -> str:
    """A tool's answer as text, cut at ``RESULT_CHARS`` with a note of what was cut."""
    parts: list[str] = []
    for block in result.content:
        if isinstance(block, types.TextContent):
            parts.append(block.text)
        elif isinstance(block, types.ImageContent):
            parts.append(f"[an image, {block.mime_type}]")
        else:
            parts.append(f"[{getattr(block, 'type', 'content')} not shown]")
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False))
    text = "\n".join(parts)
    if len(text) <= RESULT_CHARS:
        return text
    return (f"{text[:RESULT_CHARS]}\n[… {len(text) - RESULT_CHARS:,} more characters cut:"
            " ask for less]")


async def result_images(result: types.CallToolResult,
                        reader: FileReader) -> tuple[Attachment, ...]:
    """The images of a tool's answer as the model sees them, in order ("image 1", …),
    read on ``reader``'s thread; one that cannot be shown, and those past
    ``RESULT_IMAGES``, as a line saying why."""
    images = [block for block in result.content if isinstance(block, types.ImageContent)]
    named = [(f"image {number}", block) for number, block in enumerate(images, start=1)]
    decoded = [_decoded(name, block) for name, block in named[:RESULT_IMAGES]]
    shown = tuple(_shown(seen) for seen in await reader.read_all(decoded))
    if len(images) <= RESULT_IMAGES:
        return shown
    return (*shown, Attachment("more images", "unread", text=(
        f"{len(images) - RESULT_IMAGES} more images not shown: a result shows"
        f" {RESULT_IMAGES} at most")))


def _decoded(name: str, block: types.ImageContent) -> SharedFile | Unread:
    try:
        # Its bytes say what it is (reading.py), not the mime_type it came with.
        return SharedFile(name, base64.b64decode(block.data, validate=True), block.mime_type)
    except (binascii.Error, ValueError):
        return Unread(name, "it is not valid base64")


def _shown(seen: Read | Unread) -> Attachment:
    if isinstance(seen, Unread):
        return Attachment(seen.name, "unread", text=f"{seen.name} not shown: {seen.why}")
    if seen.kind != "image" or seen.shown is None:
        return Attachment(seen.name, "unread", text=f"{seen.name} not shown: it is not a"
                                                    " PNG, JPEG, GIF or WebP image")
    return Attachment(seen.name, "image", seen.media_type, seen.shown)

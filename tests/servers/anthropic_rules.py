"""What the Messages API reference says it refuses, for the loopback in ``anthropic_api.py``.

Each check returns the 400 message the real API gives (``invalid_request_error``), or
None. A fake that took more than the API would prove nothing. What differs per model
(max_tokens, thinking types, effort levels, forced tools, images and PDF pages a
request) is read from that model's row of ``bridge/model/models.json``, the same rows
Thoth shapes its requests by, so a row that is wrong for the real API is wrong in one
place, sourced and dated.

Image and document blocks are checked as the Vision and PDF support pages say (PNG,
JPEG, GIF or WebP, whose bytes must be the type they are sent as; 5 MB of base64 and
8000 px a side, 2000 px once a request holds more than 20 images; images and documents
a request, and PDF pages a request, per model; a PDF with no password or encryption), in
the words the API's 400s use. The bytes are really decoded: Pillow reads an image's
header, pypdf counts a PDF's pages.

Server tools are checked as the tool use pages say: a tool with a ``type`` other than a
client tool's must be one the API knows (web fetch only under its beta header), named as
its type says, with only its own fields; the API's own server tool blocks may come back
only as the API sent them, a call with its result beside it in the same assistant message,
except in a paused turn sent back as the last message (the server tools page: "pass the
paused response back as-is").
"""

from __future__ import annotations

import base64
import binascii
import io
import re
from collections.abc import Iterator
from typing import Any

from PIL import Image, UnidentifiedImageError
from pypdf import PdfReader
from pypdf.errors import PdfReadError

from bridge.model.catalogue import CATALOGUE, Capabilities

MAX_CACHE_BREAKPOINTS = 4
TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
# The request size limit of the Messages API (32 MB): larger bodies get 413.
MAX_BODY_BYTES = 32 * 1024 * 1024
THINKING_TYPES = ("adaptive", "enabled", "disabled", "between_tools")
MIN_THINKING_BUDGET = 1_024
# The Vision page: the image types taken, and each image's limits.
IMAGE_TYPES = ("image/jpeg", "image/png", "image/gif", "image/webp")
# What Pillow calls each (a camera's JPEG with a preview inside is "MPO", still a JPEG).
IMAGE_FORMATS = {"JPEG": "image/jpeg", "MPO": "image/jpeg", "PNG": "image/png",
                 "GIF": "image/gif", "WEBP": "image/webp"}
MAX_IMAGE_BASE64 = 5 * 1024 * 1024
MAX_IMAGE_SIDE = 8_000
MANY_IMAGES = 20
MANY_IMAGES_SIDE = 2_000
# The PDF support page: a document block holds a PDF (base64 or url), plain text, or
# content blocks.
DOCUMENT_SOURCES = ("base64", "text", "url", "content")
IMAGE_SOURCES = ("base64", "url")
# The server tools the API runs, by type: the name each must have, and the beta header a
# type needs (the web search and web fetch tool pages).
SERVER_TOOLS: dict[str, tuple[str, str | None]] = {
    "web_search_20250305": ("web_search", None),
    "web_search_20260209": ("web_search", None),
    "web_fetch_20250910": ("web_fetch", "web-fetch-2025-09-10"),
    "web_fetch_20260209": ("web_fetch", None),
}
SERVER_TOOL_FIELDS = frozenset({
    "type", "name", "max_uses", "allowed_domains", "blocked_domains", "user_location",
    "cache_control", "allowed_callers", "defer_loading", "strict"})
WEB_FETCH_FIELDS = frozenset({"citations", "max_content_tokens"})
# A server tool's call and the result block that must stand beside it.
SERVER_RESULTS = {"web_search": "web_search_tool_result", "web_fetch": "web_fetch_tool_result"}


def model_row(body: dict[str, Any]) -> Capabilities | None:
    """The model's row of the catalogue, when the API serves it (retired ids are refused)."""
    info = CATALOGUE.find(str(body.get("model", "")))
    return None if info is None or info.status == "retired" else info.capabilities


def unknown_model(body: dict[str, Any]) -> str | None:
    """The 404 message for a model id the API does not serve."""
    return None if model_row(body) is not None else f"model: {body.get('model', '')}"


def thinks(body: dict[str, Any]) -> bool:
    """Whether the answer to this request starts with thinking: the model thinks unless
    told not to, or it was asked to on a model where thinking is optional."""
    row = model_row(body)
    asked = (body.get("thinking") or {}).get("type")
    if row is None or asked in ("disabled", "between_tools"):
        return False
    return row.thinks or asked in ("adaptive", "enabled")


def thinking_display(body: dict[str, Any]) -> str:
    """"omitted" (the default of every model that thinks by default) or "summarized"."""
    return str((body.get("thinking") or {}).get("display") or "omitted")


def invalid_request(headers: dict[str, str], body: dict[str, Any]) -> str | None:
    """The reason the API would refuse this request with 400, if any."""
    if not headers.get("anthropic-version"):
        return "anthropic-version: header is required"
    for check in (_max_tokens, _thinking, _effort, _tools, _messages, _media,
                  _cache_breakpoints):
        reason = check(body)
        if reason is not None:
            return reason
    return server_tools_refusal(headers, body)


def server_tools_refusal(headers: dict[str, str], body: dict[str, Any]) -> str | None:
    """Why the API refuses the request's server tool definitions, if it does."""
    betas = {beta.strip() for beta in headers.get("anthropic-beta", "").split(",")}
    known = [kind for kind, (_, beta) in SERVER_TOOLS.items() if beta is None or beta in betas]
    names: set[str] = set()
    for index, tool in enumerate(body.get("tools") or []):
        kind = tool.get("type")
        if tool.get("name") in names:
            return "tools: Tool names must be unique."
        names.add(str(tool.get("name")))
        if kind in (None, "custom"):
            continue
        if kind not in known:
            expected = ", ".join(f"'{tag}'" for tag in ("custom", *known))
            return (f"tools.{index}: Input tag '{kind}' found using 'type' does not match any"
                    f" of the expected tags: {expected}")
        reason = _server_tool(f"tools.{index}.{kind}", SERVER_TOOLS[kind][0], tool)
        if reason is not None:
            return reason
    return None


def _server_tool(where: str, name: str, tool: dict[str, Any]) -> str | None:
    if tool.get("name") != name:
        return f"{where}.name: Input should be '{name}'"
    fields = SERVER_TOOL_FIELDS | (WEB_FETCH_FIELDS if name == "web_fetch" else frozenset())
    extra = sorted(set(tool) - fields)
    if extra:
        return f"{where}.{extra[0]}: Extra inputs are not permitted"
    uses = tool.get("max_uses")
    if uses is not None and (not isinstance(uses, int) or uses < 1):
        return f"{where}.max_uses: Input should be greater than or equal to 1"
    if tool.get("allowed_domains") and tool.get("blocked_domains"):
        return f"{where}: Cannot specify both allowed_domains and blocked_domains"
    citations = tool.get("citations")
    if citations is not None and not (isinstance(citations, dict)
                                      and isinstance(citations.get("enabled"), bool)):
        return f"{where}.citations.enabled: Input should be a valid boolean"
    return None


def _max_tokens(body: dict[str, Any]) -> str | None:
    row = model_row(body)
    wanted = body.get("max_tokens")
    if not isinstance(wanted, int) or wanted < 1:
        return "max_tokens: Field required"
    if row is not None and wanted > row.max_output:
        return (f"max_tokens: {wanted} > {row.max_output}, which is the maximum allowed for"
                f" {body['model']}")
    return None


def _thinking(body: dict[str, Any]) -> str | None:
    """Each model takes only some thinking types (the Thinking page's troubleshooting table)."""
    thinking = body.get("thinking")
    row = model_row(body)
    if thinking is None or row is None:
        return None
    kind = thinking.get("type") if isinstance(thinking, dict) else None
    if kind not in THINKING_TYPES:
        return "thinking: Input tag does not match any of the expected tags: " + ", ".join(
            f"'{t}'" for t in THINKING_TYPES)
    if kind == "adaptive" and "adaptive" in row.thinking_refused:
        return "adaptive thinking is not supported on this model"
    if kind in row.thinking_refused or kind == "between_tools":
        return (f'"thinking.type.{kind}" is not supported for this model. Use'
                ' "thinking.type.adaptive" and "output_config.effort" to control thinking'
                " behavior.")
    if thinking.get("display") not in (None, "summarized", "omitted"):
        return "thinking.display: Input should be 'summarized' or 'omitted'"
    if kind == "disabled" and "display" in thinking:
        return "thinking.display: not allowed when thinking is disabled"
    if kind == "enabled":
        budget = thinking.get("budget_tokens")
        if not isinstance(budget, int) or budget < MIN_THINKING_BUDGET:
            return f"thinking.enabled.budget_tokens: Input should be >= {MIN_THINKING_BUDGET}"
        if budget >= body["max_tokens"]:
            return "`max_tokens` must be greater than `thinking.budget_tokens`"
    return None


def _effort(body: dict[str, Any]) -> str | None:
    effort = (body.get("output_config") or {}).get("effort")
    row = model_row(body)
    if effort is None or row is None:
        return None
    if not row.effort_levels:
        return "output_config.effort: effort is not supported by this model"
    if effort not in row.effort_levels:
        return (f"output_config.effort: {effort!r} is not supported by {body['model']};"
                f" use one of {', '.join(row.effort_levels)}")
    return None


def _tools(body: dict[str, Any]) -> str | None:
    names = []
    for index, tool in enumerate(body.get("tools") or []):
        name = str(tool.get("name", ""))
        if not TOOL_NAME.match(name):
            return f"tools.{index}.name: String should match pattern '^[a-zA-Z0-9_-]{{1,64}}$'"
        names.append(name)
    choice = body.get("tool_choice")
    if choice is None:
        return None
    # The Messages API reference: tool_choice is auto | any | tool (with a name) | none,
    # and means nothing (so is refused) without tools.
    if not isinstance(choice, dict) or choice.get("type") not in ("auto", "any", "tool", "none"):
        return "tool_choice: Input tag does not match any of the expected tags: 'auto', 'any',"\
            " 'tool', 'none'"
    if not names and choice.get("type") != "none":
        return "tool_choice: tool_choice may only be specified while providing tools"
    forced = choice.get("type") == "tool"
    row = model_row(body)
    if choice.get("type") in ("tool", "any"):
        if row is not None and not row.forced_tool_choice:
            return 'tool_choice: type "tool" and "any" are not supported for this model.'
        if thinks(body):
            return "Thinking may not be enabled when tool_choice forces tool use."
    if forced and not isinstance(choice.get("name"), str):
        return "tool_choice.tool.name: Field required"
    if forced and choice.get("name") not in names:
        return f"tool_choice: tool {choice.get('name')!r} is not among the tools provided"
    return None


def _messages(body: dict[str, Any]) -> str | None:
    messages = body.get("messages") or []
    if not messages or messages[0].get("role") != "user":
        return "messages: first message must use the \"user\" role"
    for index, message in enumerate(messages):
        if index and message.get("role") == messages[index - 1].get("role"):
            return "messages: roles must alternate between \"user\" and \"assistant\""
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        for block in blocks or []:
            if block.get("type") == "text" and not str(block.get("text", "")).strip():
                return f"messages.{index}: text content blocks must be non-empty"
        reason = _tool_results_follow(messages, index) or _server_results_beside(
            messages, index)
        if reason is not None:
            return reason
    if messages[-1].get("role") != "user" and not _paused_turn(messages[-1]):
        return "messages: the final message must be a user message (no prefill for this model)"
    return None


def _paused_turn(message: dict[str, Any]) -> bool:
    """A paused turn sent back to go on (its server tool blocks say so), not a prefill."""
    return message.get("role") == "assistant" and any(
        block.get("type") == "server_tool_use" for block in _blocks_of(message.get("content")))


def _server_results_beside(messages: list[dict[str, Any]], index: int) -> str | None:
    """A server tool's call has its result in the same assistant message, except in the
    paused turn sent back last (the API runs the call when it goes on)."""
    message = messages[index]
    if message.get("role") != "assistant" or index == len(messages) - 1:
        return None
    blocks = _blocks_of(message.get("content"))
    answered = {(b.get("type"), b.get("tool_use_id")) for b in blocks}
    for block in blocks:
        if block.get("type") != "server_tool_use":
            continue
        result = SERVER_RESULTS.get(str(block.get("name")), f"{block.get('name')}_tool_result")
        if (result, block.get("id")) not in answered:
            return (f"messages.{index}: `{block.get('name')}` tool use with id"
                    f" `{block.get('id')}` was found without a corresponding `{result}` block")
    return None


def _tool_results_follow(messages: list[dict[str, Any]], index: int) -> str | None:
    message = messages[index]
    if message.get("role") != "assistant" or isinstance(message.get("content"), str):
        return None
    used = {b.get("id") for b in message.get("content") or [] if b.get("type") == "tool_use"}
    if not used:
        return None
    following = messages[index + 1] if index + 1 < len(messages) else {}
    content = following.get("content")
    answered = {
        b.get("tool_use_id") for b in (content if isinstance(content, list) else [])
        if b.get("type") == "tool_result"
    }
    if not used <= answered:
        return (
            f"messages.{index + 1}: `tool_use` ids were found without `tool_result` blocks"
            " immediately after"
        )
    return None


def _cache_breakpoints(body: dict[str, Any]) -> str | None:
    count = _count_cache_control(body.get("system")) + _count_cache_control(body.get("tools"))
    for message in body.get("messages") or []:
        count += _count_cache_control(message.get("content"))
    if count > MAX_CACHE_BREAKPOINTS:
        return f"A maximum of {MAX_CACHE_BREAKPOINTS} blocks with cache_control may be provided"
    return None


def _count_cache_control(blocks: Any) -> int:
    if not isinstance(blocks, list):
        return 0
    return sum(1 for block in blocks if isinstance(block, dict) and block.get("cache_control"))


def _media(body: dict[str, Any]) -> str | None:
    row = model_row(body)
    return None if row is None else media_refusal(body, row)


def media_refusal(body: dict[str, Any], row: Capabilities) -> str | None:
    """Why the API refuses the request's image and document blocks on a model with
    ``row``, if it does (public so a test can give a row no listed model has)."""
    blocks = list(_media_blocks(body))
    images = [(where, block) for where, block in blocks if block.get("type") == "image"]
    documents = [(where, block) for where, block in blocks if block.get("type") == "document"]
    many = len(images) > MANY_IMAGES
    for where, block in images:
        reason = _image_refused(where, block.get("source") or {}, many)
        if reason is not None:
            return reason
    pages = 0
    for where, block in documents:
        reason, counted = _document_refused(where, block.get("source") or {}, body, row)
        if reason is not None:
            return reason
        pages += counted
    return _too_many(len(images), len(documents), pages, body, row)


def _media_blocks(body: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """Each image and document block with its place as the API names it, those inside a
    tool result included."""
    for i, message in enumerate(body.get("messages") or []):
        for j, block in enumerate(_blocks_of(message.get("content"))):
            where = f"messages.{i}.content.{j}"
            if block.get("type") in ("image", "document"):
                yield where, block
            elif block.get("type") == "tool_result":
                for k, inner in enumerate(_blocks_of(block.get("content"))):
                    if inner.get("type") in ("image", "document"):
                        yield f"{where}.tool_result.content.{k}", inner


def _blocks_of(content: Any) -> list[dict[str, Any]]:
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def _image_refused(where: str, source: dict[str, Any], many: bool) -> str | None:
    kind = source.get("type")
    if kind not in IMAGE_SOURCES:
        return (f"{where}.image.source: Input tag '{kind}' found using 'type' does not match"
                " any of the expected tags: 'base64', 'url'")
    if kind == "url":
        return None  # fetched by the API: nothing here to check
    declared = source.get("media_type")
    if declared not in IMAGE_TYPES:
        return (f"{where}.image.source.base64.media_type: Input should be 'image/jpeg',"
                " 'image/png', 'image/gif' or 'image/webp'")
    data = str(source.get("data") or "")
    if not data:
        return f"{where}.image.source.base64: image cannot be empty"
    if len(data) > MAX_IMAGE_BASE64:
        return (f"{where}.image.source.base64: image exceeds 5 MB maximum: {len(data)} bytes"
                f" > {MAX_IMAGE_BASE64} bytes")
    decoded = _decoded(data)
    if decoded is None:
        return f"{where}.image.source.base64: invalid base64 data"
    found = _image_header(decoded)
    if found is None:
        return "Could not process image"
    actual, (width, height) = found
    if actual != declared:
        return (f"{where}.image.source.base64: The image was specified using the {declared}"
                f" media type, but the image appears to be a {actual} image")
    return _image_too_large(where, max(width, height), many)


def _image_too_large(where: str, side: int, many: bool) -> str | None:
    if side > MAX_IMAGE_SIDE:
        return (f"{where}.image.source.base64.data: At least one of the image dimensions"
                f" exceed max allowed size: {MAX_IMAGE_SIDE} pixels")
    if many and side > MANY_IMAGES_SIDE:
        return (f"{where}.image.source.base64.data: At least one of the image dimensions"
                f" exceed max allowed size for many-image requests: {MANY_IMAGES_SIDE}"
                " pixels")
    return None


def _decoded(data: str) -> bytes | None:
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return None


def _image_header(data: bytes) -> tuple[str, tuple[int, int]] | None:
    """The type the bytes really are, and the image's size, from its header alone."""
    try:
        with Image.open(io.BytesIO(data)) as image:
            found = str(image.format)
            return IMAGE_FORMATS.get(found, f"image/{found.lower()}"), image.size
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError,
            Image.DecompressionBombError):
        return None


def _document_refused(where: str, source: dict[str, Any], body: dict[str, Any],
                      row: Capabilities) -> tuple[str | None, int]:
    """Why a document block is refused, or the PDF pages it holds."""
    kind = source.get("type")
    if kind not in DOCUMENT_SOURCES:
        return (f"{where}.document.source: Input tag '{kind}' found using 'type' does not"
                " match any of the expected tags: 'base64', 'text', 'url', 'content'"), 0
    if kind == "text":
        if source.get("media_type") != "text/plain":
            return f"{where}.document.source.text.media_type: Input should be 'text/plain'", 0
        return None, 0
    if kind == "content":
        return None, 0
    if not row.pdfs:
        return f"{body.get('model')} does not support PDFs.", 0
    if kind == "url":
        return None, 0
    if source.get("media_type") != "application/pdf":
        return (f"{where}.document.source.base64.media_type: Input should be"
                " 'application/pdf'"), 0
    decoded = _decoded(str(source.get("data") or ""))
    if not decoded:
        return f"{where}.document.source.base64: invalid base64 data", 0
    return _pdf_refused(where, decoded)


def _pdf_refused(where: str, data: bytes) -> tuple[str | None, int]:
    """A PDF the API reads is a standard one, with no password nor encryption (the PDF
    support page's requirements): one opened with an empty password is encrypted too."""
    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            return f"{where}.pdf.source.base64.data: The PDF specified is password protected.", 0
        return None, len(reader.pages)
    except (PdfReadError, ValueError, KeyError, TypeError, OSError):
        return f"{where}.pdf.source.base64.data: The PDF specified was not valid.", 0


def _too_many(images: int, documents: int, pages: int, body: dict[str, Any],
              row: Capabilities) -> str | None:
    """Images and documents together count to the model's limit a request; PDF pages to
    the page limit."""
    limit = row.images_a_request
    if images and not row.images:
        return f"{body.get('model')} does not support images."
    if limit and images + documents > limit:
        return f"too many images and documents: {images} + {documents} > {limit}"
    if pages > row.pdf_pages:
        return f"A maximum of {row.pdf_pages} PDF pages may be provided."
    return None

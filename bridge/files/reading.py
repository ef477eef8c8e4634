"""Reading a shared file: what the model is shown of it, and the text memory keeps.

What a file is, is told by its bytes, not by its name or the type it was sent with
(a ".png" that is a PDF is read as a PDF; a file that is neither an image, a PDF nor
text is named but not read):
- an image (PNG, JPEG, GIF, WebP) is shown as an image, scaled so its longer side is at
  most ``Limits.image_side`` (what the Messages API reads without scaling it again);
  memory keeps its name until a turn has seen it;
- a PDF is shown whole where the model takes documents and it is within the page and
  size limits, and its text is extracted for memory (and for a model that takes none);
- text (code, logs, CSV, JSON) is shown as text; a long one as its head and tail, with
  what was cut said between them.

A file that cannot be read — over the size cap, a corrupt or password-protected PDF, an
image that would unfold into more pixels than ``Limits.image_pixels`` (a decompression
bomb), bytes of no kind it reads — is ``Unread``, with one line saying which file and
why: the turn goes on without it.

Decided: pypdf for PDF text (pure Python, maintained, reads encrypted files and says
so); Pillow for images (the one well-kept library that checks a decompression bomb
before it decodes); both named in the README.
"""

from __future__ import annotations

import io
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Literal

from bridge.files.shared_file import SharedFile

if TYPE_CHECKING:
    from PIL import Image

Kind = Literal["image", "pdf", "text"]
IMAGE_TYPES = {"PNG": "image/png", "JPEG": "image/jpeg", "GIF": "image/gif",
               "WEBP": "image/webp"}
# Bytes a kind of file begins with.
SIGNATURES: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "image"), (b"\xff\xd8\xff", "image"), (b"GIF87a", "image"),
    (b"GIF89a", "image"), (b"%PDF-", "pdf"))
MB = 1024 * 1024


@dataclass(frozen=True)
class Limits:
    """How much of a file Thoth reads (FILE_MAX_MB; the rest are the model's limits)."""

    max_bytes: int = 20 * MB
    # The longer side of an image shown to the model, in pixels.
    image_side: int = 1568
    # Pixels an image may unfold into before it is refused unopened.
    image_pixels: int = 50_000_000
    # Bytes of an image shown: the Messages API takes 5 MB of base64, three quarters of
    # it in bytes. A larger one is sent again as a JPEG.
    image_bytes: int = 5 * MB * 3 // 4
    # A PDF shown whole: at most this many pages and bytes (the Messages API's limits).
    pdf_pages: int = 100
    pdf_bytes: int = 32 * MB
    # Characters of a text file shown and kept; past it, its head and tail.
    text_chars: int = 60_000


@dataclass(frozen=True)
class Read:
    """A file read: what the model is shown, and what memory keeps."""

    name: str
    kind: Kind
    # What memory keeps of it, and what a model that cannot see it reads (None: an image
    # no turn has described yet).
    text: str | None
    # What the model is shown as an image or a document: the bytes and their type.
    shown: bytes | None = None
    media_type: str | None = None
    # Said beside it: what was cut or left out.
    note: str | None = None
    # A PDF's pages (None for other kinds).
    pages: int | None = None
    # The file as it came: its size in bytes, its type as sent, where it is opened again.
    size: int = 0
    mimetype: str | None = None
    permalink: str | None = None


@dataclass(frozen=True)
class Unread:
    """A file not read, and why, in words for the person who shared it."""

    name: str
    why: str
    size: int = 0
    mimetype: str | None = None
    permalink: str | None = None

    def line(self) -> str:
        return f"I could not read {self.name}: {self.why}."


def read(file: SharedFile, limits: Limits = Limits()) -> Read | Unread:
    """``file`` read as its bytes say it is (never raises for a bad file), with its size,
    type and permalink."""
    return replace(_read(file, limits), size=len(file.data), mimetype=file.mimetype,
                   permalink=file.permalink)


def over_the_cap(name: str, size: int, limits: Limits) -> Unread | None:
    """The file of ``size`` bytes refused for its size, or None when it is within the cap
    (asked before a large file is read whole: the terminal's /attach)."""
    if size <= limits.max_bytes:
        return None
    return Unread(name, f"it is {size / MB:.1f} MB, over the {limits.max_bytes // MB} MB"
                        " files may be", size=size)


def _read(file: SharedFile, limits: Limits) -> Read | Unread:
    too_large = over_the_cap(file.name, len(file.data), limits)
    if too_large is not None:
        return too_large
    if not file.data:
        return Unread(file.name, "it is empty")
    kind = _kind_of(file.data)
    if kind == "image":
        return _image(file, limits)
    if kind == "pdf":
        return _pdf(file, limits)
    text = _as_text(file.data)
    if text is None:
        return Unread(file.name, "it is not an image, a PDF or text, which is what"
                                 " Thoth reads")
    return _text(file.name, text, limits)


def _kind_of(data: bytes) -> str | None:
    for signature, kind in SIGNATURES:
        if data.startswith(signature):
            return kind
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image"
    return None


def _image(file: SharedFile, limits: Limits) -> Read | Unread:
    # Imported when a file is read: every command's start would pay for it otherwise.
    from PIL import Image, UnidentifiedImageError

    try:
        # Opening reads the header only: the size is checked before a pixel is decoded
        # (Pillow's own check, far past this limit, refuses the rest).
        with Image.open(io.BytesIO(file.data)) as image:
            media_type = IMAGE_TYPES.get(str(image.format))
            if media_type is None:
                return Unread(file.name, f"{image.format} images are not read")
            width, height = image.size
            if width * height > limits.image_pixels:
                raise Image.DecompressionBombError(f"{width}x{height}")
            image.load()
            shown, note = _scaled(image, str(image.format), len(file.data), limits)
    except Image.DecompressionBombError:
        return Unread(file.name, "the image would unfold into more pixels than Thoth"
                                 " opens (it may be built to exhaust memory)")
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError):
        return Unread(file.name, "the image is damaged or cut short")
    return Read(file.name, "image", None, shown or file.data,
                media_type if shown is None else _type_written(shown), note)


def _scaled(image: Image.Image, image_format: str, size: int,
            limits: Limits) -> tuple[bytes | None, str | None]:
    """The image scaled to ``limits.image_side`` and within ``limits.image_bytes`` (None:
    small enough as it is)."""
    width, height = image.size
    if max(width, height) <= limits.image_side and size <= limits.image_bytes:
        return None, None
    scale = min(1.0, limits.image_side / max(width, height))
    mode = "RGBA" if image.mode in ("RGBA", "LA", "P") else "RGB"
    # Converted only when it must be (a copy of the whole image), and reduced by whole
    # factors before the last, exact resize (``reducing_gap``): the big image is walked
    # once, into a far smaller one.
    pixels = image if image.mode == mode else image.convert(mode)
    smaller = pixels.resize((max(1, round(width * scale)), max(1, round(height * scale))),
                            reducing_gap=2.0)
    out = io.BytesIO()
    # JPEG stays JPEG (photos); everything else becomes PNG (lossless, one frame).
    smaller.save(out, "JPEG" if image_format == "JPEG" and smaller.mode == "RGB" else "PNG")
    if out.tell() > limits.image_bytes:
        # A photo saved as PNG can be larger than the API takes: a JPEG of it is not.
        out = io.BytesIO()
        smaller.convert("RGB").save(out, "JPEG", quality=85)
    note = f"scaled from {width}x{height}" if scale < 1 else "made smaller to send"
    return out.getvalue(), note


def _type_written(shown: bytes) -> str:
    """What ``_scaled`` wrote: a JPEG (a JPEG kept, or any image too large as a PNG), or
    a PNG."""
    return "image/jpeg" if shown.startswith(b"\xff\xd8\xff") else "image/png"


def _pdf(file: SharedFile, limits: Limits) -> Read | Unread:
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    try:
        reader = PdfReader(io.BytesIO(file.data))
        encrypted = reader.is_encrypted
        if encrypted and not reader.decrypt(""):
            return Unread(file.name, "the PDF is password-protected")
        pages = [page.extract_text() or "" for page in reader.pages]
    except (PdfReadError, ValueError, KeyError, TypeError, OSError):
        return Unread(file.name, "the PDF is damaged or not one Thoth can read")
    text = "\n\n".join(f"[page {number}]\n{page.strip()}"
                       for number, page in enumerate(pages, start=1) if page.strip())
    whole = (len(pages) <= limits.pdf_pages and len(file.data) <= limits.pdf_bytes
             and not encrypted)
    note = None if whole else (
        "encrypted (opened without a password): its text only, as the model takes no"
        " encrypted PDF" if encrypted else
        f"{len(pages)} pages: its text only (the model reads {limits.pdf_pages} pages at"
        " most)")
    kept = _text(file.name, text, limits).text if text else ""
    return Read(file.name, "pdf", kept, file.data if whole else None,
                "application/pdf" if whole else None, note, pages=len(pages))


def _as_text(data: bytes) -> str | None:
    """The bytes as text, when they are text: UTF-8 (a BOM allowed), with few control
    characters."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return None
    controls = sum(1 for character in text[:4096]
                   if ord(character) < 32 and character not in "\n\r\t\f")
    return None if controls > len(text[:4096]) // 100 else text


def _text(name: str, text: str, limits: Limits) -> Read:
    if len(text) <= limits.text_chars:
        return Read(name, "text", text)
    head, tail = text[: limits.text_chars * 3 // 4], text[-(limits.text_chars // 4):]
    cut = len(text) - len(head) - len(tail)
    return Read(name, "text", f"{head}\n[… {cut:,} characters cut …]\n{tail}",
                note=f"{cut:,} of its {len(text):,} characters cut from the middle")

"""What a turn's files become: what the model is shown of them, and what memory keeps.

The model is shown what its row of the catalogue says it takes (``Capabilities``):
images and PDFs as content blocks, up to its count and page limits and within the
request's size, the rest as their text — a PDF past its limits by its extracted text,
an image a model cannot see by its name. Text files are quoted. The files that were not
read are named, with why, so the model neither guesses at them nor asks for them again
(the person has been told in a line of their own). Without a model (the offline
responder) every file is its text.

Memory keeps no bytes: each file's name, kind, size, type, permalink, and its extract
(the PDF's text, the text file as the model saw it; an image's description, once the
model has given one: ``image_descriptions.py``).
"""

from __future__ import annotations

from collections.abc import Sequence

from bridge.files.reading import Read, Unread
from bridge.model.catalogue import Capabilities
from bridge.model.protocol import Attachment
from layers.episodic.episode import EpisodeFile

# Of the Messages API's 32 MB a request, what files shown as they are may take in base64
# (the rest is the prompt's): past it, a PDF is shown as its text.
BLOCK_BYTES = 24 * 1024 * 1024
# Once a request holds more images than this, each may be at most 2000 px a side (the
# Vision page); Thoth scales every image to 1568 px, well within both.
MANY_IMAGES = 20

SharedFiles = Sequence[Read | Unread]


def attachments_for(files: SharedFiles, capabilities: Capabilities | None,
                    ) -> tuple[Attachment, ...]:
    """The files as the model is shown them (``capabilities`` None: no model, text only)."""
    shown: list[Attachment] = []
    # The API counts images and documents together against its images a request.
    blocks = pages = encoded = 0
    for file in files:
        if isinstance(file, Unread):
            continue
        size = _base64_size(file.shown)
        if file.kind == "image" and file.shown is not None:
            if (capabilities is not None and capabilities.images
                    and blocks < capabilities.images_a_request
                    and encoded + size <= BLOCK_BYTES):
                blocks, encoded = blocks + 1, encoded + size
                shown.append(Attachment(file.name, "image", file.media_type, file.shown))
            else:
                shown.append(Attachment(file.name, "text", text=_not_shown(file, capabilities)))
            continue
        if file.kind == "pdf" and file.shown is not None and capabilities is not None \
                and capabilities.pdfs and pages + (file.pages or 0) <= capabilities.pdf_pages \
                and blocks < capabilities.images_a_request and encoded + size <= BLOCK_BYTES:
            blocks, pages, encoded = blocks + 1, pages + (file.pages or 0), encoded + size
            shown.append(Attachment(file.name, "document", file.media_type, file.shown))
            continue
        shown.append(Attachment(file.name, "text", text=_as_text(file)))
    unread = [file.line() for file in files if isinstance(file, Unread)]
    if unread:
        shown.append(Attachment("", "unread", text="\n".join(unread)))
    return tuple(shown)


def kept_files(files: SharedFiles, descriptions: dict[str, str] | None = None,
               ) -> tuple[EpisodeFile, ...]:
    """The files as memory keeps them (redacted by the store, as every episode is)."""
    described = descriptions or {}
    return tuple(
        EpisodeFile(file.name, "other", file.size, file.mimetype, file.permalink,
                    unread=file.why)
        if isinstance(file, Unread) else
        EpisodeFile(file.name, file.kind, file.size, file.mimetype, file.permalink,
                    extract=(file.text if file.text is not None
                             else described.get(file.name, "")))
        for file in files)


def file_names(files: SharedFiles) -> str:
    """The files named in a line: what a message of files and no words says."""
    return ", ".join(file.name for file in files)


def with_files_named(text: str, files: SharedFiles) -> str:
    """A message as the transcript keeps it: its words, and which files came with it."""
    if not files or text.startswith("[shared "):  # a message of files alone names them
        return text
    return f"{text}\n[shared: {file_names(files)}]"


def _as_text(file: Read) -> str:
    note = f"[{file.note}]\n" if file.note else ""
    if file.kind == "pdf":
        pages = f"a PDF of {file.pages} pages" if file.pages else "a PDF"
        return f"[{pages}, shown as its text]\n{note}{file.text or '[no text in it]'}"
    return f"{note}{file.text or ''}"


def _not_shown(file: Read, capabilities: Capabilities | None) -> str:
    if capabilities is None or not capabilities.images:
        return "[an image: this model is not shown images]"
    return "[an image, not shown: the request holds as many images as it may]"


def _base64_size(data: bytes | None) -> int:
    return 0 if data is None else (len(data) + 2) // 3 * 4

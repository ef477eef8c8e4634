"""What the model is shown of a turn's files, per model, and what memory keeps of them."""

from __future__ import annotations

import dataclasses

from bridge.files.reading import Read, Unread
from bridge.model.catalogue import CATALOGUE
from bridge.pipeline.shared_files import (
    BLOCK_BYTES,
    attachments_for,
    kept_files,
    with_files_named,
)
from layers.episodic.chunking import FILE_WINDOWS, file_units
from layers.episodic.file_passages import passage_for

OPUS = CATALOGUE.capabilities("claude-opus-5-5")
SONNET_200K = CATALOGUE.capabilities("claude-sonnet-4-6")
IMAGE = Read("shot.png", "image", None, b"\x89PNG fake", "image/png", size=9)
PDF = Read("spec.pdf", "pdf", "[page 1]\nDeadline March 14", b"%PDF-1.7 fake",
           "application/pdf", pages=3, size=13)
LOG = Read("app.log", "text", "line one\nline two", note="12 of its 30 characters cut",
           size=30)
UNREAD = Unread("secret.pdf", "the PDF is password-protected", size=99)


def test_a_model_that_sees_is_shown_images_and_pdfs_as_they_are() -> None:
    shown = attachments_for([IMAGE, PDF, LOG, UNREAD], OPUS)
    assert [(a.name, a.kind) for a in shown] == [
        ("shot.png", "image"), ("spec.pdf", "document"), ("app.log", "text"), ("", "unread")]
    assert shown[0].data == IMAGE.shown and shown[1].media_type == "application/pdf"
    assert shown[2].text.startswith("[12 of its 30 characters cut]")
    assert shown[3].text == "I could not read secret.pdf: the PDF is password-protected."


def test_without_a_model_every_file_is_its_text() -> None:
    shown = attachments_for([IMAGE, PDF], None)
    assert [a.kind for a in shown] == ["text", "text"]
    assert "not shown images" in shown[0].text
    assert "Deadline March 14" in shown[1].text and "a PDF of 3 pages" in shown[1].text


def test_past_a_models_limits_the_rest_are_text() -> None:
    many = [dataclasses.replace(IMAGE, name=f"{n}.png") for n in range(101)]
    shown = attachments_for(many, SONNET_200K)
    assert sum(a.kind == "image" for a in shown) == SONNET_200K.images_a_request == 100
    assert shown[-1].kind == "text"
    # Pages are counted across the request.
    long_pdfs = [dataclasses.replace(PDF, name=f"{n}.pdf", pages=60) for n in range(2)]
    assert [a.kind for a in attachments_for(long_pdfs, OPUS)] == ["document", "text"]
    # And bytes: what is sent as it is stays within the request's size.
    big = dataclasses.replace(PDF, shown=b"%" * (BLOCK_BYTES // 2), pages=1)
    assert [a.kind for a in attachments_for([big, big], OPUS)] == ["document", "text"]


def test_memory_keeps_names_extracts_and_why_not_never_bytes() -> None:
    kept = kept_files([IMAGE, PDF, UNREAD], {"shot.png": "a login form"})
    assert [(f.name, f.kind, f.extract, f.unread) for f in kept] == [
        ("shot.png", "image", "a login form", None),
        ("spec.pdf", "pdf", "[page 1]\nDeadline March 14", None),
        ("secret.pdf", "other", "", "the PDF is password-protected")]
    assert not any(hasattr(f, "data") or hasattr(f, "shown") for f in kept)


def test_the_transcript_names_the_files_once() -> None:
    assert with_files_named("see this", [PDF, LOG]) == "see this\n[shared: spec.pdf, app.log]"
    assert with_files_named("[shared spec.pdf]", [PDF]) == "[shared spec.pdf]"
    assert with_files_named("no files", []) == "no files"


def test_the_passage_is_the_part_the_question_is_about() -> None:
    extract = " ".join(["filler words about nothing"] * 200
                       + ["the rollback plan needs two approvers"]
                       + ["more filler words here"] * 200)
    assert "rollback plan needs two approvers" in passage_for(extract, "who approves a rollback?")
    assert passage_for(extract, "zebra").startswith("filler words")
    assert passage_for("", "anything") == ""


def test_a_files_windows_are_embedded_up_to_a_bound() -> None:
    units = file_units([("huge.txt", "word " * 100_000), ("empty.txt", "  ")])
    assert len(units) == FILE_WINDOWS
    assert all(unit.startswith("huge.txt: ") for unit in units)

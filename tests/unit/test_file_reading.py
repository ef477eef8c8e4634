"""A shared file read as its bytes say it is: images scaled for the model, PDFs shown
whole and their text kept, text cut to its head and tail; a bad file is one line saying
which and why, never an exception."""

from __future__ import annotations

import io

import pytest
from fpdf import FPDF
from PIL import Image

from bridge.files.reading import Limits, Read, Unread, read
from bridge.files.shared_file import SharedFile


def _png(width: int, height: int) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (width, height), (200, 30, 30)).save(out, "PNG")
    return out.getvalue()


def _pdf(pages: list[str], *, password: str | None = None) -> bytes:
    pdf = FPDF()
    if password is not None:
        pdf.set_encryption(owner_password="owner", user_password=password)
    pdf.set_font("helvetica", size=12)
    for text in pages:
        pdf.add_page()
        pdf.multi_cell(0, 10, text)
    return bytes(pdf.output())


def test_an_image_is_shown_scaled_within_the_models_limits() -> None:
    small = read(SharedFile("error.png", _png(800, 600)))
    assert isinstance(small, Read) and small.kind == "image"
    assert small.media_type == "image/png" and small.note is None
    assert small.text is None  # kept by name until a turn has described it
    big = read(SharedFile("dashboard.png", _png(4000, 1000)))
    assert isinstance(big, Read) and big.shown is not None
    assert Image.open(io.BytesIO(big.shown)).size == (1568, 392)
    assert big.note == "scaled from 4000x1000"


def test_a_pdf_is_shown_whole_and_its_text_kept_page_by_page() -> None:
    found = read(SharedFile("spec.pdf", _pdf(["The deploy runbook says restart nginx",
                                              "Then check the health page"])))
    assert isinstance(found, Read) and found.kind == "pdf"
    assert found.media_type == "application/pdf" and found.shown is not None
    assert found.text is not None
    assert "[page 1]\nThe deploy runbook says restart nginx" in found.text
    assert "[page 2]\nThen check the health page" in found.text
    longer = read(SharedFile("long.pdf", _pdf([f"page {n}" for n in range(5)])),
                  Limits(pdf_pages=3))
    assert isinstance(longer, Read) and longer.shown is None  # its text only
    assert longer.note == "5 pages: its text only (the model reads 3 pages at most)"


def test_text_is_kept_and_a_long_one_is_its_head_and_tail() -> None:
    log = "\n".join(f"2026-11-29 line {n} INFO all good" for n in range(5000))
    found = read(SharedFile("server.log", log.encode()), Limits(text_chars=4000))
    assert isinstance(found, Read) and found.kind == "text" and found.text is not None
    assert found.text.startswith("2026-11-29 line 0 INFO")
    assert found.text.endswith("line 4999 INFO all good")
    assert "characters cut …]" in found.text and "cut from the middle" in str(found.note)
    csv = read(SharedFile("data.csv", b"\xef\xbb\xbfname,count\ndeploys,4\n"))
    assert isinstance(csv, Read) and csv.text == "name,count\ndeploys,4\n"


@pytest.mark.parametrize(("name", "data", "why"), [
    ("huge.bin", b"x" * (2 * 1024 * 1024 + 1), "over the 2 MB files may be"),
    ("empty.txt", b"", "it is empty"),
    ("locked.pdf", _pdf(["secret plans"], password="hunter2"), "password-protected"),
    ("broken.pdf", b"%PDF-1.7\nthis is not a PDF at all", "damaged or not one Thoth can"),
    ("cut.png", _png(100, 100)[:60], "damaged or cut short"),
    ("program.exe", bytes(range(256)) * 4, "not an image, a PDF or text"),
])
def test_a_file_that_cannot_be_read_says_which_and_why(name: str, data: bytes,
                                                        why: str) -> None:
    found = read(SharedFile(name, data), Limits(max_bytes=2 * 1024 * 1024))
    assert isinstance(found, Unread), found
    assert found.line().startswith(f"I could not read {name}: ") and why in found.line()


# Pillow warns at its own limit (89M pixels) as it reads the header; Thoth's, lower,
# refuses the image before a pixel is decoded.
@pytest.mark.filterwarnings("ignore::PIL.Image.DecompressionBombWarning")
def test_an_image_that_would_unfold_past_the_pixel_limit_is_refused_unopened() -> None:
    # 12,000 x 12,000 one-colour pixels: a few hundred KB that decode to 432 MB.
    bomb = io.BytesIO()
    Image.new("1", (12_000, 12_000)).save(bomb, "PNG")
    found = read(SharedFile("bomb.png", bomb.getvalue()))
    assert isinstance(found, Unread) and "more pixels than Thoth opens" in found.why


def test_what_a_file_is_is_told_by_its_bytes_not_its_name() -> None:
    found = read(SharedFile("screenshot.png", _pdf(["a PDF named as an image"])))
    assert isinstance(found, Read) and found.kind == "pdf"

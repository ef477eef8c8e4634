"""Shared files to the model, through the real SDK and ``AnthropicModel``, against the
loopback Messages API that checks image and document blocks per model as the real one
does (``tests/servers/anthropic_rules.py``): what Thoth sends is taken, block for block;
what the API refuses comes back as ``ModelRefusedRequest`` in the API's own words; and
what ``attachments_for`` makes of real files is taken by every current model.

The files are made here: images by Pillow, PDFs by fpdf2, so their bytes are real.
"""

from __future__ import annotations

import asyncio
import base64
import io
import os
from dataclasses import replace
from typing import Any

import anthropic
import pytest
from fpdf import FPDF
from PIL import Image
from pydantic import SecretStr

from bridge.files.reading import Read, Unread, read
from bridge.files.shared_file import SharedFile
from bridge.model.anthropic_model import AnthropicModel, api_params, client_options
from bridge.model.catalogue import CATALOGUE, Capabilities
from bridge.model.protocol import (
    Attachment,
    ModelRefusedRequest,
    ModelRequest,
    ModelResult,
    Said,
    SystemSection,
)
from bridge.pipeline.shared_files import attachments_for
from tests.integration.test_model_contract import _client
from tests.servers.anthropic_api import FakeAnthropic
from tests.servers.anthropic_rules import media_refusal

WORDS = "What do these files show?"
CURRENT = sorted(m.id for m in CATALOGUE.models.values() if m.status == "current")
# A model with a 200k-token context window: 100 images a request, not 600.
SMALL_WINDOW = "claude-sonnet-4-6"


def _image(size: tuple[int, int], image_format: str = "PNG", color: str = "teal") -> bytes:
    out = io.BytesIO()
    Image.new("RGB", size, color).save(out, image_format)
    return out.getvalue()


def _noise_png(side: int) -> bytes:
    """A PNG that does not compress: its bytes are about its pixels' (3 a pixel)."""
    out = io.BytesIO()
    Image.frombytes("RGB", (side, side), os.urandom(side * side * 3)).save(out, "PNG")
    return out.getvalue()


def _pdf(pages: int, *, title: str = "release plan", **encryption: str) -> bytes:
    pdf = FPDF()
    pdf.set_font("helvetica", size=12)
    for number in range(1, pages + 1):
        pdf.add_page()
        pdf.cell(text=f"Page {number} of the {title}: deploys go out on Fridays.")
    if encryption:
        pdf.set_encryption(**encryption)  # type: ignore[arg-type]
    return bytes(pdf.output())


def _image_of(name: str, data: bytes, media_type: str = "image/png") -> Attachment:
    return Attachment(name, "image", media_type, data)


def _document(name: str, data: bytes) -> Attachment:
    return Attachment(name, "document", "application/pdf", data)


def _request(model: str, attachments: tuple[Attachment, ...]) -> ModelRequest:
    return ModelRequest(model=model, system=(SystemSection("persona", "You are Thoth."),),
                        messages=(Said("user", WORDS, attachments=attachments),),
                        max_tokens=1024)


def _ask(fake: FakeAnthropic, model: str, attachments: tuple[Attachment, ...]) -> ModelResult:
    """One request through Thoth's adapter and the real async SDK, as the app builds it."""

    async def run() -> ModelResult:
        client = anthropic.AsyncAnthropic(**client_options(
            SecretStr("sk-ant-test"), fake.url, timeout_s=30, max_retries=0))
        adapter = AnthropicModel(client, model)
        try:
            return await adapter.respond(_request(model, attachments), _ignore)
        finally:
            await adapter.aclose()

    return asyncio.run(run())


async def _ignore(_: str) -> None:
    return None


def _sent(fake: FakeAnthropic) -> list[dict[str, Any]]:
    """The content blocks of the last request's (only) message."""
    content: list[dict[str, Any]] = fake.requests[-1].body["messages"][-1]["content"]
    return content


def _bytes_of(block: dict[str, Any]) -> bytes:
    return base64.b64decode(block["source"]["data"])


def test_a_png_a_jpeg_and_a_pdf_reach_the_model_as_blocks_named_first_words_last(
    fake_anthropic: FakeAnthropic,
) -> None:
    png, jpeg, pdf = _image((640, 360)), _image((800, 600), "JPEG", "orange"), _pdf(3)
    result = _ask(fake_anthropic, "claude-opus-5-5", (
        _image_of("chart.png", png), _image_of("photo.jpg", jpeg, "image/jpeg"),
        _document("spec.pdf", pdf)))

    assert result.text and fake_anthropic.refusals == []
    blocks = _sent(fake_anthropic)
    assert [b["type"] for b in blocks] == ["text", "image", "text", "image", "text",
                                           "document", "text"]
    names = [blocks[0]["text"], blocks[2]["text"], blocks[4]["text"]]
    assert names == ['<shared-file name="chart.png"/>', '<shared-file name="photo.jpg"/>',
                     '<shared-file name="spec.pdf"/>']
    shown = (blocks[1], blocks[3], blocks[5])
    assert [b["source"]["type"] for b in shown] == ["base64"] * 3
    assert [b["source"]["media_type"] for b in shown] == ["image/png", "image/jpeg",
                                                          "application/pdf"]
    assert [_bytes_of(b) for b in shown] == [png, jpeg, pdf]
    assert blocks[5]["title"] == "spec.pdf"
    assert blocks[-1] == {"type": "text", "text": WORDS}


MANY_1PX = tuple(_image_of(f"dot-{n}.png", _image((1, 1))) for n in range(101))


@pytest.mark.parametrize(
    ("model", "attachments", "said"),
    [
        ("claude-opus-5-5", (_image_of("shot.png", _image((40, 40)), "image/jpeg"),),
         "messages.0.content.1.image.source.base64: The image was specified using the"
         " image/jpeg media type, but the image appears to be a image/png image"),
        ("claude-opus-5-5", (_image_of("scan.bmp", _image((40, 40), "BMP"), "image/bmp"),),
         "messages.0.content.1.image.source.base64.media_type: Input should be"
         " 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'"),
        ("claude-opus-5-5", (_image_of("garbage.png", b"not an image at all"),),
         "Could not process image"),
        ("claude-opus-5-5", (_image_of("icon.png", _image((16, 16), "ICO")),),
         "messages.0.content.1.image.source.base64: The image was specified using the"
         " image/png media type, but the image appears to be a image/ico image"),
        (SMALL_WINDOW, MANY_1PX, "too many images and documents: 101 + 0 > 100"),
        (SMALL_WINDOW, (*MANY_1PX[:100], _document("plan.pdf", _pdf(1))),
         "too many images and documents: 100 + 1 > 100"),
        ("claude-opus-5-5", (_image_of("banner.png", _image((8001, 1))),),
         "messages.0.content.1.image.source.base64.data: At least one of the image"
         " dimensions exceed max allowed size: 8000 pixels"),
        ("claude-opus-5-5", (*MANY_1PX[:20], _image_of("wide.png", _image((2001, 1)))),
         "messages.0.content.41.image.source.base64.data: At least one of the image"
         " dimensions exceed max allowed size for many-image requests: 2000 pixels"),
        ("claude-opus-5-5", (_document("book.pdf", _pdf(101)),),
         "A maximum of 100 PDF pages may be provided."),
        ("claude-opus-5-5", (_document("one.pdf", _pdf(60)), _document("two.pdf", _pdf(60))),
         "A maximum of 100 PDF pages may be provided."),
        ("claude-opus-5-5", (_document("locked.pdf", _pdf(2, owner_password="o",
                                                          user_password="u")),),
         "messages.0.content.1.pdf.source.base64.data: The PDF specified is password"
         " protected."),
        ("claude-opus-5-5", (_document("cut.pdf", _pdf(2)[:200]),),
         "messages.0.content.1.pdf.source.base64.data: The PDF specified was not valid."),
    ],
    ids=["png-sent-as-jpeg", "bmp", "not-an-image", "ico-sent-as-png", "101-images-on-a-200k-model",
         "100-images-and-a-pdf-on-a-200k-model", "8001-px", "2001-px-among-21",
         "101-page-pdf", "two-pdfs-of-60-pages", "password-protected-pdf", "cut-pdf"],
)
def test_what_the_api_refuses_is_told_in_its_words(
    fake_anthropic: FakeAnthropic, model: str, attachments: tuple[Attachment, ...], said: str,
) -> None:
    with pytest.raises(ModelRefusedRequest) as refused:
        _ask(fake_anthropic, model, attachments)
    assert refused.value.status == 400 and refused.value.api_message == said
    assert len(fake_anthropic.requests) == 1  # not retried: the same answer would come


def test_an_image_over_5_mb_of_base64_is_refused(fake_anthropic: FakeAnthropic) -> None:
    noise = _noise_png(1_200)  # about 4.3 MB, 5.8 MB as base64
    encoded = (len(noise) + 2) // 3 * 4
    with pytest.raises(ModelRefusedRequest) as refused:
        _ask(fake_anthropic, "claude-opus-5-5", (_image_of("noise.png", noise),))
    assert refused.value.api_message == (
        "messages.0.content.1.image.source.base64: image exceeds 5 MB maximum:"
        f" {encoded} bytes > 5242880 bytes")


def test_the_limits_are_the_models_own(fake_anthropic: FakeAnthropic) -> None:
    """The 101 images a 200k model refuses, a model of 600 takes; 100 pages are taken."""
    _ask(fake_anthropic, "claude-opus-5-5", MANY_1PX)
    _ask(fake_anthropic, SMALL_WINDOW, (_document("book.pdf", _pdf(100)),))
    _ask(fake_anthropic, "claude-opus-5-5", (*MANY_1PX[:21], _image_of(
        "wide.png", _image((2000, 10)))))
    _ask(fake_anthropic, "claude-opus-5-5", (_image_of("tall.png", _image((10, 8000))),))
    assert fake_anthropic.refusals == []


def test_the_loopback_refuses_blocks_the_api_does_not_take(
    fake_anthropic: FakeAnthropic,
) -> None:
    """What Thoth's adapter never sends, sent raw: the loopback refuses it all the same."""
    png = base64.b64encode(_image((4, 4))).decode()

    def block(kind: str, source: dict[str, Any]) -> list[dict[str, Any]]:
        return [{"type": kind, "source": source}, {"type": "text", "text": "and?"}]

    cases = [
        (block("image", {"type": "file", "file_id": "file_1"}), "Input tag 'file'"),
        (block("image", {"type": "base64", "media_type": "image/png", "data": "%%%"}),
         "invalid base64 data"),
        (block("image", {"type": "base64", "media_type": "image/png", "data": ""}),
         "image cannot be empty"),
        (block("document", {"type": "base64", "media_type": "text/csv", "data": png}),
         "Input should be 'application/pdf'"),
        (block("document", {"type": "text", "media_type": "text/csv", "data": "a,b"}),
         "Input should be 'text/plain'"),
    ]
    client = _client(fake_anthropic)
    for content, reason in cases:
        with pytest.raises(anthropic.BadRequestError, match=reason):
            client.messages.create(model="claude-opus-5-5", max_tokens=100, messages=[
                {"role": "user", "content": content}])
    plain = block("document", {"type": "text", "media_type": "text/plain", "data": "a,b"})
    assert client.messages.create(model="claude-opus-5-5", max_tokens=100,
                                  messages=[{"role": "user", "content": plain}]).content


def test_a_model_without_pdfs_refuses_a_document_and_is_shown_the_pdfs_text() -> None:
    """No listed model lacks PDFs today, and the loopback serves the listed rows: so the
    rule is asked directly, with a row made here, about the params Thoth's adapter sends."""
    row: Capabilities = replace(CATALOGUE.capabilities("claude-opus-5-5"), pdfs=False,
                                pdf_pages=0)
    pdf = _read("spec.pdf", _pdf(3))
    assert pdf.shown is not None
    as_document = api_params(_request("claude-opus-5-5", (_document("spec.pdf", pdf.shown),)),
                             row)
    assert media_refusal(as_document, row) == "claude-opus-5-5 does not support PDFs."
    shown = attachments_for([pdf], row)
    assert [a.kind for a in shown] == ["text"]
    assert "Page 2 of the release plan" in shown[0].text
    assert media_refusal(api_params(_request("claude-opus-5-5", shown), row), row) is None


def _read(name: str, data: bytes) -> Read:
    file = read(SharedFile(name, data))
    assert isinstance(file, Read), file
    return file


@pytest.fixture(scope="module")
def shared() -> list[Read | Unread]:
    """What a busy thread shares: 25 images of every type and size (some past what the
    API reads unscaled), a 30-page PDF, a 120-page PDF and a CSV, read as Thoth reads
    them."""
    images = [_read(f"screen-{n}.png", _image((3000 + n, 1200))) for n in range(10)]
    images += [_read(f"photo-{n}.jpg", _image((900, 4000), "JPEG")) for n in range(5)]
    images += [_read(f"anim-{n}.gif", _image((300, 200), "GIF")) for n in range(5)]
    images += [_read(f"sticker-{n}.webp", _image((512, 512), "WEBP")) for n in range(5)]
    return [*images, _read("spec.pdf", _pdf(30)),
            _read("handbook.pdf", _pdf(120, title="handbook")),
            _read("deploys.csv", b"day,service\nfriday,api\nfriday,web\n")]


@pytest.mark.parametrize("model", CURRENT)
def test_what_attachments_for_makes_of_real_files_each_current_model_takes(
    fake_anthropic: FakeAnthropic, shared: list[Read | Unread], model: str,
) -> None:
    _ask(fake_anthropic, model, attachments_for(shared, CATALOGUE.capabilities(model)))

    assert fake_anthropic.refusals == []
    blocks = _sent(fake_anthropic)
    images = [b for b in blocks if b["type"] == "image"]
    assert len(images) == 25
    # More than 20 images: each within 2000 px a side (Thoth scales to 1568).
    assert max(max(Image.open(io.BytesIO(_bytes_of(b))).size) for b in images) <= 1568
    (document,) = [b for b in blocks if b["type"] == "document"]
    assert document["title"] == "spec.pdf"
    texts = [b["text"] for b in blocks if b["type"] == "text"]
    handbook = next(t for t in texts if t.startswith('<shared-file name="handbook.pdf">'))
    assert "[a PDF of 120 pages, shown as its text]" in handbook
    assert "Page 120 of the handbook" in handbook
    assert any("friday,web" in t for t in texts)


def test_a_200k_model_is_shown_its_100_images_and_the_rest_named(
    fake_anthropic: FakeAnthropic,
) -> None:
    dots = [_read(f"dot-{n}.png", _image((1, 1))) for n in range(101)]
    shown = attachments_for(dots, CATALOGUE.capabilities(SMALL_WINDOW))
    _ask(fake_anthropic, SMALL_WINDOW, shown)
    assert fake_anthropic.refusals == []
    assert [a.kind for a in shown].count("image") == 100
    assert "not shown" in shown[-1].text


def test_a_200k_model_shown_its_100_images_and_a_pdf_is_within_its_limit(
    fake_anthropic: FakeAnthropic,
) -> None:
    # The API counts images and documents together: the PDF is shown as its text.
    files: list[Read | Unread] = [_read(f"dot-{n}.png", _image((1, 1))) for n in range(100)]
    files.append(_read("spec.pdf", _pdf(2)))
    shown = attachments_for(files, CATALOGUE.capabilities(SMALL_WINDOW))
    _ask(fake_anthropic, SMALL_WINDOW, shown)
    assert fake_anthropic.refusals == []
    assert [a.kind for a in shown if a.name == "spec.pdf"] == ["text"]


def test_a_pdf_encrypted_with_an_owner_password_only_is_shown_as_its_text(
    fake_anthropic: FakeAnthropic,
) -> None:
    # The API takes standard PDFs only, neither passwords nor encryption.
    locked = _read("owned.pdf", _pdf(2, owner_password="owner", user_password=""))
    shown = attachments_for([locked], CATALOGUE.capabilities("claude-opus-5-5"))
    _ask(fake_anthropic, "claude-opus-5-5", shown)
    assert fake_anthropic.refusals == []
    assert [a.kind for a in shown] == ["text"] and "encrypted" in shown[0].text

#!/usr/bin/env python3
"""Writes the small document fixtures in tests/fixtures/documents/ that the C++ tests cannot
easily make themselves (plain PDFs are generated inside tests/unit/pdf_test.cc instead):

  encrypted_rc4.pdf   one 200 x 100 pt page with a black box in its top-left quarter, encrypted
                      with pypdf (RC4-128; user password "secret", owner password "owner")
  multipage.tif       three pages as Pillow's ImageSequence sees them: 40x30 RGB red,
                      20x50 grey 128 (mode L), 16x8 palette (mode P, blue)

Usage: /work/venv/ref/bin/python tools/reference/make_pdf_fixtures.py
(pypdf and pillow versions are pinned in requirements.txt). The output is deterministic except for
the PDF's random file ID; the tests only rely on the password and the page geometry.
"""
import io
from pathlib import Path

from PIL import Image
from pypdf import PdfWriter
from pypdf.generic import ArrayObject, DecodedStreamObject, FloatObject, NameObject

OUT = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "documents"


def encrypted_pdf(path: Path) -> None:
    writer = PdfWriter()
    page = writer.add_blank_page(width=200, height=100)
    content = DecodedStreamObject()
    content.set_data(b"0 0 0 rg 0 50 100 50 re f\n")
    page[NameObject("/Contents")] = writer._add_object(content)
    page[NameObject("/MediaBox")] = ArrayObject([FloatObject(0), FloatObject(0), FloatObject(200), FloatObject(100)])
    writer.encrypt(user_password="secret", owner_password="owner", algorithm="RC4-128")
    buf = io.BytesIO()
    writer.write(buf)
    path.write_bytes(buf.getvalue())


def multipage_tiff(path: Path) -> None:
    red = Image.new("RGB", (40, 30), (255, 0, 0))
    grey = Image.new("L", (20, 50), 128)
    pal = Image.new("P", (16, 8), 0)
    pal.putpalette([0, 0, 255] + [0, 0, 0] * 255)
    red.save(path, format="TIFF", save_all=True, append_images=[grey, pal])


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    encrypted_pdf(OUT / "encrypted_rc4.pdf")
    multipage_tiff(OUT / "multipage.tif")
    for p in sorted(OUT.iterdir()):
        print(p.name, p.stat().st_size)


if __name__ == "__main__":
    main()

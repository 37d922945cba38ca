#!/usr/bin/env python3
"""Golden fixtures for locr's image decoding (src/io/image*.cc) and preprocessing
(src/model/image_input.cc, src/model/lightonocr/processor.cc).

Run with the reference environment (Pillow 13, torch 2.15, torchvision 0.29.2, transformers 5.24):

    /work/venv/ref/bin/python tools/reference/make_preprocess_fixtures.py [--out tests/fixtures/preprocess]

What it writes (all small and deterministic):
  decode/<name>.<ext>          test images in every format and mode, plus truncated/corrupt copies
  decode_golden.safetensors    U8 [H, W, 3] per image = np.array(Image.open(f).convert("RGB"));
                               "<name>:hf" = transformers' convert_to_rgb (alpha composited on white),
                               only where it differs in kind (the image has alpha/transparency);
                               "<name>:exif" = ImageOps.exif_transpose(...).convert("RGB") where the
                               file has an EXIF orientation that Pillow leaves to exif_transpose
  pp_<case>.png                inputs for preprocessing
  pp_<case>_a<14|28>.png       the processor's resized uint8 image (lossless PNG, HWC)
  preprocess_golden.safetensors
      "<case>/a<p>/target"      I32 [2]  (H', W') from the processor
      "<case>/a<p>/pixel_values" F32 [3, R, C] the top-left R x C corner of the normalised
                                pixel_values (all of it for small images; 14 x 448 for large ones,
                                to stay small: the full resized uint8 image is in the PNG)
  An align-28 resized PNG identical to the align-14 one is not written twice (the test falls back).

The pixel values come from the transformers image processor itself (PixtralImageProcessor, the
torchvision backend that LightOnOCR's processor config selects), called with patch_size 14 for
align 14 (LightOnOcrProcessor) and 28 for align 28 (PixtralProcessor passes patch_size *
spatial_merge_size). Nothing here is used at runtime.
"""

from __future__ import annotations

import argparse
import io
import os
import struct
import zlib

import numpy as np
import torch
from PIL import Image, ImageDraw, ImageOps
from safetensors.numpy import save_file
from transformers.image_processing_utils import SizeDict
from transformers.image_transforms import convert_to_rgb
from transformers.models.pixtral.image_processing_pixtral import PixtralImageProcessor

MEAN = [0.48145466, 0.4578275, 0.40821073]
STD = [0.26862954, 0.26130258, 0.27577711]


# ----------------------------------------------------------------------------------------------
# Small hand-written encoders for variants Pillow cannot write.


def png_chunk(tag: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)


def make_png(w, h, bit_depth, color_type, rows, extra=b"", interlace=False) -> bytes:
    """rows: list of per-row byte strings (already packed to bit_depth)."""
    channels = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}[color_type]
    bits_pp = channels * bit_depth
    if interlace:
        # Adam7: re-pack each pass from the full rows.
        def get_px(y, x):  # returns the bits of pixel (x, y) as an int
            row = rows[y]
            if bits_pp >= 8:
                n = bits_pp // 8
                return row[x * n:(x + 1) * n]
            bit = x * bits_pp
            return (row[bit >> 3] >> (8 - bits_pp - (bit & 7))) & ((1 << bits_pp) - 1)

        raw = b""
        passes = [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2)]
        for x0, y0, dx, dy in passes:
            xs = list(range(x0, w, dx))
            ys = list(range(y0, h, dy))
            if not xs or not ys:
                continue
            for y in ys:
                if bits_pp >= 8:
                    line = b"".join(get_px(y, x) for x in xs)
                else:
                    acc, nbits, out = 0, 0, bytearray()
                    for x in xs:
                        acc = (acc << bits_pp) | get_px(y, x)
                        nbits += bits_pp
                        if nbits == 8:
                            out.append(acc)
                            acc, nbits = 0, 0
                    if nbits:
                        out.append(acc << (8 - nbits))
                    line = bytes(out)
                raw += b"\x00" + line
    else:
        raw = b"".join(b"\x00" + r for r in rows)
    ihdr = struct.pack(">IIBBBBB", w, h, bit_depth, color_type, 0, 0, 1 if interlace else 0)
    return (b"\x89PNG\r\n\x1a\n" + png_chunk(b"IHDR", ihdr) + extra + png_chunk(b"IDAT", zlib.compress(raw, 9))
            + png_chunk(b"IEND", b""))


def pack_bits(values, bits):
    acc, nbits, out = 0, 0, bytearray()
    for v in values:
        acc = (acc << bits) | int(v)
        nbits += bits
        while nbits >= 8:
            out.append((acc >> (nbits - 8)) & 0xFF)
            nbits -= 8
    if nbits:
        out.append((acc << (8 - nbits)) & 0xFF)
    return bytes(out)


def make_bmp(w, h, bits, pixel_rows, palette=None, header_size=40, compression=0, masks=None, top_down=False,
             raw_data=None, colors_used=0):
    """pixel_rows: rows top to bottom, each already packed (unpadded). palette: list of (r, g, b)."""
    stride = ((w * bits + 31) >> 3) & ~3
    if raw_data is None:
        rows = [r + b"\x00" * (stride - len(r)) for r in pixel_rows]
        if not top_down:
            rows = rows[::-1]
        raw_data = b"".join(rows)
    pal = b"".join(bytes([b, g, r, 0]) for r, g, b in (palette or []))
    header = struct.pack("<IiiHHIIiiII", header_size, w, -h if top_down else h, 1, bits, compression,
                         len(raw_data), 2835, 2835, colors_used, 0)
    if header_size > 40:
        extra = b""
        if masks:
            extra += struct.pack("<IIII", *masks)
        header += (extra + b"\x00" * header_size)[: header_size - 40]
    elif masks:
        header += struct.pack("<III", *masks[:3])
    offset = 14 + len(header) + len(pal)
    return b"BM" + struct.pack("<IHHI", offset + len(raw_data), 0, 0, offset) + header + pal + raw_data


def make_tiff(w, h, bps, spp, photometric, data, extra_samples=None, planar=1, rows_per_strip=None,
              colormap=None, orientation=None, tile=None, sample_format=None, big_endian=False):
    """Minimal uncompressed TIFF. data: the exact bytes of the image in file order (strips/tiles are
    cut from it by this function). For tiles, `data` must already be in tile order."""
    e = ">" if big_endian else "<"
    entries = []

    def add(tag, typ, values):
        entries.append((tag, typ, values if isinstance(values, (list, tuple)) else [values]))

    add(256, 4, w)
    add(257, 4, h)
    add(258, 3, [bps] * spp)
    add(259, 3, 1)
    add(262, 3, photometric)
    if orientation:
        add(274, 3, orientation)
    add(277, 3, spp)
    if planar != 1:
        add(284, 3, planar)
    if colormap is not None:
        add(320, 3, colormap)
    if extra_samples is not None:
        add(338, 3, extra_samples)
    if sample_format is not None:
        add(339, 3, [sample_format] * spp)
    # Data chunks.
    if tile:
        tw, th = tile
        n_tiles = ((w + tw - 1) // tw) * ((h + th - 1) // th) * (spp if planar == 2 else 1)
        tile_bytes = len(data) // n_tiles
        chunks = [data[i * tile_bytes:(i + 1) * tile_bytes] for i in range(n_tiles)]
        add(322, 4, tw)
        add(323, 4, th)
    else:
        rps = rows_per_strip or h
        row_bytes = (w * bps * (spp if planar == 1 else 1) + 7) // 8
        planes = spp if planar == 2 else 1
        plane_bytes = row_bytes * h
        chunks = []
        for p in range(planes):
            for y in range(0, h, rps):
                start = p * plane_bytes + y * row_bytes
                chunks.append(data[start:start + row_bytes * min(rps, h - y)])
        add(278, 4, rps)
    # Layout: header, IFD, out-of-line values, data.
    entries.sort(key=lambda t: t[0])
    n_extra_entries = 2
    ifd_size = 2 + 12 * (len(entries) + n_extra_entries) + 4
    pos = 8 + ifd_size
    blobs = b""
    data_start = None
    offsets_tag = 324 if tile else 273
    counts_tag = 325 if tile else 279
    entries.append((offsets_tag, 4, None))
    entries.append((counts_tag, 4, [len(c) for c in chunks]))
    entries.sort(key=lambda t: t[0])

    def pack_values(typ, values):
        fmt = {3: "H", 4: "I"}[typ]
        return struct.pack(e + fmt * len(values), *values)

    # First pass: place out-of-line values (except offsets, which depend on data position).
    out_of_line = {}
    for tag, typ, values in entries:
        if values is None:
            values = [0] * len(chunks)
        raw = pack_values(typ, values)
        if len(raw) > 4:
            out_of_line[tag] = pos + len(blobs)
            blobs += raw + (b"\x00" if len(raw) % 2 else b"")
    data_start = pos + len(blobs)
    chunk_offsets = []
    p = data_start
    for c in chunks:
        chunk_offsets.append(p)
        p += len(c)
    # Rewrite the offsets blob now that positions are known.
    blobs = b""
    for tag, typ, values in entries:
        if values is None:
            values = chunk_offsets
        raw = pack_values(typ, values)
        if len(raw) > 4:
            blobs += raw + (b"\x00" if len(raw) % 2 else b"")
    ifd = struct.pack(e + "H", len(entries))
    for tag, typ, values in entries:
        if values is None:
            values = chunk_offsets
        raw = pack_values(typ, values)
        if len(raw) > 4:
            ifd += struct.pack(e + "HHII", tag, typ, len(values), out_of_line[tag])
        else:
            ifd += struct.pack(e + "HHI", tag, typ, len(values)) + raw + b"\x00" * (4 - len(raw))
    ifd += struct.pack(e + "I", 0)
    head = (b"MM\x00*" if big_endian else b"II*\x00") + struct.pack(e + "I", 8)
    return head + ifd + blobs + b"".join(chunks)


def gif_lzw_literal(indices, min_code_size=8):
    """LZW stream that only emits literals, with a clear code often enough that the code width
    never grows (valid for any decoder)."""
    clear, eoi = 1 << min_code_size, (1 << min_code_size) + 1
    width = min_code_size + 1
    codes = [clear]
    run = 0
    for v in indices:
        if run == (1 << min_code_size) - 3:
            codes.append(clear)
            run = 0
        codes.append(int(v))
        run += 1
    codes.append(eoi)
    acc, nbits, out = 0, 0, bytearray()
    for c in codes:
        acc |= c << nbits
        nbits += width
        while nbits >= 8:
            out.append(acc & 0xFF)
            acc >>= 8
            nbits -= 8
    if nbits:
        out.append(acc & 0xFF)
    blocks = b"".join(bytes([len(out[i:i + 255])]) + bytes(out[i:i + 255]) for i in range(0, len(out), 255))
    return bytes([min_code_size]) + blocks + b"\x00"


def make_gif(screen_w, screen_h, frame, palette, transparent=None, local_palette=None):
    """frame: (x0, y0, indices[h, w]). palette: list of 2**k (r, g, b)."""
    x0, y0, idx = frame
    fh, fw = idx.shape
    bits = max(1, (len(palette) - 1).bit_length())
    gct = b"".join(bytes(c) for c in palette)
    out = b"GIF89a" + struct.pack("<HHBBB", screen_w, screen_h, 0x80 | 0x70 | (bits - 1), 0, 0) + gct
    if transparent is not None:
        out += b"\x21\xf9\x04" + bytes([1, 0, 0, transparent]) + b"\x00"
    flags = 0
    lct = b""
    if local_palette is not None:
        lbits = max(1, (len(local_palette) - 1).bit_length())
        flags = 0x80 | (lbits - 1)
        lct = b"".join(bytes(c) for c in local_palette)
    out += b"\x2c" + struct.pack("<HHHHB", x0, y0, fw, fh, flags) + lct
    out += gif_lzw_literal(idx.reshape(-1)) + b"\x3b"
    return out


# ----------------------------------------------------------------------------------------------
# Test images


def noise(rng, h, w, c=3):
    return rng.integers(0, 256, size=(h, w, c), dtype=np.uint8)


def smooth(h, w, seed):
    """Smooth colour gradients with a few sharp edges (compresses well, decodes distinctly)."""
    y, x = np.mgrid[0:h, 0:w].astype(np.float64)
    r = 127.5 + 127.5 * np.sin(x / (3.0 + seed) + y / 7.0)
    g = 255.0 * x / max(w - 1, 1)
    b = 255.0 * ((x // 5 + y // 3) % 2)
    return np.stack([r, g, b], axis=-1).round().astype(np.uint8)


def document(w, h, seed, density=1.0):
    """White page with dark text-like marks (sharp edges, like the pages the model reads).
    `density` < 1 leaves most lines blank so large pages stay small as PNG."""
    rng = np.random.default_rng(seed)
    im = Image.new("RGB", (w, h), (255, 255, 255))
    d = ImageDraw.Draw(im)
    line_h = 18
    for top in range(6, h - 10, line_h):
        if rng.random() > density:
            continue
        x = 8 + int(rng.integers(0, 12))
        right = w - 20 if density >= 1.0 else min(w - 20, x + int(rng.integers(100, 600)))
        while x < right:
            word = "".join(chr(int(c)) for c in rng.integers(97, 123, size=int(rng.integers(2, 9))))
            ink = tuple(int(v) for v in rng.integers(0, 70, size=3))
            d.text((x, top), word, fill=ink)
            x += 7 * len(word) + 6
    for _ in range(max(1, int(w * h * density) // 40000)):
        x0, y0 = int(rng.integers(0, w)), int(rng.integers(0, h))
        d.rectangle([x0, y0, x0 + int(rng.integers(2, 30)), y0 + int(rng.integers(2, 12))],
                    fill=tuple(int(v) for v in rng.integers(0, 256, size=3)))
    return im


def save(im, fmt, **kw):
    b = io.BytesIO()
    im.save(b, fmt, **kw)
    return b.getvalue()


def decode_cases():
    rng = np.random.default_rng(1234)
    W, H = 37, 29  # odd on purpose: chroma subsampling edges, row padding, partial bytes
    cases = {}
    rgb = smooth(H, W, 1)
    rgb[5:9, 3:30] = noise(rng, 4, 27)
    im_rgb = Image.fromarray(rgb)
    alpha = ((np.arange(W)[None, :] * 7 + np.arange(H)[:, None] * 11) % 256).astype(np.uint8)
    alpha[0, :5] = 0
    alpha[1, :5] = 255
    im_rgba = Image.fromarray(np.dstack([rgb, alpha]), "RGBA")
    grey = rgb[..., 0]

    def exif(orientation):
        e = Image.Exif()
        e[274] = orientation
        return e

    # --- PNG
    cases["png_rgb.png"] = save(im_rgb, "PNG")
    cases["png_l.png"] = save(Image.fromarray(grey), "PNG")
    cases["png_la.png"] = save(Image.fromarray(np.dstack([grey, alpha]), "LA"), "PNG")
    cases["png_rgba.png"] = save(im_rgba, "PNG")
    im_p = im_rgb.quantize(colors=40, dither=Image.Dither.NONE)
    cases["png_p.png"] = save(im_p, "PNG")
    trns = bytes([(i * 37) % 256 for i in range(12)])  # first 12 entries with alpha, rest opaque
    cases["png_p_trns.png"] = save(im_p, "PNG", transparency=trns)
    cases["png_p_trns1.png"] = save(im_p, "PNG", transparency=3)
    g16 = (np.arange(W * H, dtype=np.uint32).reshape(H, W) * 61 % 65536).astype(np.uint16)
    g16[0, :8] = [0, 1, 254, 255, 256, 300, 65535, 128]
    cases["png_gray16.png"] = save(Image.fromarray(g16), "PNG")
    rgb16 = (rng.integers(0, 65536, size=(H, W, 3))).astype(">u2")
    cases["png_rgb16.png"] = make_png(W, H, 16, 2, [r.tobytes() for r in rgb16])
    la16 = (rng.integers(0, 65536, size=(H, W, 2))).astype(">u2")
    cases["png_la16.png"] = make_png(W, H, 16, 4, [r.tobytes() for r in la16])
    rgba16 = (rng.integers(0, 65536, size=(H, W, 4))).astype(">u2")
    cases["png_rgba16.png"] = make_png(W, H, 16, 6, [r.tobytes() for r in rgba16])
    for bits in (1, 2, 4):
        v = rng.integers(0, 1 << bits, size=(H, W))
        cases[f"png_gray{bits}.png"] = make_png(W, H, bits, 0, [pack_bits(r, bits) for r in v])
    v = rng.integers(0, 4, size=(H, W))
    cases["png_gray2_trns.png"] = make_png(W, H, 2, 0, [pack_bits(r, 2) for r in v],
                                           extra=png_chunk(b"tRNS", struct.pack(">H", 0)))
    v = rng.integers(0, 16, size=(H, W))
    pal16 = bytes(rng.integers(0, 256, size=16 * 3, dtype=np.uint8))
    cases["png_p4.png"] = make_png(W, H, 4, 3, [pack_bits(r, 4) for r in v], extra=png_chunk(b"PLTE", pal16[:10 * 3]))
    cases["png_l_trns.png"] = save(Image.fromarray(grey), "PNG", transparency=int(grey[3, 3]))
    cases["png_rgb_trns.png"] = save(im_rgb, "PNG", transparency=tuple(int(c) for c in rgb[2, 2]))
    cases["png_exif8.png"] = save(im_rgb, "PNG", exif=exif(8))
    cases["png_exif2_rgba.png"] = save(im_rgba, "PNG", exif=exif(2))
    cases["png_interlaced.png"] = make_png(W, H, 8, 2, [r.tobytes() for r in rgb], interlace=True)
    v = rng.integers(0, 2, size=(H, W))
    cases["png_gray1_interlaced.png"] = make_png(W, H, 1, 0, [pack_bits(r, 1) for r in v], interlace=True)

    # --- JPEG
    photo = smooth(H, W, 2)
    photo[10:20, 10:30] = noise(rng, 10, 20)
    im_photo = Image.fromarray(photo)
    cases["jpeg_420.jpg"] = save(im_photo, "JPEG", quality=90)
    cases["jpeg_444.jpg"] = save(im_photo, "JPEG", quality=95, subsampling=0)
    cases["jpeg_422.jpg"] = save(im_photo, "JPEG", quality=85, subsampling=1)
    cases["jpeg_gray.jpg"] = save(Image.fromarray(photo[..., 1]), "JPEG", quality=90)
    cmyk = np.dstack([photo, 255 - photo[..., :1]])
    cases["jpeg_cmyk.jpg"] = save(Image.fromarray(cmyk, "CMYK"), "JPEG", quality=90)
    cases["jpeg_progressive.jpg"] = save(im_photo, "JPEG", quality=80, progressive=True)
    big = np.array(document(301, 203, 5))
    big[100:140, 50:250] = noise(rng, 40, 200)
    cases["jpeg_doc_420.jpg"] = save(Image.fromarray(big), "JPEG", quality=75)
    cases["jpeg_doc_restart.jpg"] = save(Image.fromarray(big), "JPEG", quality=75, restart_marker_rows=2)

    # EXIF orientation (kept as is by Image.open; ImageOps.exif_transpose goldens are ":exif").
    cases["jpeg_exif6.jpg"] = save(im_photo, "JPEG", quality=90, exif=exif(6))
    cases["jpeg_exif4.jpg"] = save(im_photo, "JPEG", quality=90, exif=exif(4))
    cases["jpeg_exif5_gray.jpg"] = save(Image.fromarray(photo[..., 1]), "JPEG", quality=90, exif=exif(5))

    # --- WebP
    cases["webp_lossy.webp"] = save(im_photo, "WEBP", quality=80)
    cases["webp_lossless.webp"] = save(im_rgb, "WEBP", lossless=True)
    cases["webp_lossless_alpha.webp"] = save(im_rgba, "WEBP", lossless=True, exact=True)
    cases["webp_lossy_alpha.webp"] = save(im_rgba, "WEBP", quality=70)
    frames = [Image.fromarray(smooth(H, W, s)) for s in (3, 4)]
    cases["webp_exif3.webp"] = save(im_photo, "WEBP", quality=80, exif=exif(3))
    cases["webp_exif7_alpha.webp"] = save(im_rgba, "WEBP", lossless=True, exact=True, exif=exif(7))
    cases["webp_anim.webp"] = save(frames[0], "WEBP", save_all=True, append_images=frames[1:], duration=100,
                                   lossless=True)

    # --- BMP
    cases["bmp_24.bmp"] = save(im_rgb, "BMP")
    cases["bmp_8_palette.bmp"] = save(im_p, "BMP")
    cases["bmp_8_gray.bmp"] = save(Image.fromarray(grey), "BMP")
    cases["bmp_1.bmp"] = save(Image.fromarray(grey).convert("1"), "BMP")
    cases["bmp_32.bmp"] = save(im_rgba, "BMP")  # Pillow writes BI_RGB 32-bit; readers drop the 4th byte
    pal = [tuple(int(c) for c in rng.integers(0, 256, size=3)) for _ in range(16)]
    v = rng.integers(0, 16, size=(H, W))
    cases["bmp_4.bmp"] = make_bmp(W, H, 4, [pack_bits(r, 4) for r in v], palette=pal)
    cases["bmp_4_topdown.bmp"] = make_bmp(W, H, 4, [pack_bits(r, 4) for r in v], palette=pal, top_down=True)
    v8 = rng.integers(0, 20, size=(H, W))  # indices past the 16-colour palette -> black
    cases["bmp_8_short_palette.bmp"] = make_bmp(W, H, 8, [bytes(r.astype(np.uint8)) for r in v8], palette=pal,
                                                colors_used=16)
    p16 = rng.integers(0, 65536, size=(H, W)).astype("<u2")
    cases["bmp_16_555.bmp"] = make_bmp(W, H, 16, [r.tobytes() for r in p16])
    cases["bmp_16_565.bmp"] = make_bmp(W, H, 16, [r.tobytes() for r in p16], compression=3,
                                       masks=(0xF800, 0x7E0, 0x1F))
    bgra = np.dstack([rgb[..., ::-1], alpha]).astype(np.uint8)
    cases["bmp_32_alpha_v5.bmp"] = make_bmp(W, H, 32, [r.tobytes() for r in bgra], header_size=124, compression=3,
                                            masks=(0xFF0000, 0xFF00, 0xFF, 0xFF000000))
    xbgr = np.dstack([alpha, rgb[..., ::-1]]).astype(np.uint8)  # bytes X, B, G, R
    cases["bmp_32_xbgr.bmp"] = make_bmp(W, H, 32, [r.tobytes() for r in xbgr], compression=3,
                                        masks=(0xFF000000, 0xFF0000, 0xFF00, 0))
    cases["bmp_24_topdown.bmp"] = make_bmp(W, H, 24, [r[..., ::-1].tobytes() for r in rgb], top_down=True)
    # RLE8: runs, absolute runs (odd length -> padding), a delta, end of lines, end of bitmap.
    rle_w, rle_h = 13, 6
    rle = bytearray()
    for y in range(rle_h):  # file order is bottom-up
        if y == 2:
            rle += bytes([0, 2, 3, 1])  # delta: 3 right, 1 up -> skip rest of this row + 3 pixels
            rle += bytes([4, 7, 0, 0])
            continue
        rle += bytes([5, (y * 3) % 16])
        rle += bytes([0, 3, 1, 2, 3, 0])  # absolute: 3 pixels + pad byte
        rle += bytes([9, 4])  # too long for the row: cut at 13
        rle += bytes([0, 0])
    rle += bytes([0, 1])
    cases["bmp_rle8.bmp"] = make_bmp(rle_w, rle_h, 8, None, palette=pal, compression=1, raw_data=bytes(rle))
    rle4 = bytearray()
    for y in range(rle_h):
        rle4 += bytes([7, 0x1F])
        rle4 += bytes([0, 5, 0x23, 0x45, 0x60, 0])  # absolute: 5 nibbles in 3 bytes + pad
        rle4 += bytes([0, 0])
    rle4 += bytes([0, 1])
    cases["bmp_rle4.bmp"] = make_bmp(rle_w, rle_h, 4, None, palette=pal, compression=2, raw_data=bytes(rle4))

    # --- GIF
    cases["gif_palette.gif"] = save(im_p, "GIF", interlace=False)
    cases["gif_interlaced.gif"] = save(im_p, "GIF", interlace=True)
    cases["gif_transparent.gif"] = save(im_p, "GIF", transparency=5)
    cases["gif_gray.gif"] = save(Image.fromarray(grey), "GIF")
    gpal = [tuple(int(c) for c in rng.integers(0, 256, size=3)) for _ in range(8)]
    gidx = rng.integers(0, 8, size=(9, 11)).astype(np.uint8)
    cases["gif_offset_trns.gif"] = make_gif(W, H, (5, 7, gidx), gpal, transparent=2)
    cases["gif_offset.gif"] = make_gif(W, H, (5, 7, gidx), gpal)
    cases["gif_grows_screen.gif"] = make_gif(12, 10, (6, 4, gidx), gpal)
    gidx2 = rng.integers(0, 12, size=(9, 11)).astype(np.uint8)  # indices past the 8-colour table
    cases["gif_local_palette.gif"] = make_gif(11, 9, (0, 0, gidx2), gpal, local_palette=gpal[::-1])

    # --- TIFF
    cases["tiff_rgb.tif"] = save(im_rgb, "TIFF")
    cases["tiff_gray.tif"] = save(Image.fromarray(grey), "TIFF")
    cases["tiff_lzw.tif"] = save(im_rgb, "TIFF", compression="tiff_lzw")
    cases["tiff_deflate.tif"] = save(im_rgb, "TIFF", compression="tiff_adobe_deflate")
    cases["tiff_packbits_gray.tif"] = save(Image.fromarray(grey), "TIFF", compression="packbits")
    cases["tiff_jpeg.tif"] = save(im_photo, "TIFF", compression="jpeg")
    # YCbCr: JPEG-compressed is decoded to RGB by libtiff's JPEG codec; LZW goes through
    # TIFFRGBAImage in Pillow too. (Uncompressed YCbCr, which Pillow converts itself, is not covered.)
    cases["tiff_ycbcr_jpeg.tif"] = save(im_photo.convert("YCbCr"), "TIFF", compression="jpeg")
    cases["tiff_ycbcr_lzw.tif"] = save(im_photo.convert("YCbCr"), "TIFF", compression="tiff_lzw")
    cases["tiff_rgba.tif"] = save(im_rgba, "TIFF")
    cases["tiff_rgba_lzw.tif"] = save(im_rgba, "TIFF", compression="tiff_lzw")
    cases["tiff_1bit_g4.tif"] = save(Image.fromarray(grey).convert("1"), "TIFF", compression="group4")
    cases["tiff_1bit.tif"] = save(Image.fromarray(grey).convert("1"), "TIFF")
    cases["tiff_p.tif"] = save(im_p, "TIFF")
    cases["tiff_cmyk.tif"] = save(Image.fromarray(cmyk, "CMYK"), "TIFF")
    cases["tiff_gray16.tif"] = save(Image.fromarray(g16), "TIFF")
    cases["tiff_orient6.tif"] = save(im_rgb, "TIFF", tiffinfo={274: 6})
    cases["tiff_orient3_lzw.tif"] = save(im_rgb, "TIFF", tiffinfo={274: 3}, compression="tiff_lzw")
    cases["tiff_orient8.tif"] = make_tiff(W, H, 8, 3, 2, rgb.tobytes(), orientation=8)
    cases["tiff_orient5.tif"] = make_tiff(W, H, 8, 3, 2, rgb.tobytes(), orientation=5)
    cases["tiff_orient7.tif"] = make_tiff(W, H, 8, 3, 2, rgb.tobytes(), orientation=7)
    pm = rgb.astype(np.uint32) * alpha[..., None] // 255  # premultiplied (associated) alpha
    cases["tiff_rgba_assoc.tif"] = make_tiff(W, H, 8, 4, 2, np.dstack([pm, alpha]).astype(np.uint8).tobytes(),
                                             extra_samples=[1])
    cases["tiff_rgba_noextra.tif"] = make_tiff(W, H, 8, 4, 2, np.dstack([rgb, alpha]).tobytes())
    cases["tiff_rgbx.tif"] = make_tiff(W, H, 8, 4, 2, np.dstack([rgb, alpha]).tobytes(), extra_samples=[0])
    cases["tiff_miniswhite.tif"] = make_tiff(W, H, 8, 1, 0, grey.tobytes(), rows_per_strip=5)
    v4 = rng.integers(0, 16, size=(H, W))
    cases["tiff_miniswhite4.tif"] = make_tiff(W, H, 4, 1, 0, b"".join(pack_bits(r, 4) for r in v4))
    cases["tiff_rgb16_be.tif"] = make_tiff(W, H, 16, 3, 2, rgb16.astype(">u2").tobytes(), big_endian=True)
    cases["tiff_gray16_miniswhite.tif"] = make_tiff(W, H, 16, 1, 0, g16.astype("<u2").tobytes())
    planes = np.ascontiguousarray(rgb.transpose(2, 0, 1))
    cases["tiff_planar.tif"] = make_tiff(W, H, 8, 3, 2, planes.tobytes(), planar=2, rows_per_strip=8)
    tw = th = 16
    tiles = b""
    padded = np.zeros(((H + th - 1) // th * th, (W + tw - 1) // tw * tw, 3), np.uint8)
    padded[:H, :W] = rgb
    for ty in range(0, H, th):
        for tx in range(0, W, tw):
            tiles += padded[ty:ty + th, tx:tx + tw].tobytes()
    cases["tiff_tiled.tif"] = make_tiff(W, H, 8, 3, 2, tiles, tile=(tw, th))
    cmap = [int(v) for v in rng.integers(0, 65536, size=3 * 16)]
    cases["tiff_p4_cmap16.tif"] = make_tiff(W, H, 4, 1, 3, b"".join(pack_bits(r, 4) for r in v4), colormap=cmap)
    cases["tiff_la.tif"] = make_tiff(W, H, 8, 2, 1, np.dstack([grey, alpha]).tobytes(), extra_samples=[2])

    return cases


def broken_cases(good):
    """Truncated and corrupt copies; expected to fail to decode (checked against Pillow below)."""
    out = {}

    def cut(name, frac):
        d = good[name]
        return d[: int(len(d) * frac)]

    out["bad_png_truncated.png"] = cut("png_rgb.png", 0.6)
    d = bytearray(good["png_rgb.png"])
    d[20] ^= 0xFF  # inside IHDR: CRC mismatch
    out["bad_png_crc.png"] = bytes(d)
    out["bad_jpeg_truncated.jpg"] = cut("jpeg_doc_420.jpg", 0.5)
    out["bad_jpeg_no_eoi.jpg"] = good["jpeg_420.jpg"][:-2]
    d = bytearray(good["jpeg_420.jpg"])
    sof = d.find(b"\xff\xc0")
    d[sof + 4: sof + 12] = b"\x00" * 8  # zero height/width/components in SOF0
    out["bad_jpeg_sof.jpg"] = bytes(d)
    out["bad_gif_truncated.gif"] = cut("gif_palette.gif", 0.5)
    out["bad_webp_truncated.webp"] = cut("webp_lossy.webp", 0.5)
    d = bytearray(good["webp_lossy.webp"])
    for i in range(40, min(len(d), 200)):
        d[i] ^= 0x5A
    out["bad_webp_garbage.webp"] = bytes(d)
    out["bad_tiff_truncated.tif"] = cut("tiff_rgb.tif", 0.5)
    out["bad_tiff_lzw_truncated.tif"] = cut("tiff_lzw.tif", 0.4)
    out["bad_bmp_truncated.bmp"] = cut("bmp_24.bmp", 0.5)
    out["bad_bmp_header.bmp"] = good["bmp_24.bmp"][:14] + struct.pack("<I", 77) + good["bmp_24.bmp"][18:]
    out["bad_garbage.bin"] = bytes(np.random.default_rng(7).integers(0, 256, size=300, dtype=np.uint8))
    out["bad_empty.bin"] = b""
    # A header that claims 100000 x 100000 pixels (10^10 > Pillow's bomb limit).
    ihdr = struct.pack(">IIBBBBB", 100000, 100000, 8, 2, 0, 0, 0)
    out["bad_png_bomb.png"] = b"\x89PNG\r\n\x1a\n" + png_chunk(b"IHDR", ihdr) + png_chunk(b"IEND", b"")
    return out


# ----------------------------------------------------------------------------------------------
# Preprocessing


def preprocess_cases():
    rng = np.random.default_rng(99)
    cases = {}
    cases["tiny_10x7"] = Image.fromarray(noise(rng, 7, 10))
    cases["noise_97x61"] = Image.fromarray(noise(rng, 61, 97))
    cases["noise_75x211"] = Image.fromarray(noise(rng, 211, 75))  # portrait, odd grid
    cases["exact_56x42"] = Image.fromarray(noise(rng, 42, 56))  # multiple of 14: no resize at align 14
    cases["doc_300x200"] = document(300, 200, 1)
    cases["wide_1700x90"] = document(1700, 90, 2)
    cases["strong_4000x300"] = document(4000, 300, 3, density=0.35)  # downscale by ~2.6: wide support
    cases["big_1600x1700"] = document(1600, 1700, 4, density=0.06)  # larger than 1540 on both sides
    a = np.dstack([noise(rng, 33, 45), rng.integers(0, 256, size=(33, 45, 1), dtype=np.uint8)])
    cases["rgba_45x33"] = Image.fromarray(a, "RGBA")  # transformers composites onto white first
    return cases


def run_processor(im, align):
    proc = PixtralImageProcessor(size={"longest_edge": 1540}, patch_size={"height": 14, "width": 14},
                                 image_mean=MEAN, image_std=STD, resample=3, rescale_factor=1 / 255)
    out = proc(images=[im], patch_size=align, return_tensors="pt")
    pv = out["pixel_values"][0]
    size = [int(v) for v in out["image_sizes"][0]]
    # The resized uint8 image, via the processor's own resize on the same tensor it builds.
    arr = convert_to_rgb(im, return_numpy=True)
    t = torch.from_numpy(arr).permute(2, 0, 1).contiguous()[None]
    resized = proc.resize(t, size=SizeDict(longest_edge=1540), patch_size=SizeDict(height=align, width=align),
                          resample=3)[0]
    assert list(resized.shape[-2:]) == size, (resized.shape, size)
    # The fused normalisation of that uint8 image must give the processor's pixel_values exactly.
    mean = torch.tensor(MEAN) * (1.0 / (1 / 255))
    std = torch.tensor(STD) * (1.0 / (1 / 255))
    again = (resized.to(torch.float32) - mean[:, None, None]) / std[:, None, None]
    assert torch.equal(again, pv[:, : size[0], : size[1]]), "normalisation formula mismatch"
    return size, resized.permute(1, 2, 0).contiguous().numpy(), pv[:, : size[0], : size[1]].numpy()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "../../tests/fixtures/preprocess"))
    args = ap.parse_args()
    out = os.path.abspath(args.out)
    os.makedirs(os.path.join(out, "decode"), exist_ok=True)

    good = decode_cases()
    bad = broken_cases(good)
    golden = {}
    for name, data in sorted(good.items()):
        with open(os.path.join(out, "decode", name), "wb") as f:
            f.write(data)
        im = Image.open(io.BytesIO(data))
        rgb = np.array(im.convert("RGB"))
        assert rgb.dtype == np.uint8 and rgb.ndim == 3
        golden[name] = np.ascontiguousarray(rgb)
        hf = convert_to_rgb(Image.open(io.BytesIO(data)), return_numpy=True)
        im2 = Image.open(io.BytesIO(data))
        if "A" in im2.getbands() or im2.info.get("transparency") is not None:
            golden[name + ":hf"] = np.ascontiguousarray(hf)
        upright = np.array(ImageOps.exif_transpose(Image.open(io.BytesIO(data))).convert("RGB"))
        if upright.shape != rgb.shape or not np.array_equal(upright, rgb):
            golden[name + ":exif"] = np.ascontiguousarray(upright)
        print(f"{name:32s} {im.mode:6s} {rgb.shape[1]}x{rgb.shape[0]}")
    for name, data in sorted(bad.items()):
        with open(os.path.join(out, "decode", name), "wb") as f:
            f.write(data)
        try:
            Image.open(io.BytesIO(data)).convert("RGB")
            raise SystemExit(f"{name}: Pillow decoded a file meant to be broken")
        except Exception as e:  # noqa: BLE001 - any Pillow failure is what we want
            print(f"{name:32s} Pillow refuses: {type(e).__name__}: {e}")
    save_file(golden, os.path.join(out, "decode_golden.safetensors"), metadata={"pillow": Image.__version__})

    pp = {}
    for case, im in preprocess_cases().items():
        im.save(os.path.join(out, f"pp_{case}.png"))
        im = Image.open(os.path.join(out, f"pp_{case}.png"))
        for align in (14, 28):
            size, resized, pv = run_processor(im, align)
            if align == 14:
                resized14 = resized
            path = os.path.join(out, f"pp_{case}_a{align}.png")
            if align == 28 and resized.shape == resized14.shape and np.array_equal(resized, resized14):
                if os.path.exists(path):
                    os.remove(path)
            else:
                Image.fromarray(resized).save(path, optimize=True)
            small = size[0] * size[1] <= 24000
            rows, cols = (size[0], size[1]) if small else (14, min(size[1], 448))
            pp[f"{case}/a{align}/target"] = np.array(size, dtype=np.int32)
            pp[f"{case}/a{align}/pixel_values"] = np.ascontiguousarray(pv[:, :rows, :cols])
            print(f"pp {case:18s} align {align}: {im.size[0]}x{im.size[1]} -> {size[1]}x{size[0]} "
                  f"(kept {rows}x{cols})")
    # One metadata key only: safetensors writes several in random order, which would churn the file.
    versions = f"torch {torch.__version__}, transformers {__import__('transformers').__version__}"
    save_file(pp, os.path.join(out, "preprocess_golden.safetensors"), metadata={"versions": versions})


if __name__ == "__main__":
    main()

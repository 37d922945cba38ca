"""Small files that decode to a lot of memory, for the memory-limit tests and bench/memory_attacks.py:
a solid grey PNG of any size (zlib keeps 13000x13000 px near 165 KB) and a TIFF of many 1x1 pages."""
import struct
import zlib


def _chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def big_png(width, height, grey=200):
    """An 8-bit greyscale PNG of width x height, one colour; compressed row by row, so making a
    13000 x 13000 one holds only a row in memory."""
    comp = zlib.compressobj(9)
    row = b"\x00" + bytes([grey]) * width
    parts = [comp.compress(row) for _ in range(height)]
    parts.append(comp.flush())
    idat = b"".join(parts)
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", ihdr) + _chunk(b"IDAT", idat) + _chunk(b"IEND", b"")


def many_page_tiff(n_pages, width=8, height=8):
    """A little-endian TIFF with n_pages directories of width x height 8-bit greyscale pixels; every
    page points at the same strip (white), so 10,000 pages take about 1.5 MB."""
    header = b"II*\x00"
    strip = b"\xff" * (width * height)
    strip_off = 8
    first_ifd = strip_off + len(strip) + (len(strip) & 1)
    out = bytearray(header + struct.pack("<I", first_ifd) + strip + b"\x00" * (len(strip) & 1))
    tags = [  # (tag, type, count, value): SHORT = 3, LONG = 4
        (256, 4, 1, width), (257, 4, 1, height), (258, 3, 1, 8), (259, 3, 1, 1), (262, 3, 1, 1),
        (273, 4, 1, strip_off), (277, 3, 1, 1), (278, 4, 1, height), (279, 4, 1, len(strip)),
    ]
    ifd_size = 2 + 12 * len(tags) + 4
    for i in range(n_pages):
        off = first_ifd + i * ifd_size
        assert len(out) == off
        out += struct.pack("<H", len(tags))
        for tag, typ, count, value in tags:
            val = struct.pack("<HH", value, 0) if typ == 3 else struct.pack("<I", value)
            out += struct.pack("<HHI", tag, typ, count) + val
        out += struct.pack("<I", off + ifd_size if i + 1 < n_pages else 0)
    return bytes(out)

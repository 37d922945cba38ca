"""Minimal valid PDFs written by hand, shared by the Python tests (server and tools)."""


def assemble(objs):
    """The PDF file of `objs` (object bodies, numbered from 1; object 1 the catalog): header, the
    objects, a correct cross-reference table and trailer."""
    out = b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n"
    offsets = []
    for i, o in enumerate(objs):
        offsets.append(len(out))
        out += f"{i + 1} 0 obj\n{o}\nendobj\n".encode()
    xref = len(out)
    out += f"xref\n0 {len(objs) + 1}\n0000000000 65535 f \n".encode()
    for off in offsets:
        out += f"{off:010d} 00000 n \n".encode()
    out += f"trailer\n<< /Size {len(objs) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return out


def make_pdf(n_pages, w=144, h=180):
    """A minimal valid PDF (catalog, page tree, one content stream per page, correct xref): each
    page is white with a black bar whose width depends on the page, so pages differ."""
    objs = ["<< /Type /Catalog /Pages 2 0 R >>"]
    kids = " ".join(f"{3 + 2 * i} 0 R" for i in range(n_pages))
    objs.append(f"<< /Type /Pages /Kids [{kids}] /Count {n_pages} >>")
    for i in range(n_pages):
        content = f"0 0 0 rg 10 {h - 40} {30 + 25 * i} 20 re f\n"
        objs.append(f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 {w} {h}] /Resources << >> /Contents {4 + 2 * i} 0 R >>")
        objs.append(f"<< /Length {len(content)} >>\nstream\n{content}\nendstream")
    return assemble(objs)


def make_text_pdf(lines_per_page, w=300, h=200):
    """A PDF whose pages carry a text layer (Helvetica, one line per entry of each page's list of
    strings), so its text can be extracted; ASCII text only."""
    n_pages = len(lines_per_page)
    objs = ["<< /Type /Catalog /Pages 2 0 R >>"]
    kids = " ".join(f"{4 + 2 * i} 0 R" for i in range(n_pages))
    objs.append(f"<< /Type /Pages /Kids [{kids}] /Count {n_pages} >>")
    objs.append("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    for i, lines in enumerate(lines_per_page):
        ops = ["BT", "/F1 10 Tf", f"10 {h - 20} Td", "12 TL"]
        for line in lines:
            esc = line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
            ops.append(f"({esc}) Tj T*")
        ops.append("ET")
        content = "\n".join(ops) + "\n"
        objs.append(f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 {w} {h}] /Resources << /Font << /F1 3 0 R >> >> "
                    f"/Contents {5 + 2 * i} 0 R >>")
        objs.append(f"<< /Length {len(content)} >>\nstream\n{content}\nendstream")
    return assemble(objs)

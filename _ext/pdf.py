"""The book as one PDF: Jupyter Book's single-page HTML, printed by headless Chromium; then checked.

    python _ext/pdf.py SINGLEHTML_DIR OUT.pdf [--mathjax DIR]     # make pdf runs this
    python _ext/pdf.py --check OUT.pdf SINGLEHTML_DIR              # what CI asserts

The single-page build keeps Sphinx's numbered figures and equations, the bibliography and every
executed output. This script copies it to a temporary folder, points MathJax at a local copy (offline;
``--mathjax`` or ``$MATHJAX_DIR``, MathJax 3's ``es5`` folder), adds a table of contents and a print style
(no navigation bars, buttons or sidebars; every chapter on a new page), lets Chromium typeset the
equations and prints to PDF, written atomically. ``--check`` asserts what a reader needs: a reasonable page
count, every numbered figure's label and every chapter title in the text, no unresolved reference (``??``)
and no raw LaTeX left by an untypeset equation.
"""

from __future__ import annotations

import argparse
import html
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

CDN = re.compile(r"https://cdn\.jsdelivr\.net/npm/mathjax@3/es5/")
PRINT_CSS = """
@page { size: A4; margin: 16mm 14mm; }
@media print {
  .bd-header, .bd-header-article, .header-article, .bd-sidebar-primary, .bd-sidebar-secondary, .bd-footer,
  .bd-footer-article, .prev-next-area, .article-header-buttons, .headerbtn, .dropdown-buttons, .search-button,
  .theme-switch-button, .sidebar-toggle, .primary-toggle, .secondary-toggle, #pst-back-to-top, .toggle-button,
  .copybtn, nav, .headerlink { display: none !important; }
  .bd-main, .bd-content, .bd-article-container, .bd-container, .bd-page-width {
    max-width: none !important; width: 100% !important; margin: 0 !important; padding: 0 !important; }
  body { font-size: 10.5pt; }
  section > h1 { break-before: page; }
  #book-pdf-toc { break-after: page; }
  figure, .cell_output img, table { break-inside: avoid; }
  pre { white-space: pre-wrap; word-break: break-all; font-size: 8pt; }
  details, .cell.tag_hide-input details { display: block; }
}
"""


def _chapters(text: str) -> list[tuple[str, str]]:
    """(id, title) of every top-level section (one per page of the book) in the single-page HTML."""
    out = []
    for m in re.finditer(r'<section id="([^"]+)"[^>]*>\s*<h1>(.*?)<a class="headerlink"', text, re.S):
        title = re.sub(r"<[^>]+>", "", m.group(2)).strip()
        out.append((m.group(1), html.unescape(title)))
    return out


def figure_labels(text: str) -> list[str]:
    """The numbered-figure labels ("Fig. 3") of the single-page HTML, in order."""
    return [
        re.sub(r"\s+", " ", html.unescape(m)).strip()
        for m in re.findall(r'<span class="caption-number">(.*?)</span>', text, re.S)
        if "Fig" in m
    ]


def main_page(folder: Path) -> Path:
    """The single page itself: ``index.html``, or the page its meta refresh points at (Jupyter Book's root)."""
    index = Path(folder) / "index.html"
    m = re.search(r'http-equiv="Refresh" content="0; url=([^"]+)"', index.read_text(encoding="utf-8"))
    return Path(folder) / m.group(1) if m else index


def prepare(src: Path, dst: Path, mathjax: str | None) -> Path:
    shutil.copytree(src, dst)
    index = main_page(dst)
    for name in ("_images", "_static"):  # the root page sits in book/ but refers to them as siblings
        if (dst / name).is_dir() and not (index.parent / name).exists():
            shutil.copytree(dst / name, index.parent / name)
    text = index.read_text(encoding="utf-8")
    if mathjax:
        shutil.copytree(mathjax, dst / "_mathjax")
        text = CDN.sub((dst / "_mathjax").as_uri() + "/", text)
    toc = "".join(f'<li><a href="#{i}">{html.escape(t)}</a></li>' for i, t in _chapters(text))
    block = f'<div id="book-pdf-toc"><h1>Contents</h1><ol>{toc}</ol></div>' if toc else ""
    text = text.replace("</head>", f"<style>{PRINT_CSS}</style></head>", 1)
    text = re.sub(r"(<article[^>]*>)", lambda m: m.group(1) + block, text, count=1)
    index.write_text(text, encoding="utf-8")
    return index


def build(singlehtml, out, mathjax=None, browser=None) -> Path:
    singlehtml, out = Path(singlehtml), Path(out)
    if not (singlehtml / "index.html").exists():
        raise FileNotFoundError(
            f"{singlehtml}/index.html not found: build the single-page HTML first "
            "(jupyter-book build --builder singlehtml)"
        )
    mathjax = mathjax or os.environ.get("MATHJAX_DIR")
    if mathjax and not Path(mathjax, "tex-mml-chtml.js").exists():
        raise FileNotFoundError(f"{mathjax} does not contain MathJax 3's es5 tex-mml-chtml.js")
    browser = browser or next(
        (shutil.which(b) for b in ("chromium", "chromium-browser", "google-chrome") if shutil.which(b)), None
    )
    if browser is None:
        raise FileNotFoundError("no Chromium found (Debian: apt-get install chromium)")
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        index = prepare(singlehtml, Path(tmp) / "site", mathjax)
        part = Path(tmp) / "book.pdf"
        subprocess.run(
            [
                browser,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--no-pdf-header-footer",
                "--run-all-compositor-stages-before-draw",
                "--virtual-time-budget=120000",
                f"--print-to-pdf={part}",
                index.as_uri(),
            ],
            check=True,
            capture_output=True,
            timeout=600,
        )
        if not part.exists() or part.stat().st_size == 0:
            raise RuntimeError("Chromium wrote no PDF")
        tmp_out = out.with_name(f".{out.name}.part")
        shutil.copyfile(part, tmp_out)
        os.replace(tmp_out, out)
    return out


def check(pdf, singlehtml) -> dict:
    """Problems of a printed book (empty list when it is fine) and its page count."""
    pdf, singlehtml = Path(pdf), Path(singlehtml)
    info = subprocess.run(["pdfinfo", str(pdf)], capture_output=True, text=True, check=True).stdout
    pages = int(re.search(r"Pages:\s+(\d+)", info).group(1))
    text = subprocess.run(["pdftotext", "-layout", str(pdf), "-"], capture_output=True, text=True, check=True).stdout
    flat = re.sub(r"\s+", " ", text)
    page = main_page(singlehtml)
    source = page.read_text(encoding="utf-8")
    problems = []
    if pages < 30:
        problems.append(f"only {pages} pages")
    figs = figure_labels(source)
    missing = [f for f in dict.fromkeys(figs) if f not in flat]
    if not figs:
        problems.append("no numbered figure in the single-page HTML")
    if missing:
        problems.append(f"numbered figures missing from the PDF text: {missing[:10]}")
    for _, title in _chapters(source):
        if title and title.split()[0] not in flat:
            problems.append(f"chapter {title!r} not in the PDF")
    if "??" in flat:
        problems.append("unresolved reference (??) in the text")
    for raw in (r"\frac", r"\begin{", r"\mathbb", r"\sum_"):
        if raw in flat:
            problems.append(f"raw LaTeX {raw!r} in the text (an equation was not typeset)")
    images = re.findall(r'<img[^>]+src="([^"]+)"', source)
    absent = [
        s
        for s in images
        if not s.startswith(("http", "data:")) and not ((page.parent / s).exists() or (singlehtml / s).exists())
    ]
    if absent:
        problems.append(f"missing images: {absent[:5]}")
    return {"pages": pages, "figures": len(figs), "problems": problems}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true")
    ap.add_argument("first")
    ap.add_argument("second")
    ap.add_argument("--mathjax", default=None)
    args = ap.parse_args(argv)
    if args.check:
        res = check(args.first, args.second)
        print(f"{args.first}: {res['pages']} pages, {res['figures']} numbered figures")
        for p in res["problems"]:
            print("  PROBLEM:", p)
        return 1 if res["problems"] else 0
    out = build(args.first, args.second, args.mathjax)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Real-browser check of the built book: every page rendered, no broken images or internal links, no error
output, equations typeset; a screenshot of every page.

    python tests/book/pagecheck.py _build/html --screenshots _build/screenshots [--mathjax DIR]

Static checks (Python's HTML parser): every ``<img>`` file exists, every internal link points at an existing
page and, with a ``#fragment``, at an existing ``id`` there; no cell output contains a traceback or an error.
Browser checks (headless Chromium at the reader's 1300 px window, ``--dump-dom`` after the page's scripts
ran): the page has a body with its main content, no cell output is wider than its column and no figure is
drawn more than 1.3x wider than it is shown (measured by a script added to a copy of the page), and every
equation is typeset by MathJax without errors.  The book loads MathJax from a
CDN; offline, pass a local copy of MathJax 3's ``es5`` folder with ``--mathjax`` (or ``$MATHJAX_DIR``) and the
pages are checked on a copy that points at it; without one, equation typesetting is reported as not checked.
Exit status 1 when any page fails.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from html import unescape as html_unescape
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlparse

CDN = re.compile(r"https://cdn\.jsdelivr\.net/npm/mathjax@3/es5/")
# added before </body> of the checked copy: the cell outputs wider than their block (cut at the column's edge)
MEASURE = """<script>window.addEventListener("load", function () {
  var wide = [];
  document.querySelectorAll("div.cell_output pre, div.output pre").forEach(function (el) {
    if (el.scrollWidth > el.clientWidth + 1) wide.push(el.textContent.trim().slice(0, 40));
  });
  document.body.setAttribute("data-pagecheck-wide", JSON.stringify(wide));
  var big = [];
  document.querySelectorAll("main img").forEach(function (im) {
    if (im.clientWidth > 0 && im.naturalWidth > 1.3 * im.clientWidth)
      big.push(im.getAttribute("src").split("/").pop() + " " + im.naturalWidth + "/" + im.clientWidth + " px");
  });
  document.body.setAttribute("data-pagecheck-big", JSON.stringify(big));
});</script>"""
BIG = re.compile(r'data-pagecheck-big="([^"]*)"')
WIDE = re.compile(r'data-pagecheck-wide="([^"]*)"')
SKIP_DIRS = {"_static", "_sources", "_images", "_sphinx_design_static", "_panels_static"}


def find_browser() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


class _Page(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.ids, self.imgs, self.links = set(), [], []
        self.math = 0
        self._in_output = 0
        self.output_text = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if "id" in a:
            self.ids.add(a["id"])
        if tag == "a" and a.get("name"):
            self.ids.add(a["name"])
        if tag == "img" and a.get("src"):
            self.imgs.append(a["src"])
        if tag == "a" and a.get("href"):
            self.links.append(a["href"])
        cls = a.get("class", "") or ""
        if "math" in cls.split() or "math notranslate" in cls:
            self.math += 1
        if self._in_output:
            self._in_output += 1
        elif "cell_output" in cls.split() or "output" in cls.split():
            self._in_output = 1

    def handle_endtag(self, tag):
        if self._in_output:
            self._in_output -= 1

    def handle_data(self, data):
        if self._in_output:
            self.output_text.append(data)


def parse(path: Path) -> _Page:
    p = _Page()
    p.feed(path.read_text(encoding="utf-8", errors="replace"))
    return p


def pages(html: Path) -> list[Path]:
    return sorted(p for p in html.rglob("*.html")
                  if not (set(p.relative_to(html).parts[:-1]) & SKIP_DIRS) and p.name not in ("search.html", "genindex.html"))


def static_problems(html: Path, page: Path, parsed: dict) -> list[str]:
    out = []
    info = parsed[page]
    for src in info.imgs:
        u = urlparse(src)
        if u.scheme in ("http", "https", "data"):
            continue
        if not (page.parent / unquote(u.path)).exists():
            out.append(f"missing image {src}")
    for href in info.links:
        u = urlparse(href)
        if u.scheme or href.startswith(("mailto:", "javascript:")):
            continue
        target = page if not u.path else (page.parent / unquote(u.path)).resolve()
        if u.path and not target.exists():
            out.append(f"broken link {href}")
            continue
        if u.fragment and target.suffix == ".html":
            if target not in parsed:
                parsed[target] = parse(target)
            if unquote(u.fragment) not in parsed[target].ids:
                out.append(f"broken anchor {href}")
    text = "".join(info.output_text)
    for bad in ("Traceback (most recent call last)", "Error:", "Exception:"):
        if bad in text:
            out.append(f"error output ({bad!r}) in a cell")
    return out


def browser_dom(browser: str, url: str) -> str:
    with tempfile.TemporaryDirectory() as profile:
        cmd = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-sync",
               "--disable-background-networking", "--disable-component-update", "--allow-file-access-from-files",
               f"--user-data-dir={profile}", "--virtual-time-budget=20000", "--window-size=1300,4000",
               "--dump-dom", url]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=180).stdout


def screenshot(browser: str, url: str, out: Path, height: int = 4000):
    with tempfile.TemporaryDirectory() as profile:
        cmd = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-sync",
               "--disable-background-networking", "--disable-component-update", "--allow-file-access-from-files",
               f"--user-data-dir={profile}", "--virtual-time-budget=20000", "--hide-scrollbars",
               f"--window-size=1300,{height}", f"--screenshot={out}", url]
        subprocess.run(cmd, capture_output=True, timeout=180)


def check(html, screenshots=None, mathjax=None, browser=None) -> dict:
    """Check every page under ``html``; returns {page: [problems]} plus ``"_notes"``.

    ``browser``: path of a Chromium binary (default: found on the PATH), or ``False`` for static checks only.
    """
    html = Path(html).resolve()
    if not (html / "index.html").exists():
        raise FileNotFoundError(f"no built book at {html} (run `make book` first)")
    browser = find_browser() if browser is None else (browser or None)  # False: static checks only
    notes = []
    site = html
    tmp = None
    mathjax = mathjax or os.environ.get("MATHJAX_DIR")
    if mathjax and not Path(mathjax, "tex-mml-chtml.js").exists():
        raise FileNotFoundError(f"{mathjax} does not contain MathJax 3's es5 tex-mml-chtml.js")
    if not mathjax:
        notes.append("equation typesetting not checked: no local MathJax (pass --mathjax or set MATHJAX_DIR)")
    if browser:  # the browser checks run on a copy: the measuring script added, MathJax made local
        tmp = Path(tempfile.mkdtemp(prefix="pagecheck-"))
        site = tmp / "html"
        shutil.copytree(html, site)
        if mathjax:
            shutil.copytree(mathjax, site / "_mathjax")
        for p in site.rglob("*.html"):
            text = p.read_text(encoding="utf-8")
            if mathjax:
                text = CDN.sub((site / "_mathjax").as_uri() + "/", text)
            p.write_text(text.replace("</body>", MEASURE + "</body>", 1), encoding="utf-8")
    if browser is None:
        notes.append("browser checks skipped: no Chromium found")
    results = {}
    all_pages = pages(site)
    parsed = {p: parse(p) for p in all_pages}
    for page in all_pages:
        rel = page.relative_to(site)
        problems = static_problems(site, page, parsed)
        if browser:
            dom = browser_dom(browser, page.as_uri())
            if "<main" not in dom and 'role="main"' not in dom:
                problems.append("page did not render (no main content in the DOM)")
            wide = WIDE.search(dom)
            if wide is None:
                problems.append("the output-width measurement did not run")
            elif json.loads(html_unescape(wide.group(1))):
                cut = json.loads(html_unescape(wide.group(1)))
                problems.append(f"{len(cut)} cell output(s) wider than the column, cut at its edge (first: {cut[0]!r})")
            big = BIG.search(dom)
            if big and json.loads(html_unescape(big.group(1))):  # drawn far wider than shown: small text
                shrunk = json.loads(html_unescape(big.group(1)))
                problems.append(f"{len(shrunk)} figure(s) drawn over 1.3x their displayed width: {shrunk}")
            if mathjax and parsed[page].math:
                typeset = dom.count("<mjx-container")
                if typeset < parsed[page].math:
                    problems.append(f"{parsed[page].math - typeset} of {parsed[page].math} equations not typeset")
                if "<mjx-merror" in dom:
                    problems.append("MathJax error in an equation")
            if screenshots:
                out = Path(screenshots) / (str(rel.with_suffix("")).replace(os.sep, "__") + ".png")
                out.parent.mkdir(parents=True, exist_ok=True)
                screenshot(browser, page.as_uri(), out)
                if not out.exists() or out.stat().st_size < 5000:
                    problems.append("screenshot failed or blank")
        results[str(rel)] = problems
    if tmp:
        shutil.rmtree(tmp, ignore_errors=True)
    results["_notes"] = notes
    return results


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("html", nargs="?", default="_build/html")
    ap.add_argument("--screenshots", default=None)
    ap.add_argument("--mathjax", default=None)
    args = ap.parse_args(argv)
    res = check(args.html, args.screenshots, args.mathjax)
    notes = res.pop("_notes")
    bad = {k: v for k, v in res.items() if v}
    for k in sorted(res):
        print(f"{'FAIL' if res[k] else 'ok  '} {k}" + ("" if not res[k] else ": " + "; ".join(res[k])))
    for n in notes:
        print(f"note: {n}")
    print(f"{len(res) - len(bad)} of {len(res)} pages passed")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

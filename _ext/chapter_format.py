"""The chapters in the form JupyterLab's jupytext writes them, so that saving a chapter that was only run leaves
its .md byte for byte unchanged (issue 53).

When the lab saves a chapter (Ctrl+S or autosave), jupytext's contents manager writes the notebook back as MyST
markdown: with the kernel the lab ran it with in the header (``name``, ``display_name``, ``language``, in that
order), without the jupytext version (``[tool.jupytext]`` in pyproject.toml filters it out) and with cell
options dumped by PyYAML (a multi-line ``caption: |`` block becomes a folded, quoted string). A chapter already
in that form is written back unchanged. ``normalise`` computes that form, so the chapters are committed in it,
and tests/book/test_chapter_format.py keeps them there.

Write captions as one long line (YAML wraps it); a line break inside a caption would come back as a blank line.

    python _ext/chapter_format.py             # rewrite every chapter of book/ in place (temporary file, rename)
    python _ext/chapter_format.py --check     # list the chapters that are not in that form (exit status 1)
"""

import argparse
import os
import sys
from pathlib import Path

import jupytext
from jupytext.config import find_jupytext_configuration_file, load_jupytext_configuration_file

ROOT = Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"
FMT = "md:myst"
# the kernel `make lab` runs a chapter with (the venv's ipykernel), as the lab records it in the notebook
LAB_KERNELSPEC = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}


def config():
    """The jupytext configuration the lab's contents manager finds for book/ (pyproject.toml's [tool.jupytext])."""
    path = find_jupytext_configuration_file(str(BOOK))
    if path is None:
        raise FileNotFoundError(f"no jupytext configuration above {BOOK} (pyproject.toml's [tool.jupytext])")
    return load_jupytext_configuration_file(path)


def is_chapter(nb) -> bool:
    """A page that names its kernel: the lab runs it with that kernel and writes the kernel into its header on
    save (the reference pages name none: they are text, and the book does not execute them)."""
    return "kernelspec" in nb.metadata


def _one_line(value):
    if isinstance(value, dict):
        return {k: _one_line(v) for k, v in value.items()}
    if isinstance(value, str) and "\n" in value.strip():
        return " ".join(value.split())
    return value


def normalise(text: str) -> str:
    """``text`` (a page of book/) as the lab's jupytext writes it after running it: the lab's kernelspec in a
    chapter's header, multi-line string cell options on one line, everything else as jupytext writes it.
    A page that names no kernel is returned as it is."""
    nb = jupytext.reads(text, fmt=FMT)
    if not is_chapter(nb):  # a reference page: no kernel, left as written
        return text
    nb.metadata["kernelspec"] = dict(LAB_KERNELSPEC)
    for cell in nb.cells:
        cell.metadata = _one_line(dict(cell.metadata))
    return jupytext.writes(nb, fmt=FMT, config=config())


def saved_by_the_lab(text: str) -> str:
    """What the lab writes when a reader opens ``text``, runs it and saves it: the kernel it ran with and the
    language information it records (which the configuration filters out), through jupytext's writer."""
    nb = jupytext.reads(text, fmt=FMT)
    if is_chapter(nb):
        nb.metadata["kernelspec"] = dict(LAB_KERNELSPEC)
        nb.metadata["language_info"] = {"name": "python", "version": sys.version.split()[0]}
    return jupytext.writes(nb, fmt=FMT, config=config())


def figure_captions(path: Path) -> dict:
    """{figure name: caption} of every numbered figure cell of a chapter (the ``mystnb.figure`` options)."""
    out = {}
    for cell in jupytext.read(path, fmt=FMT).cells:
        figure = cell.metadata.get("mystnb", {}).get("figure", {})
        if "name" in figure and "caption" in figure:
            out[figure["name"]] = " ".join(figure["caption"].split())
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="list the pages not in the lab's form; change nothing")
    parser.add_argument("pages", nargs="*", type=Path, help="pages (default: every .md of book/)")
    args = parser.parse_args(argv)
    pages = args.pages or sorted(BOOK.glob("*.md"))
    off = []
    for page in pages:
        text = page.read_text()
        new = normalise(text)
        if new == text:
            continue
        off.append(page)
        if not args.check:
            tmp = page.with_name(f".{page.name}.tmp")
            tmp.write_text(new)
            os.replace(tmp, page)
    for page in off:
        print(f"{'not in the lab form' if args.check else 'rewritten'}: {page}")
    return 1 if (args.check and off) else 0


if __name__ == "__main__":
    sys.exit(main())

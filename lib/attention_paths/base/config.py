"""Run-time configuration: every environment variable the package reads, read here and nowhere else.

* ``REPRO_SCALE``: problem sizes of every experiment, ``quick`` (default; CPU, minutes) or ``paper``;
* ``ATTENTION_PATHS_DATA``: the dataset root (MNIST, FashionMNIST, Omniglot); default
  ``~/.cache/attention-paths/data``;
* ``ATTENTION_PATHS_OFFLINE``: when on (``1``/``true``/``yes``/``on``; off: ``0``/``false``/``no``/``off``/empty;
  anything else is an error), the datasets are never downloaded, only read under the root;
* ``ATTENTION_PATHS_DEVICE``: where the theory's low-rank kernel products run, ``numpy`` (default),
  ``auto`` (a CUDA GPU through torch when there is one) or a torch device;
* ``ATTENTION_PATHS_QUIET``: when on (a boolean, as above), no progress bars;
* ``ATTENTION_PATHS_CLAIMS``: where chapters record their claims (default ``_build/claims`` in the project);
* ``ATTENTION_PATHS_REPO``: the project's checkout whose committed ``data/`` the chapters read (default: the
  checkout the package runs from, else the nearest one at or above the working directory);
* ``REPRO_RESULTS``: a ``reproduce`` output folder the chapters render from instead of computing;
* ``REPRO_FIGURES``: a folder to export every numbered figure to (PDF and SVG);
* ``XLA_FLAGS``: JAX's flags; :func:`expose_cpu_devices` adds the CPU device count.
"""

from __future__ import annotations

import os
from pathlib import Path

from attention_paths.base.version import __version__

__all__ = [
    "SCALES",
    "get_scale",
    "data_root",
    "offline",
    "theory_device",
    "set_theory_device",
    "quiet_requested",
    "claims_folder",
    "results_folder",
    "figures_folder",
    "expose_cpu_devices",
    "repo_root",
    "repo_data_dir",
]

SCALES = ("quick", "paper")


def _get(name: str) -> str:
    return os.environ.get(name, "").strip()


def get_scale(scale: str | None = None) -> str:
    """Return the reproduction scale: ``scale`` if given, else ``$REPRO_SCALE``, else ``quick``.

    Raises
    ------
    ValueError
        If the value is not one of ``quick`` or ``paper``.
    """
    value = scale if scale is not None else (_get("REPRO_SCALE") or "quick")
    value = value.strip().lower()
    if value not in SCALES:
        raise ValueError(f"REPRO_SCALE must be one of {SCALES}, got {value!r}; set e.g. `export REPRO_SCALE=quick`.")
    return value


def data_root() -> Path:
    """Dataset root: ``$ATTENTION_PATHS_DATA`` or ``~/.cache/attention-paths/data``."""
    env = os.environ.get("ATTENTION_PATHS_DATA")
    if env:
        return Path(env).expanduser()
    return Path.home() / ".cache" / "attention-paths" / "data"


_TRUE, _FALSE = ("1", "true", "yes", "on"), ("", "0", "false", "no", "off")


def _flag(name: str) -> bool:
    """A boolean switch: ``1``/``true``/``yes``/``on`` or ``0``/``false``/``no``/``off``/empty/unset (any
    case); anything else raises ``ValueError`` naming the variable."""
    value = _get(name).lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ValueError(
        f"{name}={os.environ.get(name)!r} is not a boolean; use one of {', '.join(_TRUE)} (on) or "
        f"{', '.join(v for v in _FALSE if v)} or empty (off)"
    )


def offline() -> bool:
    """True when ``$ATTENTION_PATHS_OFFLINE`` is on (``1``, ``true``, ``yes``, ``on``): the datasets are never
    downloaded.  A value that is not a boolean raises ``ValueError``."""
    return _flag("ATTENTION_PATHS_OFFLINE")


def theory_device() -> str | None:
    """``$ATTENTION_PATHS_DEVICE`` (``None`` when unset): the default device of the theory's kernel products."""
    return _get("ATTENTION_PATHS_DEVICE") or None


def set_theory_device(device: str) -> None:
    """Set the default device of the theory's kernel products for this process, unless already set."""
    os.environ.setdefault("ATTENTION_PATHS_DEVICE", device)


def quiet_requested() -> bool:
    """True when ``$ATTENTION_PATHS_QUIET`` is on (a boolean as for :func:`offline`)."""
    return _flag("ATTENTION_PATHS_QUIET")


def _is_checkout(folder: Path) -> bool:
    """A checkout of the project: its book configuration, package source and committed ``data/`` together."""
    return (
        (folder / "_config.yml").is_file()
        and (folder / "lib" / "attention_paths").is_dir()
        and (folder / "data" / "README.md").is_file()
    )


def repo_root() -> Path | None:
    """The project's checkout, or ``None`` when none is found.

    In order: ``$ATTENTION_PATHS_REPO`` (a checkout, else ``FileNotFoundError`` naming it); the checkout the
    package runs from (an editable install); the nearest checkout at or above the working directory (a
    non-editable install used from a clone, as on Binder, or a notebook started in a clone's ``book/``).
    """
    env = _get("ATTENTION_PATHS_REPO")
    if env:
        root = Path(env).expanduser().resolve()
        if not _is_checkout(root):
            raise FileNotFoundError(
                f"ATTENTION_PATHS_REPO={env} is not a checkout of attention-paths (no _config.yml, lib/attention_paths "
                "and data/README.md there); point it at a clone of the repository"
            )
        return root
    here = Path(__file__).resolve().parents[3]
    if _is_checkout(here):
        return here
    cwd = Path.cwd().resolve()
    return next((folder for folder in (cwd, *cwd.parents) if _is_checkout(folder)), None)


def repo_data_dir() -> Path:
    """The project's ``data/`` folder (committed inputs and results) in :func:`repo_root`.

    Raises ``FileNotFoundError`` with what to do when no checkout is found (the package installed from an
    archive and run outside a clone).
    """
    root = repo_root()
    if root is None:
        raise FileNotFoundError(
            f"the book's committed results (data/) were not found: the package is installed outside a checkout and "
            f"no checkout is at or above {Path.cwd()}; run from a clone of this version (git clone --depth 1 "
            f"--branch v{__version__} https://github.com/attention-paths/attention-paths) or set "
            "ATTENTION_PATHS_REPO to one"
        )
    return root / "data"


def claims_folder() -> Path:
    """Where chapters record their claims: ``$ATTENTION_PATHS_CLAIMS``, else ``_build/claims`` in the project
    (when the package runs from its repository), else ``~/.cache/attention-paths/claims``."""
    env = _get("ATTENTION_PATHS_CLAIMS")
    if env:
        return Path(env).expanduser()
    repo = repo_root()
    if repo is not None:
        return repo / "_build" / "claims"
    return Path.home() / ".cache" / "attention-paths" / "claims"


def results_folder() -> Path | None:
    """The results folder the book renders from: ``$REPRO_RESULTS`` when set (a ``reproduce`` output), else
    ``None``.  A value that is not a folder raises ``FileNotFoundError``."""
    value = _get("REPRO_RESULTS")
    if not value:
        return None
    path = Path(value).expanduser()
    if not path.is_dir():
        raise FileNotFoundError(
            f"REPRO_RESULTS={value!r} is not a folder; point it at the --out folder of "
            "`python -m attention_paths reproduce`"
        )
    return path.resolve()


def figures_folder() -> Path | None:
    """``$REPRO_FIGURES`` as a path (``None`` when unset or empty): where figures are exported."""
    value = _get("REPRO_FIGURES")
    return Path(value).expanduser() if value else None


def expose_cpu_devices(n: int, jax_started: bool) -> None:
    """Ask JAX (through ``XLA_FLAGS``) for ``n`` CPU devices, so that sampling chains run in parallel.

    Only before JAX starts (``jax_started`` False) and when ``XLA_FLAGS`` does not set the count already.
    """
    flags = os.environ.get("XLA_FLAGS", "")
    if not jax_started and "xla_force_host_platform_device_count" not in flags:
        os.environ["XLA_FLAGS"] = (flags + f" --xla_force_host_platform_device_count={n}").strip()

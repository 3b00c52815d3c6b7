"""One-shot Omniglot and the out-of-distribution digit/fashion sets (spec experiments §B.1-B.4, §E).

Data live under one root, :func:`attention_paths.base.config.data_root` (``$ATTENTION_PATHS_DATA``):

* Omniglot as torchvision's PNG tree ``<root>/omniglot-py/images_background|images_evaluation/<Alphabet>/
  <characterNN>/*.png``.  When the tree is present it is read directly; otherwise
  ``torchvision.datasets.Omniglot(download=True)`` fetches it (online only).
* MNIST and FashionMNIST through ``torchvision.datasets`` (``<root>/MNIST/raw``, ``<root>/FashionMNIST/raw``).

Images are preprocessed once into compact ``uint8`` tensors (inverted, resized to 32x32 with PIL's
antialiased bilinear filter) and cached per split under ``<root>/attention-paths-cache`` together with a
checksum of their input files; normalisation and the 3 channels are applied on the fly, which reproduces
the reference pipeline exactly (spec §E.2, "exact caching").
"""

from __future__ import annotations

import gzip
import hashlib
import io
import re
from dataclasses import dataclass
from pathlib import Path
from urllib.error import URLError

import numpy as np
import torchvision
from PIL import Image, ImageOps

from attention_paths.base import config
from attention_paths.base.config import data_root
from attention_paths.base.io import atomic_write

__all__ = [
    "DatasetMissingError",
    "DatasetDamagedError",
    "omniglot_tree",
    "list_characters",
    "split_of",
    "split_characters",
    "OmniglotSplit",
    "load_split",
    "preprocess_omniglot_png",
    "omniglot_to_float",
    "load_ood",
    "OOD_NORMALISATION",
    "OMNIGLOT_NORMALISATION",
    "SPLIT_SIZES",
]

OMNIGLOT_NORMALISATION = (0.922, 0.084)  # mean, std of the inverted, resized Omniglot pixels in [0, 1]
OOD_NORMALISATION = {"MNIST": (0.1307, 0.3081), "FashionMNIST": (0.286, 0.353)}
SPLIT_SIZES = {"train": 1028, "val": 172, "test": 423}
CACHE_VERSION = "omniglot32-v1"  # bump when the preprocessing changes

# The standard few-shot character split (Vinyals et al., 2016, as shipped with torchmeta), as a rule.
VAL_ALPHABETS = ("Armenian", "Bengali", "Early_Aramaic", "Hebrew", "Mkhedruli_(Georgian)")  # background set
TRAIN_EVAL_ALPHABETS = (
    "Angelic",
    "Atemayar_Qelisayer",
    "Atlantean",
    "Aurek-Besh",
    "Avesta",
    "Ge_ez",
    "Glagolitic",
)  # evaluation-set alphabets that belong to meta-train
GURMUKHI_TRAIN = range(1, 42)  # Gurmukhi characters 01-41 are meta-train, 42-45 meta-test


class DatasetMissingError(FileNotFoundError):
    """A dataset is not under the data root and could not be downloaded."""


def _missing(what: str, where: Path, hint: str) -> DatasetMissingError:
    return DatasetMissingError(
        f"{what} was not found under {where} and could not be downloaded (offline?). The dataset root is "
        f"$ATTENTION_PATHS_DATA (now {data_root()}); {hint}"
    )


_MISSING = re.compile(r"dataset not found|error downloading", re.IGNORECASE)  # torchvision's "missing" errors


class DatasetDamagedError(ValueError):
    """A dataset file is present but damaged (wrong checksum, truncated, unreadable); the message names it."""


def _idx_intact(path: Path) -> bool:
    """Whether an unpacked IDX file's size matches the dimensions in its header."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(4)
            if len(head) < 4 or head[:2] != b"\x00\x00":
                return False
            dims = fh.read(4 * head[3])
        if len(dims) < 4 * head[3]:
            return False
        n = int(np.prod([int.from_bytes(dims[4 * i : 4 * i + 4], "big") for i in range(head[3])]))
        return path.stat().st_size == 4 + 4 * head[3] + n
    except OSError:
        return False


# SHA-256 of the official unpacked IDX files (the content of torchvision's MD5-checked .gz files), so that an
# unpacked file with no .gz beside it is checked too
UNPACKED_SHA256 = {
    "MNIST": {
        "t10k-images-idx3-ubyte": "0fa7898d509279e482958e8ce81c8e77db3f2f8254e26661ceb7762c4d494ce7",
        "t10k-labels-idx1-ubyte": "ff7bcfd416de33731a308c3f266cc351222c34898ecbeaf847f06e48f7ec33f2",
        "train-images-idx3-ubyte": "ba891046e6505d7aadcbbe25680a0738ad16aec93bde7f9b65e87a2fc25776db",
        "train-labels-idx1-ubyte": "65a50cbbf4e906d70832878ad85ccda5333a97f0f4c3dd2ef09a8a9eef7101c5",
    },
    "FashionMNIST": {
        "t10k-images-idx3-ubyte": "5b4141f0afbad91edebe8549f8fcffe087ea10ca49f1dbef5c9a5cd8815ce37b",
        "t10k-labels-idx1-ubyte": "0402a96d92fd2663957122ceb108a494c5af83dab82d92729df917d7dec38c34",
        "train-images-idx3-ubyte": "c59f468a2f672dc815687fe0f83887768d799fd8a3f3276145d20f83aa44d888",
        "train-labels-idx1-ubyte": "bad3541b69d912435c50bb6ba87bec294ff4f6a2e1246121d8633921760443d9",
    },
}


def _verify_and_unpack(cls, raw: Path) -> None:
    """Check the raw MNIST-format files of torchvision dataset ``cls`` under ``raw`` and unpack them offline.

    A ``.gz`` file must have torchvision's published MD5, and its IDX file is (re)written from it (atomically)
    whenever it is missing or differs from the verified ``.gz``'s content, so that what torchvision reads is
    what was verified; an IDX file without its ``.gz`` must match its own header and the official unpacked
    file's SHA-256 (:data:`UNPACKED_SHA256`).  Damage raises :class:`DatasetDamagedError` naming the file;
    missing files are left to torchvision (download or error).
    """
    for filename, md5 in cls.resources:
        gz, idx = raw / filename, raw / filename[: -len(".gz")]
        if gz.exists():
            digest = hashlib.md5(gz.read_bytes(), usedforsecurity=False).hexdigest()
            if digest != md5:
                raise DatasetDamagedError(
                    f"{gz} is damaged: its MD5 is {digest}, torchvision's {cls.__name__} file has {md5}; "
                    "replace it with the official file (or delete it to download it again)"
                )
            try:
                data = gzip.decompress(gz.read_bytes())
            except (OSError, EOFError, gzip.BadGzipFile) as err:
                raise DatasetDamagedError(f"{gz} cannot be unpacked ({err})") from None
            if not (idx.exists() and idx.stat().st_size == len(data) and idx.read_bytes() == data):
                atomic_write(idx, lambda fh: fh.write(data))
        elif idx.exists() and not _idx_intact(idx):
            raise DatasetDamagedError(
                f"{idx} is damaged: its size does not match its IDX header (truncated?); "
                f"replace it, or put the official {filename} beside it"
            )
        elif idx.exists():  # no .gz to check it against: the official file's content, recorded
            digest = hashlib.sha256(idx.read_bytes()).hexdigest()
            if digest != UNPACKED_SHA256[cls.__name__][idx.name]:
                raise DatasetDamagedError(
                    f"{idx} is damaged: its SHA-256 {digest[:16]}... is not the official unpacked "
                    f"{cls.__name__} file's; replace it, or put the official {filename} beside it"
                )


# ------------------------------------------------------------------------------------------ Omniglot files
def omniglot_tree(root: str | Path | None = None, download: bool = True) -> Path:
    """Folder ``<root>/omniglot-py`` holding ``images_background`` and ``images_evaluation``.

    Reads an existing tree directly; otherwise downloads through torchvision when ``download`` (and
    ``$ATTENTION_PATHS_OFFLINE`` is unset).  Raises :class:`DatasetMissingError` naming
    ``ATTENTION_PATHS_DATA`` when neither works.
    """
    root = Path(root) if root is not None else data_root()
    tree = root / "omniglot-py"
    sets = ("images_background", "images_evaluation")
    if all((tree / s).is_dir() and any((tree / s).iterdir()) for s in sets):
        return tree
    if download and not config.offline():
        try:
            for background in (True, False):
                torchvision.datasets.Omniglot(str(root), background=background, download=True)
            return tree
        except Exception:  # no network, or a failed download
            pass
    raise _missing(
        "The Omniglot PNG tree (omniglot-py/images_background, omniglot-py/images_evaluation)",
        root,
        "put the tree there, e.g. with `python shared/data/omniglot/materialize_omniglot.py "
        "$ATTENTION_PATHS_DATA`, or run once with internet access.",
    )


def list_characters(tree: Path) -> list[tuple[str, str, str]]:
    """All characters ``(set, alphabet, character)`` of the tree, sorted by set, alphabet, character."""
    out = []
    for s in ("background", "evaluation"):
        base = Path(tree) / f"images_{s}"
        for alphabet in sorted(p.name for p in base.iterdir() if p.is_dir()):
            for char in sorted(p.name for p in (base / alphabet).iterdir() if p.is_dir()):
                out.append((s, alphabet, char))
    return out


def split_of(set_name: str, alphabet: str, character: str) -> str:
    """Split ``'train'``, ``'val'`` or ``'test'`` of one character under the standard rule (spec §B.1)."""
    if set_name == "background":
        return "val" if alphabet in VAL_ALPHABETS else "train"
    if set_name != "evaluation":
        raise ValueError(f"set must be 'background' or 'evaluation', got {set_name!r}")
    if alphabet in TRAIN_EVAL_ALPHABETS:
        return "train"
    if alphabet == "Gurmukhi":
        number = int(character.removeprefix("character"))
        return "train" if number in GURMUKHI_TRAIN else "test"
    return "test"


def split_characters(characters) -> dict[str, list[tuple[str, str, str]]]:
    """Group ``(set, alphabet, character)`` triples by split, keeping their order."""
    out = {"train": [], "val": [], "test": []}
    for c in characters:
        out[split_of(*c)].append(c)
    return out


def preprocess_omniglot_png(data: bytes) -> np.ndarray:
    """One PNG (bytes) -> inverted, 32x32 ``uint8`` image (ink 255), PIL antialiased bilinear resize (spec §B.3)."""
    with Image.open(io.BytesIO(data)) as im:
        grey = im.convert("L")  # background 255, ink 0
    return np.asarray(ImageOps.invert(grey).resize((32, 32), Image.BILINEAR), dtype=np.uint8)


def omniglot_to_float(images: np.ndarray) -> np.ndarray:
    """``uint8`` images [..., 32, 32] -> normalised ``float32`` [..., 3, 32, 32] (scale, normalise, 3 channels)."""
    mean, std = OMNIGLOT_NORMALISATION
    x = (np.asarray(images, dtype=np.float32) / 255.0 - mean) / std
    return np.repeat(x[..., None, :, :], 3, axis=-3)


@dataclass
class OmniglotSplit:
    """Preprocessed images of one split: ``images`` [characters, 20, 32, 32] ``uint8`` and their names."""

    name: str
    images: np.ndarray
    characters: list[tuple[str, str, str]]
    checksum: str

    @property
    def n_characters(self) -> int:
        return self.images.shape[0]


def _split_files(tree: Path, chars) -> list[list[Path]]:
    files = []
    for s, alphabet, char in chars:
        pngs = sorted((tree / f"images_{s}" / alphabet / char).glob("*.png"))
        if len(pngs) != 20:
            raise ValueError(f"expected 20 drawings of {alphabet}/{char}, found {len(pngs)} in {tree}")
        files.append(pngs)
    return files


def load_split(
    split: str, root: str | Path | None = None, download: bool = True, cache_dir: str | Path | None = None
) -> OmniglotSplit:
    """Preprocessed images of split ``'train'``, ``'val'`` or ``'test'``, from the cache or built once.

    The cache file ``<cache_dir>/omniglot32_<split>.npz`` records a SHA-256 checksum of the split's PNG
    files and the preprocessing version; a stale or damaged cache is rebuilt (written atomically).
    """
    if split not in SPLIT_SIZES:
        raise ValueError(f"split must be one of {sorted(SPLIT_SIZES)}, got {split!r}")
    root = Path(root) if root is not None else data_root()
    tree = omniglot_tree(root, download)
    chars = split_characters(list_characters(tree))[split]
    files = _split_files(tree, chars)
    h = hashlib.sha256(CACHE_VERSION.encode())
    contents = []
    for pngs in files:
        row = []
        for f in pngs:
            data = f.read_bytes()
            h.update(f.relative_to(tree).as_posix().encode())
            h.update(data)
            row.append((f, data))
        contents.append(row)
    checksum = h.hexdigest()
    cache = Path(cache_dir) if cache_dir is not None else root / "attention-paths-cache"
    path = cache / f"omniglot32_{split}.npz"
    if path.exists():
        try:
            with np.load(path, allow_pickle=False) as f:
                images = f["images"]
                # the source files' checksum, and the content against its own digest (a cache whose images were
                # edited with the checksum field kept is rebuilt)
                if str(f["checksum"]) == checksum and str(f["images_sha256"]) == _array_sha256(images):
                    return OmniglotSplit(split, images, chars, checksum)
        except Exception:  # damaged or older cache: rebuild below
            pass

    def prep(f, data):
        try:
            return preprocess_omniglot_png(data)
        except Exception as err:  # Pillow's errors do not name the file
            raise DatasetDamagedError(
                f"Omniglot image {f} is damaged ({err}); replace it (e.g. rerun "
                "materialize_omniglot.py or the torchvision download)"
            ) from None

    images = np.stack([np.stack([prep(f, d) for f, d in row]) for row in contents])
    names = np.array(["/".join(c) for c in chars])
    atomic_write(
        path,
        lambda fh: np.savez(
            fh,
            images=images,
            checksum=np.array(checksum),
            images_sha256=np.array(_array_sha256(images)),
            characters=names,
        ),
    )
    return OmniglotSplit(split, images, chars, checksum)


def _array_sha256(a: np.ndarray) -> str:
    """SHA-256 of an array's shape, dtype and bytes."""
    h = hashlib.sha256(f"{a.shape}|{a.dtype.str}|".encode())
    h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()


# ------------------------------------------------------------------------------------------ OOD sets
def load_ood(name: str, root: str | Path | None = None, download: bool = True) -> dict:
    """Classes 0 and 1 of MNIST or FashionMNIST, preprocessed for the out-of-distribution episodes (spec §B.4).

    Returns ``train0``, ``train1`` (training images of class 0 / 1, file order) and ``test`` (all class-0 test
    images, then all class-1 test images) as normalised ``float32`` [n, 3, 32, 32], and ``test_labels``
    (0/1).  Images are resized 28 -> 32 with PIL's bilinear filter, scaled, normalised, put on 3 channels.
    """
    if name not in OOD_NORMALISATION:
        raise ValueError(f"OOD set must be one of {sorted(OOD_NORMALISATION)}, got {name!r}")
    root = Path(root) if root is not None else data_root()
    cls = getattr(torchvision.datasets, name)
    _verify_and_unpack(cls, root / name / "raw")
    fetch = download and not config.offline()  # a malformed $ATTENTION_PATHS_OFFLINE raises its own error
    try:
        train = cls(str(root), train=True, download=fetch)
        test = cls(str(root), train=False, download=fetch)
    except (RuntimeError, URLError) as err:
        # torchvision says "Dataset not found" when the files are absent and no download was allowed, and
        # "Error downloading" when every mirror failed; anything else is a real problem, let through
        if isinstance(err, RuntimeError) and not _MISSING.search(str(err)):
            raise
        raise _missing(
            name,
            root / name,
            f"put the four official {name} *-ubyte.gz files in "
            f"$ATTENTION_PATHS_DATA/{name}/raw/ (torchvision unpacks them offline when their md5 "
            "matches), or run once with internet access.",
        ) from None
    mean, std = OOD_NORMALISATION[name]

    def prep(images):
        out = np.stack([np.asarray(Image.fromarray(im).resize((32, 32), Image.BILINEAR)) for im in images])
        x = (out.astype(np.float32) / 255.0 - mean) / std
        return np.repeat(x[:, None], 3, axis=1)

    tr_x, tr_y = train.data.numpy(), train.targets.numpy()
    te_x, te_y = test.data.numpy(), test.targets.numpy()
    test_idx = np.concatenate([np.flatnonzero(te_y == 0), np.flatnonzero(te_y == 1)])
    n = len(test_idx)  # episode i uses the i-th training image of each class as its supports
    return {
        "train0": prep(tr_x[tr_y == 0][:n]),
        "train1": prep(tr_x[tr_y == 1][:n]),
        "test": prep(te_x[test_idx]),
        "test_labels": te_y[test_idx].astype(np.int64),
    }

"""The package version, in this one place (also ``attention_paths.__version__``).

``pyproject.toml`` reads it from here (``[tool.setuptools.dynamic]``); ``CITATION.cff``, ``.zenodo.json`` and the
newest release heading of ``CHANGELOG.md`` repeat it, and ``tests/base/test_release.py`` keeps them equal.
"""

__version__ = "0.2.0"

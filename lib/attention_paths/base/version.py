"""The package version (also ``attention_paths.__version__``; keep equal to ``pyproject.toml``)."""

__version__ = "0.1.0"

"""Names kept for one release after a rename: a module's ``__getattr__`` that resolves an old name to the new
object with a ``DeprecationWarning`` (PEP 562), written once for every renamed name of the package."""

from __future__ import annotations

import warnings
from typing import Callable

__all__ = ["renamed"]

MESSAGE = "{module}.{old} is now {module}.{new}; the old name goes in the next release"


def renamed(module: str, names: dict[str, str], resolve: Callable[[str], object], message: str = MESSAGE):
    """A module ``__getattr__`` for the old ``names`` (old -> new) of ``module``: ``resolve(new)`` with a
    ``DeprecationWarning`` (``message`` formatted with ``module``, ``old``, ``new``); other names raise the
    usual ``AttributeError``.

    >>> __getattr__ = renamed("pkg", {"old": "new"}, lambda new: f"<{new}>")
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as w:
    ...     warnings.simplefilter("always")
    ...     __getattr__("old"), str(w[0].message)
    ('<new>', 'pkg.old is now pkg.new; the old name goes in the next release')
    """

    def __getattr__(name):
        if name in names:
            new = names[name]
            warnings.warn(message.format(module=module, old=name, new=new), DeprecationWarning, stacklevel=2)
            return resolve(new)
        raise AttributeError(f"module {module!r} has no attribute {name!r}")

    return __getattr__

"""The samplers' names, known without loading a sampler: name -> ``"module:attribute"`` (issue 35 §6).

:data:`SAMPLER_NAMES` is a live, ordered view of every sampler that can be used by name: the built-in two
(:data:`BUILTIN_SAMPLER_TARGETS`), those that installed packages declare as entry points of the group
:data:`ENTRY_POINT_GROUP` (read once, on first use), and those registered in this session
(:func:`attention_paths.sampling.register_sampler` writes here too).  Nothing is imported until a sampler is
used (:func:`attention_paths.sampling.get_sampler` loads a declared one), and this module imports only the
standard library, so the command line's ``--sampler`` choices, ``oneshot.with_budget`` and the toy posterior
check read the names before JAX, numpy or torch load.

A package adds a sampler to every one of them, a new process's command line included, with one entry point
in its ``pyproject.toml``::

    [project.entry-points."attention_paths.samplers"]
    gp-limit = "my_package.samplers:GPLimitSampler"   # a Sampler subclass (instantiated) or instance

>>> "rao-blackwell" in SAMPLER_NAMES and "gibbs" not in SAMPLER_NAMES
True
>>> tuple(SAMPLER_NAMES)[:2]
('rao-blackwell', 'full')
>>> SAMPLER_NAMES.target("full")
'attention_paths.sampling.full:FullWeightSampler'
"""

from __future__ import annotations

from importlib import metadata

__all__ = [
    "ENTRY_POINT_GROUP",
    "BUILTIN_SAMPLER_TARGETS",
    "SamplerNames",
    "SAMPLER_NAMES",
    "check_sampler_names",
    "parse_sampler_names",
]

ENTRY_POINT_GROUP = "attention_paths.samplers"
"""The entry-point group under which installed packages declare samplers (name = ``"module:attribute"``)."""

BUILTIN_SAMPLER_TARGETS = {
    "rao-blackwell": "attention_paths.sampling.rao_blackwell:RaoBlackwellSampler",
    "full": "attention_paths.sampling.full:FullWeightSampler",
}
"""The built-in samplers, in registration order: name -> the :class:`~.interface.Sampler` subclass that
implements it (``attention_paths.sampling.SAMPLER_KINDS`` are its keys)."""


class SamplerNames:
    """A live, ordered view of the declared samplers' names (``in``, iteration, ``len``), each with its
    ``"module:attribute"`` target: the built-ins first, then the installed packages' entry points (read on
    first use), then those declared in this session.  Its identity is its equality, so it can stand as the
    ``choices`` of a frozen :class:`attention_paths.runs.registry.Option`."""

    def __init__(self, builtins: dict[str, str]):
        self._builtins = dict(builtins)
        self._targets: dict[str, str] | None = None  # read on first use

    def _loaded(self) -> dict[str, str]:
        if self._targets is None:
            targets = dict(self._builtins)
            for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
                targets.setdefault(ep.name, ep.value)  # a built-in name is never taken over by a package
            self._targets = targets
        return self._targets

    def __contains__(self, name) -> bool:
        return isinstance(name, str) and name in self._loaded()

    def __iter__(self):
        return iter(tuple(self._loaded()))

    def __len__(self) -> int:
        return len(self._loaded())

    def __repr__(self) -> str:
        return f"SamplerNames({tuple(self)!r})"

    @property
    def builtins(self) -> tuple[str, ...]:
        """The built-in samplers' names (never replaced by a package's entry point)."""
        return tuple(self._builtins)

    def target(self, name: str) -> str | None:
        """The ``"module:attribute"`` that implements sampler ``name``, or ``None`` if no sampler has that name."""
        return self._loaded().get(name)

    def declare(self, name: str, target: str) -> None:
        """Declare sampler ``name`` as implemented by ``target`` (``"module:attribute"``), replacing an earlier
        declaration of the name (:func:`~attention_paths.sampling.register_sampler` checks for clashes)."""
        if not isinstance(name, str) or not name:
            raise ValueError(f"a sampler's name must be a non-empty str, got {name!r}")
        module, sep, attribute = str(target).partition(":")
        if not (module and sep and attribute):
            raise ValueError(f"sampler {name!r}: the target must be 'module:attribute', got {target!r}")
        self._loaded()[name] = target

    def forget(self, name: str) -> None:
        """Remove sampler ``name`` (no error if it was not declared)."""
        self._loaded().pop(name, None)


SAMPLER_NAMES = SamplerNames(BUILTIN_SAMPLER_TARGETS)
"""Every sampler usable by name (:class:`SamplerNames`): ``name in SAMPLER_NAMES``, ``tuple(SAMPLER_NAMES)``."""


def parse_sampler_names(value) -> tuple[str, ...]:
    """Sampler names from a sequence or a comma-separated string (``"rao-blackwell,gp-limit"``), each a declared
    sampler's (:data:`SAMPLER_NAMES`), in the order given without repeats; a ``ValueError`` names an unknown
    one and lists the known ones."""
    names = [v.strip() for v in value.split(",")] if isinstance(value, str) else list(value)
    names = [n for n in dict.fromkeys(names) if n]
    if not names:
        raise ValueError(f"name at least one sampler, one of {tuple(SAMPLER_NAMES)}")
    unknown = [n for n in names if n not in SAMPLER_NAMES]
    if unknown:
        raise ValueError(f"unknown sampler {', '.join(map(repr, unknown))}; the samplers are {tuple(SAMPLER_NAMES)}")
    return tuple(names)


def check_sampler_names(value: str) -> None:
    """Raise ``ValueError`` when ``value`` (comma-separated) names no sampler or an unknown one (the command
    line's check of ``--samplers``)."""
    parse_sampler_names(value)

"""The sampler contract (like numpyro's ``MCMCKernel``) and the registry of samplers by name.

A sampler is a subclass of :class:`Sampler` that declares its :attr:`~Sampler.name`, its config dataclass
(:attr:`~Sampler.config_type`, a :class:`~attention_paths.sampling.samples.SamplerConfig` holding the shared
draw counts and seed plus the sampler's own inputs and settings) and whether a width sweep can afford it at
every width (:attr:`~Sampler.every_width`), and implements :meth:`~Sampler.sample`.  Adding a sampler is one
module with one such class and one :func:`register_sampler` call (or one entry point, :mod:`.names`);
``attention_paths.sampling.sample(name, ...)`` then dispatches to it.  The names of the samplers live in
:data:`.names.SAMPLER_NAMES`, which :func:`register_sampler` writes to, so the command line, ``oneshot.with_budget``
and the toy check know every sampler by name before one is loaded.  This module imports no JAX.
"""

from __future__ import annotations

import abc
import dataclasses
import importlib
from dataclasses import fields
from typing import TYPE_CHECKING, ClassVar

from attention_paths.sampling.names import SAMPLER_NAMES
from attention_paths.sampling.samples import SAMPLERS, PosteriorSamples, SamplerConfig

if TYPE_CHECKING:
    from attention_paths.theory.architecture import Architecture

__all__ = ["Sampler", "SAMPLERS", "register_sampler", "unregister_sampler", "get_sampler"]


class Sampler(abc.ABC):
    """A posterior sampler of the Bayesian network: the declared contract every registered sampler meets.

    Its class attributes:

    name
        the registry name, recorded as ``PosteriorSamples.kind``
    config_type
        its config dataclass, :class:`SamplerConfig` or a subclass adding the sampler's own inputs
        and settings (those extra fields are not recorded in ``settings["sampler"]``)
    every_width
        ``True`` when a width sweep can run it at every width (its cost per draw does not grow with
        the input dimension); ``False`` when a sweep runs it only at the widths its config lists for the
        costlier samplers (the toy check's ``full_widths``)

    :meth:`sample` returns a :class:`~attention_paths.sampling.PosteriorSamples` of kind :attr:`name` whose
    ``settings`` hold ``"sampler"`` (the :class:`SamplerConfig` fields, :func:`.nuts.recorded_settings`), ``"M"``
    (test points) and ``"arch"``, so that :func:`~attention_paths.sampling.load_samples` can check a file.
    """

    name: ClassVar[str]
    config_type: ClassVar[type[SamplerConfig]] = SamplerConfig
    every_width: ClassVar[bool] = True

    @abc.abstractmethod
    def sample(
        self,
        features_train,
        y,
        tau: float,
        arch: Architecture,
        features_test,
        config: SamplerConfig,
        progress: bool | None = None,
    ) -> PosteriorSamples:
        """Posterior samples on path features ``features_train`` [P, N0, Pi] with targets ``y`` [P] at
        temperature ``tau`` for the network ``arch``, with outputs at ``features_test`` [M, N0, Pi];
        ``config`` is an instance of :attr:`config_type`."""

    def configure(self, settings: SamplerConfig | None = None, **available) -> SamplerConfig:
        """This sampler's config: the shared settings of ``settings`` (default: :class:`SamplerConfig`'s) lifted
        into :attr:`config_type`, with those of the ``available`` inputs that the config type declares (the
        others are for other samplers and are left out).  A config of another sampler's type is refused."""
        if settings is None:
            settings = SamplerConfig()
        if not isinstance(settings, SamplerConfig):
            raise TypeError(f"sampler {self.name!r} takes a SamplerConfig, got {type(settings).__name__}")
        own = {f.name for f in fields(self.config_type)}
        take = {k: v for k, v in available.items() if k in own}
        if type(settings) is self.config_type:
            return dataclasses.replace(settings, **take) if take else settings
        if type(settings) is not SamplerConfig:
            raise TypeError(
                f"sampler {self.name!r} takes a {self.config_type.__name__} (or a plain SamplerConfig), "
                f"got a {type(settings).__name__}"
            )
        return self.config_type(**_field_values(settings), **take)


def _field_values(config) -> dict:
    return {f.name: getattr(config, f.name) for f in fields(config)}


# SAMPLERS (defined in .samples, whose file reader checks kinds against it): the registered samplers by name,
# the built-in ones once attention_paths.sampling.dispatch is loaded (which attention_paths.sampling.SAMPLERS does)


def register_sampler(sampler: Sampler, *, replace: bool = False) -> Sampler:
    """Register ``sampler`` (an instance of a :class:`Sampler` subclass) under its name, and declare the name
    (:data:`.names.SAMPLER_NAMES`, as ``"<module>:<class>"``); a name already registered is refused unless
    ``replace``.  Returns the sampler."""
    if isinstance(sampler, type):
        raise TypeError(f"register_sampler takes a Sampler instance, got the class {sampler.__name__}: call it")
    if not isinstance(sampler, Sampler):
        raise TypeError(f"register_sampler takes a Sampler instance, got {type(sampler).__name__}")
    name = getattr(sampler, "name", None)
    if not isinstance(name, str) or not name:
        raise ValueError(f"sampler {type(sampler).__name__} declares no name (a non-empty str class attribute)")
    if not (isinstance(sampler.config_type, type) and issubclass(sampler.config_type, SamplerConfig)):
        raise TypeError(f"sampler {name!r}: config_type must be SamplerConfig or a subclass of it")
    if name in SAMPLERS and not replace:
        raise ValueError(
            f"a sampler named {name!r} is already registered ({type(SAMPLERS[name]).__name__}); "
            "pass replace=True to replace it"
        )
    SAMPLERS[name] = sampler
    if SAMPLER_NAMES.target(name) is None or replace:
        SAMPLER_NAMES.declare(name, f"{type(sampler).__module__}:{type(sampler).__qualname__}")
    return sampler


def unregister_sampler(name: str) -> None:
    """Remove sampler ``name`` from the registry and from :data:`.names.SAMPLER_NAMES` (no error if unknown);
    a built-in sampler is refused."""
    if name in SAMPLER_NAMES.builtins:
        raise ValueError(f"{name!r} is a built-in sampler: it cannot be unregistered (replace it instead)")
    SAMPLERS.pop(name, None)
    SAMPLER_NAMES.forget(name)


def get_sampler(name: str) -> Sampler:
    """The sampler called ``name``: a registered one, or one declared by name (:data:`.names.SAMPLER_NAMES`: an
    installed package's entry point), loaded and registered now; an unknown name is a ValueError listing the
    known ones."""
    if isinstance(name, str) and name in SAMPLERS:
        return SAMPLERS[name]
    target = SAMPLER_NAMES.target(name) if isinstance(name, str) else None
    if target is None:
        known = tuple(dict.fromkeys([*SAMPLERS, *SAMPLER_NAMES]))
        raise ValueError(f"sampler kind must be one of {known}, got {name!r}")
    return register_sampler(_load(name, target))


def _load(name: str, target: str) -> Sampler:
    """The sampler that ``target`` (``"module:attribute"``: a :class:`Sampler` subclass or instance) names."""
    module, _, attribute = target.partition(":")
    try:
        obj = importlib.import_module(module)
        for part in attribute.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as err:
        raise ValueError(f"sampler {name!r} is declared as {target!r}, which cannot be loaded ({err})") from None
    sampler = obj() if isinstance(obj, type) and issubclass(obj, Sampler) else obj
    if not isinstance(sampler, Sampler) or getattr(sampler, "name", None) != name:
        raise ValueError(f"sampler {name!r} is declared as {target!r}, which is not a Sampler named {name!r}")
    return sampler

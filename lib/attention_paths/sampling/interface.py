"""The sampler contract (like numpyro's ``MCMCKernel``) and the registry of samplers by name.

A sampler is a subclass of :class:`Sampler` that declares its :attr:`~Sampler.name`, its config dataclass
(:attr:`~Sampler.config_type`, a :class:`~attention_paths.sampling.samples.SamplerConfig` holding the shared
draw counts and seed plus the sampler's own inputs and settings) and whether a width sweep can afford it at
every width (:attr:`~Sampler.every_width`), and implements :meth:`~Sampler.sample`.  Adding a sampler is one
module with one such class and one :func:`register_sampler` call; ``attention_paths.sampling.sample(name, ...)``
then dispatches to it.  This module imports no JAX.
"""

from __future__ import annotations

import abc
import dataclasses
from dataclasses import fields
from typing import TYPE_CHECKING, ClassVar

from attention_paths.sampling.samples import SAMPLERS, PosteriorSamples, SamplerConfig

if TYPE_CHECKING:
    from attention_paths.theory.architecture import Architecture

__all__ = ["Sampler", "SAMPLERS", "register_sampler", "get_sampler"]


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
    """Register ``sampler`` (an instance of a :class:`Sampler` subclass) under its name; a name already taken
    is refused unless ``replace``.  Returns the sampler."""
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
    return sampler


def get_sampler(name: str) -> Sampler:
    """The registered sampler called ``name``; an unknown name is a ValueError listing the registered ones."""
    try:
        return SAMPLERS[name]
    except (KeyError, TypeError):
        raise ValueError(f"sampler kind must be one of {tuple(SAMPLERS)}, got {name!r}") from None

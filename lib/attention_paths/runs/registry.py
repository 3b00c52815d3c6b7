"""The experiments and commands of ``python -m attention_paths``, each one declared record (issue 35).

An :class:`Experiment` says everything the package needs to know about an experiment: its name, the
help the command line prints, its config per scale, its run function, result type, summary (writer) and
reader, claims and tables, the options it takes (:class:`Option`), the summary keys the command line prints
(its headline), and how the ``reproduce`` stages run it.  :data:`EXPERIMENTS` holds them by name; the
command line (:mod:`attention_paths.__main__`), :func:`attention_paths.runs.experiments.run_experiment`,
:func:`~attention_paths.runs.experiments.load_run` and the ``reproduce`` graph
(:func:`attention_paths.runs.stages.reproduction_stages`) are derived from it, so adding an experiment is one
record here.  :data:`COMMANDS` holds the three commands that are not experiments (``omniglot-train``,
``reproduce``, ``ensemble``) in the same form.

This module imports nothing but the standard library and the samplers' names
(:data:`attention_paths.sampling.names.SAMPLER_NAMES`, the ``--sampler`` choices): a record names its functions
by dotted path (``"attention_paths.tasks.markov:run_markov"``), imported on first use (:meth:`Experiment.resolve`),
so that ``--help`` and argument errors answer before torch, JAX or the tasks load.

>>> sorted(EXPERIMENTS)
['analyse', 'hmc', 'omniglot-sampling', 'omniglot-theory', 'posterior', 'prune', 'pruning', 'theory']
>>> [o.flag for o in EXPERIMENTS["pruning"].options]
['--device', '--network', '--train-missing', '--theory-from']
>>> EXPERIMENTS["hmc"].takes("--retrain")
False
"""

from __future__ import annotations

import argparse
import importlib
from dataclasses import dataclass
from typing import Any, Callable

from attention_paths.sampling.names import SAMPLER_NAMES

__all__ = ["Option", "Experiment", "Command", "EXPERIMENTS", "COMMANDS", "COMMON_OPTIONS", "resolve"]


@dataclass(frozen=True)
class Option:
    """One command-line option: ``flag`` (``"--network"``) and its :mod:`argparse` settings; ``keyword`` is
    the run function's keyword argument it becomes (``None``: the command line itself uses it); ``check``
    (``"module:function"``, imported when the option is given) raises ``ValueError`` naming what is wrong with
    a value, which argparse then reports."""

    flag: str
    help: str
    type: Callable | None = None
    default: Any = None
    choices: Any = None  # a tuple, or a live container read when the parser is built and when it checks a value
    action: str | None = None
    metavar: str | None = None
    dest: str | None = None
    keyword: str | None = None
    check: str | None = None

    @property
    def name(self) -> str:
        """The attribute of the parsed arguments (``--no-sample`` -> ``no_sample``, or ``dest``)."""
        return self.dest or self.flag.lstrip("-").replace("-", "_")

    def add_to(self, parser) -> None:
        """Add this option to an :class:`argparse.ArgumentParser` (or argument group)."""
        settings = {"help": self.help, "default": self.default, "dest": self.name}
        if self.action:
            settings["action"] = self.action
        else:
            settings |= {"type": self.type or self._checked, "choices": self.choices, "metavar": self.metavar}
        parser.add_argument(self.flag, **{k: v for k, v in settings.items() if v is not None})

    def _checked(self, value: str) -> str:
        if self.check is not None:
            try:
                resolve(self.check)(value)
            except ValueError as err:
                raise argparse.ArgumentTypeError(str(err)) from None
        return value


def resolve(path: str):
    """The object ``"module:name"`` names, its module imported now."""
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)


@dataclass(frozen=True)
class Command:
    """A command of ``python -m attention_paths`` that is not an experiment (it writes no single result):
    its name, help and options (besides :data:`COMMON_OPTIONS`)."""

    name: str
    help: str
    options: tuple[Option, ...] = ()

    def takes(self, flag: str) -> bool:
        """Whether the command takes option ``flag`` (the common options included)."""
        return any(o.flag == flag for o in COMMON_OPTIONS + self.options)


@dataclass(frozen=True)
class Experiment(Command):
    """An experiment: ``python -m attention_paths <name>`` runs it and writes one results folder.  Its
    functions and types are named as ``"module:name"`` paths, imported by :meth:`resolve`.

    Attributes
    ----------
    run : str
        ``run(scale, progress=..., **options) -> result``; the options are the :class:`Option` keywords
    result : str
        the result type ``run`` returns
    summary : str
        ``summary(result) -> (summary dict, arrays)``, the results folder's ``summary.json`` / ``arrays.npz``
    reader : str or None
        ``read(folder, summary, arrays) -> result``, checked (:func:`~attention_paths.runs.experiments.load_run`);
        ``None``: the chapters never read the experiment back
    configs : str or None
        ``{scale: config}``, the experiment's settings per scale
    claims, tables : str or None, tuple of str
        the function that checks the paper's claims on a result, and those that print its tables
    headline : tuple of str
        the summary keys the command line prints (in the summary's order)
    stored : str or None
        ``stored(result) -> what the reproduce stage keeps in result.pkl`` (default: the result)
    samples : str or None
        ``samples(result) -> {name: PosteriorSamples}`` written by ``--save-samples`` as ``samples_<name>.npz``
    committed : str or None
        a committed run of it, relative to ``data/`` (what the experiment contract test reads and checks)
    tiny : tuple of (field, value)
        changes to the quick scale's config that make a run of a few seconds (the contract test runs it where
        there is no committed run); an experiment with neither is refused by that test, so registering an
        experiment is all it takes to have it checked
    gpu : bool
        its ``reproduce`` stage asks for a GPU worker
    network_chain : bool
        ``reproduce`` computes it in the per-network chain (train, export, grid, ...) rather than as one stage
    """

    run: str = ""
    result: str = ""
    summary: str = ""
    reader: str | None = None
    configs: str | None = None
    claims: str | None = None
    tables: tuple[str, ...] = ()
    headline: tuple[str, ...] = ()
    stored: str | None = None
    samples: str | None = None
    committed: str | None = None
    tiny: tuple = ()
    gpu: bool = False
    network_chain: bool = False

    def resolve(self, attribute: str):
        """The object that field ``attribute`` names (``"module:name"``), imported now; ``None`` if unset."""
        path = getattr(self, attribute)
        return None if path is None else resolve(path)

    def keywords(self, values: dict) -> dict:
        """The run function's keyword arguments from parsed option values ``{option name: value}``."""
        return {o.keyword: values[o.name] for o in self.options if o.keyword and o.name in values}


# ------------------------------------------------------------------------------------------ options
SCALE = Option("--scale", "problem sizes (default: $REPRO_SCALE or quick)", choices=("quick", "paper"))
OUT = Option("--out", "output folder (default: out/<experiment>-<scale>)")
QUIET = Option("--quiet", "no progress bars", action="store_true")
DEBUG = Option("--debug", "show the traceback of every error", action="store_true")
COMMON_OPTIONS = (SCALE, OUT, QUIET, DEBUG)  # taken by every experiment and command

DEVICE = Option(
    "--device",
    "where the theory's low-rank kernel products run: auto (a CUDA GPU through torch when there is one), numpy, "
    "or a torch device; sets ATTENTION_PATHS_DEVICE (sampling uses JAX's default device)",
    default="auto",
)
CPU_DEVICES = Option(
    "--cpu-devices",
    "expose this many CPU devices to JAX so that sampling chains run in parallel (default: min(number of CPUs, 8); "
    "must be set before JAX starts)",
    type=int,
)
NETWORK = Option(
    "--network",
    "which trained network: quick, paper, paper-seed<k>, paper-2x8 or paper-3x3 (default: the one of --scale)",
    keyword="network",
    check="attention_paths.tasks.omniglot.recipe:network_config",  # imports no torch
)
TRAIN_MISSING = Option(
    "--train-missing",
    "train the network here when it is not committed under data/ (hours at the paper's recipe); without it, "
    "such a network is an error naming the command that trains it",
    action="store_true",
)
NO_SAMPLE = Option(
    "--no-sample", "skip posterior sampling", action="store_false", default=True, dest="sample", keyword="sample"
)
SAMPLING = Option(
    "--sampling",
    "override the scale's sampling budget, e.g. 2,100,100",
    metavar="CHAINS,WARMUP,SAMPLES",
    keyword="budget",
)
SAMPLER = Option(
    "--sampler",
    "posterior sampler (default: the scale's; paper: full-weight NUTS, quick: Rao-Blackwellised)",
    choices=SAMPLER_NAMES,  # every sampler usable by name, read without JAX (--help must not import it: tested)
)
SAMPLER_LIST = Option(
    "--samplers",
    "the samplers to compare with the theory, by name (default: the built-in two; a sampler that is not "
    "every_width runs only at the config's full_widths)",
    metavar="NAME,...",
    keyword="samplers",
    check="attention_paths.sampling.names:check_sampler_names",
)


def _written_theory_run(folder: str):
    """``--theory-from``'s value: the omniglot-theory run in ``folder``, read and checked (``load_run``; loads
    the tasks, so only when the option is given)."""
    try:
        return resolve("attention_paths.runs.experiments:load_run")(folder, "omniglot-theory", required=True)
    except (FileNotFoundError, ValueError) as err:
        raise argparse.ArgumentTypeError(str(err)) from None


THEORY_FROM = Option(
    "--theory-from",
    "reuse the widths x temperatures grid of this written omniglot-theory run of the same network and scale "
    "(e.g. data/omniglot-theory/paper-sizes-paper-network) instead of solving it again; the features are "
    "extracted anew and checked against it",
    type=_written_theory_run,
    metavar="DIR",
    keyword="theory",
)


def _number_list(kind):
    def parse(value: str):
        try:
            return [kind(v) for v in value.split(",") if v.strip()]
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {kind.__name__}s separated by commas, got {value!r}") from None

    parse.__name__ = f"{kind.__name__} list"
    return parse


GRID_WIDTHS = Option(
    "--widths",
    "restrict the theory grid to these of the scale's widths, e.g. 10,100,1000 (keep the panel's N = 10); the "
    "run records them",
    type=_number_list(int),
    metavar="N,...",
    keyword="widths",
)
GRID_TAUS = Option(
    "--taus",
    "restrict the theory grid to these of the scale's temperatures, e.g. 0.1,0.25,0.5,1 (keep the panel's 0.5)",
    type=_number_list(float),
    metavar="TAU,...",
    keyword="taus",
)
SAMPLE_WIDTHS = Option(
    "--widths",
    "sample the posterior at these widths (default: the scale's, paper 500, quick 10)",
    type=_number_list(int),
    metavar="N,...",
    keyword="widths",
)
SAMPLE_TAU = Option(
    "--tau", "the temperature to sample at (default: the scale's, paper 0.25, quick 0.5)", type=float, keyword="tau"
)
SAVE_SAMPLES = Option(
    "--save-samples", "also write every posterior-sampling run whole (large files)", action="store_true"
)

SEED = Option(
    "--seed",
    "training seed (initial weights, label-embedding table and data order; default: the network's)",
    type=int,
)
MAX_STEPS = Option("--max-steps", "stop after this many steps (resume later with the same --out)", type=int)
RESUME_FROM = Option(
    "--resume-from",
    "continue an interrupted run from this last.pt (e.g. a committed data/omniglot-<network>/resume.pt) when --out "
    "holds none",
    metavar="CHECKPOINT",
)
THREADS = Option("--threads", "CPU threads of each training (default: every core)", type=int)
PRECISION = Option(
    "--precision",
    "auto = 16-bit mixed precision on a GPU, float32 on a CPU; bfloat16 autocast is about 2x faster on CPUs with "
    "AVX512-BF16 (default: the network's registered precision, auto but for paper-bf16)",
    choices=("auto", "float32", "bfloat16", "float16"),
)

WORKERS = Option(
    "--workers",
    "run independent stages on a local Dask cluster of this many worker processes (1: serially in this process)",
    type=int,
    default=1,
)
SCHEDULER = Option(
    "--scheduler", "address of a running Dask scheduler (e.g. tcp://host:8786) to run the stages on", metavar="ADDRESS"
)
ONLY = Option("--only", "these stages and what they need", metavar="STAGE,...")
FORCE = Option("--force", "recompute these stages", default="", metavar="STAGE,...")
STATUS = Option("--status", "print each stage's state and exit", action="store_true")
RETRAIN = Option("--retrain", "train the network even when a committed checkpoint exists", action="store_true")
SEEDS = Option("--seeds", "training seeds (default: 42,1,2,3,4; 42 is the network 'paper')", metavar="K,...")
COMMIT = Option(
    "--commit",
    "copy every finished network, theory and pruning run into data/ (the committed results)",
    action="store_true",
)
STAGED = (WORKERS, SCHEDULER, ONLY, FORCE, STATUS)

MODEL = Option(
    "--model",
    "your network: a file saved by torch.save(model, path) or a 'module:function' entry point returning it "
    "(default: the example of the chapter 'Your own network')",
    metavar="FILE_OR_ENTRY_POINT",
    keyword="model",
)
DATA = Option(
    "--data",
    "an .npz of inputs and +-1 labels: x_train, y_train and x_<set>, y_<set> per evaluation set (default: the "
    "example's task)",
    metavar="FILE",
    keyword="data",
)
N_THEORY = Option(
    "--n-theory",
    "the theory uses the first this many training examples (default: the scale's)",
    type=int,
    keyword="n_theory",
)
USER_WIDTHS = Option(
    "--widths", "the theory grid's widths, e.g. 10,100,1000", type=_number_list(int), metavar="N,...", keyword="widths"
)
USER_TAUS = Option(
    "--taus",
    "the theory grid's temperatures, e.g. 0.1,0.5,1",
    type=_number_list(float),
    metavar="TAU,...",
    keyword="taus",
)
PRUNE_WIDTH = Option("--width", "the theory's width for the head scores (default 10)", type=int, keyword="width")
PRUNE_TAU = Option("--tau", "the theory's temperature for the head scores (default 0.5)", type=float, keyword="tau")
REMOVE = Option(
    "--remove",
    "heads the saved network loses by ascending score (default: the most that cost at most 1 point on the first "
    "evaluation set)",
    type=int,
    keyword="remove",
)
N_RANDOM = Option(
    "--n-random", "random removal orders to compare with (default: the scale's)", type=int, keyword="n_random"
)

# ------------------------------------------------------------------------------------------ the records
_TOY, _MARKOV = "attention_paths.tasks.toy", "attention_paths.tasks.markov"
_ONESHOT, _PRUNING = "attention_paths.tasks.oneshot", "attention_paths.tasks.pruning"
_YOURS = "attention_paths.tasks.yours"
_EXPERIMENTS = "attention_paths.runs.experiments"

EXPERIMENTS: dict[str, Experiment] = {  # in the book's order
    e.name: e
    for e in (
        Experiment(
            "theory",
            "the theory on a toy problem: the order parameter and accuracy across widths",
            options=(DEVICE,),
            run=f"{_TOY}:theory_demo",
            result=f"{_TOY}:TheoryDemoResult",
            summary=f"{_TOY}:theory_summary",
            reader=f"{_TOY}:read_theory_run",
            configs=f"{_TOY}:THEORY_DEMO",
            tiny=(("widths", (1000, 10)),),
            headline=(
                "experiment",
                "scale",
                "gp_accuracy_percent",
                "gp_generalization_error",
                "solve_seconds",
                "wall_seconds",
            ),
        ),
        Experiment(
            "posterior",
            "the posterior-sampling check of the theory on a toy problem (both samplers)",
            options=(DEVICE, CPU_DEVICES, SAMPLER_LIST),
            run=f"{_TOY}:posterior_check",
            result=f"{_TOY}:PosteriorCheckResult",
            summary=f"{_TOY}:posterior_summary",
            reader=f"{_TOY}:read_posterior_run",
            configs=f"{_TOY}:POSTERIOR_CHECK",
            tiny=(("widths", (10,)), ("full_widths", ()), ("num_chains", 1), ("num_warmup", 20), ("num_samples", 20)),
            headline=("experiment", "scale", "wall_seconds"),
            gpu=True,
        ),
        Experiment(
            "hmc",
            "the hidden Markov chain task: theory at the paper's sizes on several seed sets, and posterior sampling",
            options=(DEVICE, CPU_DEVICES, SAVE_SAMPLES),
            run=f"{_MARKOV}:run_markov",
            result=f"{_MARKOV}:MarkovResult",
            summary=f"{_MARKOV}:markov_summary",
            reader=f"{_MARKOV}:read_markov_run",
            configs=f"{_MARKOV}:MARKOV_EXPERIMENT",
            committed="hmc-paper",
            claims=f"{_MARKOV}:markov_claims",
            tables=(f"{_MARKOV}:format_sweep", f"{_MARKOV}:format_sampling", f"{_MARKOV}:format_seed_sets"),
            headline=("experiment", "scale", "theory_seconds", "claims", "wall_seconds"),
            stored=f"{_MARKOV}.storage:slim_hmc_result",
            samples=f"{_EXPERIMENTS}:hmc_samples",
            gpu=True,
        ),
        Experiment(
            "omniglot-theory",
            "the theory of the trained Omniglot network: the widths x temperatures grid, posterior sampling",
            options=(
                DEVICE,
                CPU_DEVICES,
                NETWORK,
                TRAIN_MISSING,
                NO_SAMPLE,
                GRID_WIDTHS,
                GRID_TAUS,
                SAMPLING,
                SAMPLER,
                SAVE_SAMPLES,
            ),
            run=f"{_ONESHOT}:run_oneshot",
            result=f"{_ONESHOT}:OneShotResult",
            summary=f"{_ONESHOT}:oneshot_summary",
            reader=f"{_ONESHOT}:read_oneshot_run",
            configs=f"{_ONESHOT}:ONESHOT_EXPERIMENT",
            committed="omniglot-theory/paper-sizes-paper-network",
            claims=f"{_ONESHOT}:oneshot_claims",
            tables=(f"{_ONESHOT}:format_selection",),
            headline=(
                "experiment",
                "scale",
                "network_record",
                "network_accuracy",
                "widths",
                "taus",
                "gp_taus",
                "gp_accuracy",
                "gp_grid_accuracy",
                "select",
                "panel",
                "seconds",
                "claims",
                "edge",
                "paired",
                "wall_seconds",
            ),
            samples=f"{_EXPERIMENTS}:oneshot_samples",
            gpu=True,
            network_chain=True,
        ),
        Experiment(
            "omniglot-sampling",
            "posterior samples of a trained Omniglot network at chosen widths, each against the theory there",
            options=(
                DEVICE,
                CPU_DEVICES,
                NETWORK,
                TRAIN_MISSING,
                SAMPLE_WIDTHS,
                SAMPLE_TAU,
                SAMPLING,
                SAMPLER,
                SAVE_SAMPLES,
            ),
            run=f"{_ONESHOT}.sampling_run:run_oneshot_sampling",
            result=f"{_ONESHOT}.sampling_run:OneShotSamplingResult",
            summary=f"{_ONESHOT}.sampling_run:oneshot_sampling_summary",
            reader=f"{_ONESHOT}.sampling_run:read_oneshot_sampling_run",
            configs=f"{_ONESHOT}.sampling_run:ONESHOT_SAMPLING",
            committed="omniglot-sampling/paper-3x3-network-N10",
            claims=f"{_ONESHOT}.sampling_run:sampling_run_claims",
            headline=("experiment", "scale", "config", "agreement", "seconds", "claims", "wall_seconds"),
            samples=f"{_EXPERIMENTS}:oneshot_samples",
            gpu=True,
        ),
        Experiment(
            "pruning",
            "head pruning of the trained Omniglot network by the theory's head scores",
            options=(DEVICE, NETWORK, TRAIN_MISSING, THEORY_FROM),
            run=f"{_PRUNING}:run_pruning",
            result=f"{_PRUNING}:PruningResult",
            summary=f"{_PRUNING}:pruning_summary",
            reader=f"{_PRUNING}:read_pruning_run",
            configs=f"{_PRUNING}:PRUNING_EXPERIMENT",
            committed="pruning/paper-network",
            claims=f"{_PRUNING}:pruning_claims",
            tables=(f"{_PRUNING}:format_table", f"{_PRUNING}:format_statistics"),
            headline=(
                "scale",
                "network_record",
                "n_episodes",
                "unpruned",
                "scores",
                "scores_selected_tau",
                "magnitude",
                "order",
                "widths",
                "taus",
                "spearman",
                "experiment",
                "claims",
                "wall_seconds",
            ),
            network_chain=True,
        ),
        Experiment(
            "analyse",
            "the theory of your own attention network: U* over a widths x temperatures grid, GP and renormalised "
            "accuracies, head scores and kernel alignment",
            options=(DEVICE, MODEL, DATA, USER_WIDTHS, USER_TAUS, N_THEORY),
            run=f"{_YOURS}.analyse:run_analyse",
            result=f"{_YOURS}.analyse:AnalyseResult",
            summary=f"{_YOURS}.analyse:analyse_summary",
            reader=f"{_YOURS}.analyse:read_analyse_run",
            configs=f"{_YOURS}.analyse:ANALYSE",
            tiny=(("widths", (10, 1000)), ("taus", (0.5,))),
            headline=("experiment", "scale", "config", "heads", "network_accuracy", "seconds", "wall_seconds"),
        ),
        Experiment(
            "prune",
            "theory-guided pruning of your own attention network: curves by head score, value norm and random "
            "orders, and the pruned network's state dict",
            options=(DEVICE, MODEL, DATA, PRUNE_WIDTH, PRUNE_TAU, REMOVE, N_RANDOM, N_THEORY),
            run=f"{_YOURS}.prune:run_prune",
            result=f"{_YOURS}.prune:PruneResult",
            summary=f"{_YOURS}.prune:prune_summary",
            reader=f"{_YOURS}.prune:read_prune_run",
            configs=f"{_YOURS}.prune:PRUNE",
            tiny=(("n_random", 5),),
            headline=("experiment", "scale", "config", "heads", "scores", "removed", "pruned_check", "wall_seconds"),
        ),
    )
}

COMMANDS: dict[str, Command] = {
    c.name: c
    for c in (
        Command(
            "omniglot-train",
            "train a network of the Omniglot task (resumable with the same --out)",
            (NETWORK, SEED, MAX_STEPS, RESUME_FROM, THREADS, PRECISION),
        ),
        Command(
            "reproduce",
            "every experiment as resumable stages (a Dask graph)",
            (DEVICE, CPU_DEVICES, NETWORK, NO_SAMPLE, SAMPLING, SAMPLER, RETRAIN, *STAGED),
        ),
        Command(
            "ensemble",
            "train and analyse the paper-recipe networks of several seeds as resumable stages",
            (DEVICE, SEEDS, COMMIT, THREADS, *STAGED),
        ),
    )
}

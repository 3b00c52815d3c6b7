"""Command line: ``python -m attention_paths <experiment> --scale {quick,paper} --out DIR``."""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
from pathlib import Path

from attention_paths.base import config
from attention_paths.tasks.omniglot.recipe import config_for, network_config

# The experiments of runs.experiments.EXPERIMENTS (a test checks the two agree): named here so that --help and
# argument errors answer before torch, JAX and the tasks load; each experiment's modules load when it runs.
EXPERIMENT_NAMES = ("hmc", "omniglot-theory", "posterior", "pruning", "theory")

# A user's mistake (a bad argument, a damaged or missing file, a locked folder, a missing dataset, a run that
# diverged, a solver that did not converge) is reported in one line with exit status 2; anything else is a bug
# and shows its traceback, as does every error under --debug.
USER_ERRORS = (ValueError, OSError, FloatingPointError)
# (module, class) of the package's own user errors: an instance exists only once its module is loaded, so
# they are looked up among the loaded modules rather than imported (which would load dask and torch)
PACKAGE_USER_ERRORS = (
    ("attention_paths.runs.pipeline", "ResultsFolderLocked"),
    ("attention_paths.theory.solver", "SolverError"),
)


def user_errors() -> tuple[type[BaseException], ...]:
    """The exception types reported as a user's mistake (:data:`USER_ERRORS` and the loaded
    :data:`PACKAGE_USER_ERRORS`)."""
    loaded = tuple(getattr(sys.modules[m], c) for m, c in PACKAGE_USER_ERRORS if m in sys.modules)
    return USER_ERRORS + loaded


def main(argv=None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        return _main(args, parser)
    except Exception as err:
        if args.debug or not isinstance(err, user_errors()):
            raise
        message = " ".join(str(err).split()) or type(err).__name__
        print(f"{parser.prog}: error: {message} (--debug shows the traceback)", file=sys.stderr)
        return 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m attention_paths", description=__doc__)
    parser.add_argument(
        "experiment",
        choices=sorted(EXPERIMENT_NAMES) + ["omniglot-train", "reproduce", "ensemble"],
        help="which experiment to run; `reproduce` runs every experiment as resumable stages; `ensemble` "
        "trains and analyses the paper-recipe networks of several seeds as resumable stages",
    )
    parser.add_argument(
        "--scale", choices=["quick", "paper"], default=None, help="problem sizes (default: $REPRO_SCALE or quick)"
    )
    parser.add_argument("--out", default=None, help="output folder (default: out/<experiment>-<scale>)")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    parser.add_argument("--debug", action="store_true", help="show the traceback of every error")
    parser.add_argument(
        "--device",
        default="auto",
        help="where the theory's low-rank kernel products run: auto (a CUDA GPU through torch when "
        "there is one), numpy, or a torch device; sets ATTENTION_PATHS_DEVICE (sampling uses "
        "JAX's default device, training torch's GPU when there is one)",
    )
    _training_arguments(parser)
    _theory_arguments(parser)
    _reproduce_arguments(parser)
    return parser


def _training_arguments(parser) -> None:
    g = parser.add_argument_group("omniglot-train")
    g.add_argument(
        "--max-steps",
        type=int,
        default=None,
        help="omniglot-train: stop after this many steps (resume later with the same --out)",
    )
    g.add_argument(
        "--seed",
        type=int,
        default=None,
        help="omniglot-train: training seed (initial weights, label-embedding table and data order; "
        "default: the recipe's 42)",
    )
    g.add_argument(
        "--resume-from",
        default=None,
        metavar="CHECKPOINT",
        help="omniglot-train: continue an interrupted run from this last.pt (e.g. a committed "
        "data/omniglot-<network>/resume.pt) when --out holds none",
    )
    g.add_argument(
        "--threads",
        type=int,
        default=None,
        help="omniglot-train: CPU threads (default: every core)",
    )
    g.add_argument(
        "--precision",
        choices=["auto", "float32", "bfloat16", "float16"],
        default="auto",
        help="omniglot-train: auto = 16-bit mixed precision on a GPU, float32 on a CPU; bfloat16 "
        "autocast is about 2x faster on CPUs with AVX512-BF16",
    )


def _theory_arguments(parser) -> None:
    g = parser.add_argument_group("theory, sampling and pruning")
    g.add_argument(
        "--network",
        type=_network,
        default=None,
        help="omniglot-train, omniglot-theory, pruning, reproduce: which network: quick, paper, "
        "paper-seed<k>, paper-2x8 or paper-3x3 (default: the one of --scale)",
    )
    g.add_argument("--no-sample", action="store_true", help="omniglot-theory: skip posterior sampling")
    g.add_argument(
        "--sampling",
        default=None,
        metavar="CHAINS,WARMUP,SAMPLES",
        help="omniglot-theory: override the scale's sampling budget, e.g. 2,100,100",
    )
    g.add_argument(
        "--sampler",
        choices=["rao-blackwell", "full"],  # sampling.SAMPLER_KINDS, spelt out: --help must not import JAX (tested)
        default=None,
        help="omniglot-theory, reproduce: posterior sampler (default: the scale's; paper: full-weight "
        "NUTS, quick: Rao-Blackwellised)",
    )
    g.add_argument(
        "--save-samples", action="store_true", help="also write every posterior-sampling run whole (large files)"
    )
    g.add_argument(
        "--cpu-devices",
        type=int,
        default=None,
        help="expose this many CPU devices to JAX so that sampling chains run in parallel "
        "(default: min(number of CPUs, 8); must be set before JAX starts)",
    )


def _reproduce_arguments(parser) -> None:
    rp = parser.add_argument_group("reproduce and ensemble")
    rp.add_argument(
        "--workers",
        type=int,
        default=1,
        help="reproduce: run independent stages on a local Dask cluster of this many worker processes "
        "(1: serially in this process)",
    )
    rp.add_argument(
        "--scheduler",
        default=None,
        metavar="ADDRESS",
        help="reproduce: address of a running Dask scheduler (e.g. tcp://host:8786) to run the stages on",
    )
    rp.add_argument("--only", default=None, metavar="STAGE,...", help="reproduce: these stages and what they need")
    rp.add_argument("--force", default="", metavar="STAGE,...", help="reproduce: recompute these stages")
    rp.add_argument("--status", action="store_true", help="reproduce: print each stage's state and exit")
    rp.add_argument(
        "--seeds",
        default=None,
        metavar="K,...",
        help="ensemble: training seeds (default: 42,1,2,3,4; 42 is the network 'paper')",
    )
    rp.add_argument(
        "--commit",
        action="store_true",
        help="ensemble: copy every finished network, theory and pruning run into data/ (the committed results)",
    )
    rp.add_argument(
        "--retrain", action="store_true", help="reproduce: train the network even when a committed checkpoint exists"
    )


def _main(args, parser) -> int:
    budget = _sampling_budget(args, parser)  # every argument is checked before anything is computed
    config.set_theory_device(args.device)
    # JAX starts on the first sampling call (attention_paths.sampling loads it lazily), after this
    config.expose_cpu_devices(args.cpu_devices or min(os.cpu_count() or 1, 8), jax_started="jax" in sys.modules)
    scale = config.get_scale(args.scale)
    out = args.out or f"out/{args.experiment}-{scale}"
    if args.max_steps is not None and args.max_steps < 1:
        parser.error(f"--max-steps must be a positive number of steps, got {args.max_steps}")
    if args.cpu_devices is not None and args.cpu_devices < 1:
        parser.error(f"--cpu-devices must be positive, got {args.cpu_devices}")
    if args.threads is not None and args.threads < 1:
        parser.error(f"--threads must be positive, got {args.threads}")
    if args.workers < 1:
        parser.error(f"--workers must be positive, got {args.workers}")
    for name in ("only", "force"):
        value = getattr(args, name)
        if value is not None and (value or name == "only") and not [v for v in value.split(",") if v.strip()]:
            parser.error(
                f"--{name} names no stage ({value!r}); give stage names separated by commas, see --status for the list"
            )
    if args.experiment == "ensemble":
        args.seeds = _seeds(args.seeds, parser)
    problem = _unusable_out(out, must_write=not (args.experiment in ("reproduce", "ensemble") and args.status))
    if problem:
        parser.error(problem)
    if args.experiment in ("reproduce", "ensemble"):
        return _reproduce(args, scale, out, parser, budget)
    if args.experiment == "omniglot-train":
        # loaded here, after the arguments are checked: torch and the training code take seconds to import
        from attention_paths.tasks.omniglot.training import format_history, train

        overrides = {} if args.seed is None else {"seed": args.seed}
        cfg = config_for(args.network or scale, **overrides)
        summary = train(
            cfg,
            out,
            progress=not args.quiet,
            max_steps=args.max_steps,
            precision=args.precision,
            threads=args.threads,
            resume_from=args.resume_from,
        )
        print(format_history(summary))
        written = [f"{out}/{f}" for f in ("summary.json", "last.pt", "best.pt") if os.path.exists(os.path.join(out, f))]
        print(f"wrote {', '.join(written)}", file=sys.stderr)
        return 0
    # loaded here, after the arguments are checked: the experiments import torch, scipy and the tasks
    from attention_paths.runs.experiments import run_experiment

    options = {
        "omniglot-theory": {"network": args.network, "sample": not args.no_sample, "budget": budget},
        "pruning": {"network": args.network},
    }.get(args.experiment, {})
    summary = run_experiment(
        args.experiment, scale, out, progress=not args.quiet, save_samples=args.save_samples, **options
    )
    skip = (
        "per_width",
        "provenance",
        "seed_sets",
        "sampled",
        "grid_accuracy",
        "solver",
        "data",
        "config",
        "pairs",
        "stability",
        "singles",
        "combinations",
        "reference_combinations",
        "theory_side",
    )
    print(json.dumps({k: v for k, v in summary.items() if k not in skip}, indent=2, default=str))
    print(f"wrote {out}/summary.json and {out}/arrays.npz", file=sys.stderr)
    return 0


def _network(name: str) -> str:
    """``--network``: a trained network's name (:func:`attention_paths.tasks.omniglot.recipe.network_config`)."""
    try:
        network_config(name)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None
    return name


def _unusable_out(out, must_write: bool = True) -> str | None:
    """Why ``--out`` cannot hold results (a file, not writable), checked before any computation; ``None`` if
    it can.  The folder is created when missing (and writing is tried)."""
    path = Path(out)
    if path.exists() and not path.is_dir():
        return f"--out {out} is a file, not a folder; name a folder for the results"
    if not must_write:
        return None
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=path):
            pass
    except OSError as err:
        return f"--out {out} cannot be written ({err.strerror or err})"
    return None


def _sampling_budget(args, parser) -> dict | None:
    """``--sampling CHAINS,WARMUP,SAMPLES`` (and ``--sampler``) as sampler settings, or ``None``."""
    if not args.sampling:
        return {"kind": args.sampler} if args.sampler else None
    try:
        budget = dict(zip(("num_chains", "num_warmup", "num_samples"), (int(v) for v in args.sampling.split(","))))
    except ValueError:
        parser.error(f"--sampling must be CHAINS,WARMUP,SAMPLES (integers), got {args.sampling!r}")
    if len(budget) != 3 or len(args.sampling.split(",")) != 3:
        parser.error(f"--sampling must be CHAINS,WARMUP,SAMPLES, got {args.sampling!r}")
    if budget["num_chains"] < 1 or budget["num_warmup"] < 1 or budget["num_samples"] < 2:
        parser.error(f"--sampling {args.sampling}: need at least 1 chain, 1 warm-up step and 2 draws per chain")
    return budget | ({"kind": args.sampler} if args.sampler else {})


SCHEDULER_TIMEOUT_S = 15


def _connect(client_class, address: str):
    """A Dask client of the scheduler at ``address``, or ``ConnectionError`` naming it within about
    :data:`SCHEDULER_TIMEOUT_S` seconds (a closed port, a host that does not answer, or a server that is not a
    Dask scheduler, which never completes the handshake)."""
    box = {}

    def connect():  # in a daemon thread: a server that accepts but never answers cannot hold the process
        try:
            box["client"] = client_class(address, timeout=SCHEDULER_TIMEOUT_S)
        except BaseException as err:  # reported below, in the caller's thread
            box["error"] = err

    thread = threading.Thread(target=connect, daemon=True)
    thread.start()
    thread.join(SCHEDULER_TIMEOUT_S + 1)
    if "client" in box:
        return box["client"]
    err = box.get("error")
    what = (
        f"{type(err).__name__}: {' '.join(str(err).split())[:200]}"
        if err is not None
        else "the address accepted the connection but never completed Dask's handshake: not a Dask scheduler?"
    )
    raise ConnectionError(
        f"no Dask scheduler answered at --scheduler {address} within {SCHEDULER_TIMEOUT_S} s ({what}); start "
        "one with `dask scheduler`, or check the address"
    )


def _seeds(value: str | None, parser) -> tuple[int, ...] | None:
    """``--seeds K,...`` as distinct non-negative integers (``None``: the default ensemble)."""
    if value is None:
        return None
    try:
        seeds = tuple(int(v) for v in value.split(","))
    except ValueError:
        parser.error(f"--seeds must be integers separated by commas, got {value!r}")
    if not seeds or min(seeds) < 0 or len(set(seeds)) != len(seeds):
        parser.error(f"--seeds must be distinct non-negative integers, got {value!r}")
    return seeds


def _reproduce(args, scale, out, parser, budget) -> int:
    # loaded here, after the arguments are checked: the stages import dask, torch, scipy and the tasks
    from attention_paths.runs.pipeline import run_pipeline, status_table
    from attention_paths.runs.stages import commit_member, ensemble_members, ensemble_stages, reproduction_stages

    if args.experiment == "ensemble":
        stages = ensemble_stages(args.seeds, threads=args.threads)
    else:
        stages = reproduction_stages(scale, network=args.network, retrain=args.retrain, sampling=budget)
    if args.status:
        print(status_table(stages, out))
        return 0
    only = [s.strip() for s in args.only.split(",") if s.strip()] if args.only is not None else None
    force = [s.strip() for s in args.force.split(",") if s.strip()]
    client = cluster = None
    if args.scheduler or args.workers > 1:
        from distributed import Client, LocalCluster  # optional dependency (dask.distributed), only for clusters

        if args.scheduler:
            client = _connect(Client, args.scheduler)
        else:
            cluster = LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True, dashboard_address=":0")
            client = Client(cluster)
        print(f"running on Dask: {client}", file=sys.stderr)
    try:
        results = run_pipeline(stages, out, client=client, force=force, only=only, progress=not args.quiet)
    finally:
        if client is not None:
            client.close()
        if cluster is not None:
            cluster.close()
    for name, r in results.items():
        print(f"{name:<26} {r['status']:<8} {r.get('wall_seconds', 0.0):8.1f} s")
    if args.experiment == "ensemble" and args.commit:
        for _, name in ensemble_members(args.seeds):
            for part, folder in commit_member(out, name).items():
                print(f"committed {name} {part} -> {folder}", file=sys.stderr)
    print(f"results in {out}; build the book from them with REPRO_RESULTS={out} make book", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

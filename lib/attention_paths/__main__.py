"""Command line: ``python -m attention_paths <command> --scale {quick,paper} --out DIR [options]``.

The commands are the experiments of :data:`attention_paths.runs.registry.EXPERIMENTS` and ``omniglot-train``,
``reproduce`` and ``ensemble`` (:data:`~attention_paths.runs.registry.COMMANDS`); each takes only its own
options (``python -m attention_paths hmc --help`` lists them), and an option it does not take is an error.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
from pathlib import Path

from attention_paths.base import config
from attention_paths.runs.lock import ResultsFolderLocked, results_lock
from attention_paths.runs.registry import COMMANDS, COMMON_OPTIONS, EXPERIMENTS

PROG = "python -m attention_paths"
# Every experiment of runs.registry.EXPERIMENTS, then the other commands, each a subcommand with its own options;
# the registry imports nothing heavy, so --help and argument errors answer before torch, JAX and the tasks load.
SUBCOMMANDS = {**dict(sorted(EXPERIMENTS.items())), **COMMANDS}

# A user's mistake (a bad argument, a damaged or missing file, a locked folder, a missing dataset, a run that
# diverged, a solver that did not converge) is reported in one line with exit status 2; anything else is a bug
# and shows its traceback, as does every error under --debug.
USER_ERRORS = (ValueError, OSError, FloatingPointError, ResultsFolderLocked)
# (module, class) of the package's own user errors: an instance exists only once its module is loaded, so
# they are looked up among the loaded modules rather than imported (which would load torch)
PACKAGE_USER_ERRORS = (("attention_paths.theory.solver", "SolverError"),)


def user_errors() -> tuple[type[BaseException], ...]:
    """The exception types reported as a user's mistake (:data:`USER_ERRORS` and the loaded
    :data:`PACKAGE_USER_ERRORS`)."""
    loaded = tuple(getattr(sys.modules[m], c) for m, c in PACKAGE_USER_ERRORS if m in sys.modules)
    return USER_ERRORS + loaded


def main(argv=None) -> int:
    parser = _parser()
    args = _parse(parser, sys.argv[1:] if argv is None else list(argv))
    try:
        return _main(args, _subparser(parser, args.experiment))
    except Exception as err:
        if args.debug or not isinstance(err, user_errors()):
            raise
        message = " ".join(str(err).split()) or type(err).__name__
        print(f"{PROG}: error: {message} (--debug shows the traceback)", file=sys.stderr)
        return 2


def _parser() -> argparse.ArgumentParser:
    """The command line: one subcommand per experiment and command of :mod:`attention_paths.runs.registry`,
    each with only the options it takes (and no abbreviations: ``--seed`` never stands for ``--seeds``)."""
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Run an experiment of the book, train a network, or run every experiment as resumable stages; "
        f"`{PROG} COMMAND --help` lists the options of COMMAND.",
        allow_abbrev=False,
    )
    sub = parser.add_subparsers(dest="experiment", metavar="COMMAND", required=True)
    for name, command in SUBCOMMANDS.items():
        p = sub.add_parser(name, help=command.help, description=command.help, allow_abbrev=False)
        for option in COMMON_OPTIONS + command.options:
            option.add_to(p)
    return parser


def _subparser(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser:
    """The parser of subcommand ``name`` (its errors print its own usage)."""
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return action.choices[name]


def _parse(parser: argparse.ArgumentParser, argv: list) -> argparse.Namespace:
    """Parsed arguments; an argument the subcommand does not take is an error naming it, and the commands that
    take it.  Options written before the command go to it, as they did when the command line was one parser."""
    first = next((k for k, a in enumerate(argv) if a in SUBCOMMANDS), 0)
    if first and argv[0].startswith("-") and not {"-h", "--help"} & set(argv[:first]):
        argv = [argv[first], *argv[:first], *argv[first + 1 :]]  # options before the command (`--debug hmc`)
    args, extra = parser.parse_known_args(argv)
    if extra:
        flags = [a.split("=", 1)[0] for a in extra if a.startswith("-")]
        takers = sorted(n for n, c in SUBCOMMANDS.items() if any(c.takes(f) for f in flags))
        where = f" ({', '.join(takers)} {'takes' if len(takers) == 1 else 'take'} it)" if takers else ""
        _subparser(parser, args.experiment).error(
            f"{args.experiment} does not take {' '.join(flags or extra)}{where}; see `{PROG} {args.experiment} --help`"
        )
    return args


def _main(args, parser) -> int:
    opts = vars(args)
    budget = _sampling_budget(args, parser) if "sampling" in opts else None  # every argument checked first
    config.set_theory_device(opts.get("device", "auto"))
    # JAX starts on the first sampling call (attention_paths.sampling loads it lazily), after this
    config.expose_cpu_devices(opts.get("cpu_devices") or min(os.cpu_count() or 1, 8), jax_started="jax" in sys.modules)
    scale = config.get_scale(args.scale)
    out = args.out or f"out/{args.experiment}-{scale}"
    for name in ("max_steps", "cpu_devices", "threads", "workers"):
        if opts.get(name) is not None and opts[name] < 1:
            what = "a positive number of steps" if name == "max_steps" else "positive"
            parser.error(f"--{name.replace('_', '-')} must be {what}, got {opts[name]}")
    for name in ("only", "force"):
        value = opts.get(name)
        if value is not None and (value or name == "only") and not [v for v in value.split(",") if v.strip()]:
            parser.error(
                f"--{name} names no stage ({value!r}); give stage names separated by commas, see --status for the list"
            )
    if args.experiment == "ensemble":
        args.seeds = _seeds(args.seeds, parser)
    problem = _unusable_out(out, must_write=not opts.get("status"))
    if problem:
        parser.error(problem)
    if args.experiment in ("reproduce", "ensemble"):
        return _reproduce(args, scale, out, parser, budget)
    if args.experiment == "omniglot-train":
        return _train(args, scale, out)
    exp = EXPERIMENTS[args.experiment]
    options = exp.keywords(opts)
    if "budget" in options:
        options["budget"] = budget
    with results_lock(out):  # taken first: a second run on the folder stops before loading anything
        # loaded here, after the arguments are checked: the experiments import torch, scipy and the tasks
        from attention_paths.runs.experiments import run_experiment

        summary = run_experiment(
            exp.name,
            scale,
            out,
            progress=not args.quiet,
            save_samples=opts.get("save_samples", False),
            train_missing=opts.get("train_missing", False),
            lock=False,
            **options,
        )
    print(json.dumps({k: v for k, v in summary.items() if k in exp.headline}, indent=2, default=str))
    print(f"wrote {out}/summary.json and {out}/arrays.npz", file=sys.stderr)
    return 0


def _train(args, scale, out) -> int:
    """``omniglot-train``: train the network of ``--network`` (or the scale's) into ``out``, under its lock."""
    from attention_paths.tasks.omniglot.recipe import config_for, network_precision

    with results_lock(out):
        # loaded here, after the arguments are checked: torch and the training code take seconds to import
        from attention_paths.tasks.omniglot.training import format_history, train

        overrides = {} if args.seed is None else {"seed": args.seed}
        cfg = config_for(args.network or scale, **overrides)
        summary = train(
            cfg,
            out,
            progress=not args.quiet,
            max_steps=args.max_steps,
            precision=args.precision or network_precision(args.network or scale),
            threads=args.threads,
            resume_from=args.resume_from,
        )
    print(format_history(summary))
    written = [f"{out}/{f}" for f in ("summary.json", "last.pt", "best.pt") if os.path.exists(os.path.join(out, f))]
    print(f"wrote {', '.join(written)}", file=sys.stderr)
    return 0


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
        budget = dict(
            zip(("num_chains", "num_warmup", "num_samples"), (int(v) for v in args.sampling.split(",")), strict=False)
        )
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


def _dask_client(args) -> tuple:
    """``(client, cluster)`` for ``--scheduler`` or ``--workers`` > 1 (``cluster`` is the local one made here,
    else ``None``); ``(None, None)`` to run in this process."""
    if not (args.scheduler or args.workers > 1):
        return None, None
    from distributed import Client, LocalCluster  # optional dependency (dask.distributed), only for clusters

    cluster = None
    if args.scheduler:
        client = _connect(Client, args.scheduler)
    else:
        cluster = LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True, dashboard_address=":0")
        client = Client(cluster)
    print(f"running on Dask: {client}", file=sys.stderr)
    return client, cluster


def _reproduce(args, scale, out, parser, budget) -> int:
    # loaded here, after the arguments are checked: the stages import dask, torch, scipy and the tasks
    from attention_paths.runs.pipeline import run_pipeline, status_table
    from attention_paths.runs.stages import commit_member, ensemble_members, ensemble_stages, reproduction_stages

    if args.experiment == "ensemble":
        stages = ensemble_stages(args.seeds, threads=args.threads)
    else:
        stages = reproduction_stages(
            scale, network=args.network, retrain=args.retrain, sampling=budget, sample=args.sample
        )
    if args.status:
        print(status_table(stages, out))
        return 0
    only = [s.strip() for s in args.only.split(",") if s.strip()] if args.only is not None else None
    force = [s.strip() for s in args.force.split(",") if s.strip()]
    client, cluster = _dask_client(args)
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

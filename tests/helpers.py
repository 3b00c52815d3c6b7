"""Random instances shared by the unit tests (spec T§16: unequal widths, variances and heads)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

import attention_paths as ap
from attention_paths.tasks import oneshot, toy


def random_layers(n0=7, heads=(2, 3), seed=0, beta=1.5):
    return toy.random_wform_layers(n0, heads, beta, np.random.default_rng(seed))


def random_instance(heads=(2, 3), P=15, n0=7, T=5, readout="mean", seed=0, sigma0_2=1.0):
    """Inputs, +-1 labels and path features of a small random problem with W-form heads."""
    rng = np.random.default_rng(seed)
    layers = random_layers(n0, heads, seed=seed + 100)
    r = ap.readout_vector(readout, T)
    x = rng.standard_normal((P, n0, T))
    y = np.where(rng.standard_normal(P) > 0, 1.0, -1.0)
    feats = ap.path_features(ap.path_inputs(x, layers, r), sigma0_2)
    return x, y, layers, r, feats


def random_spd(D, rng, scale=1.0):
    Z = rng.standard_normal((D, D))
    return scale * (np.eye(D) + 0.3 * Z @ Z.T / D)


def torch_reduced_action(Us, feats, y, tau, arch):
    """Independent torch implementation of the reduced action (spec T§7.1, T§9.1), for autodiff."""
    Xf = torch.as_tensor(feats)
    yt = torch.as_tensor(y)
    heads, N, s2 = arch.heads, arch.widths, arch.sigma2
    L = len(heads)
    b = s2[-1] * (heads[-1] * N[-2] / N[-1] - 1.0)
    c = s2[-1] * N[-2] * torch.trace(Us[-1]) / (N[-1] * s2[-2])
    Ua = (-b + torch.sqrt(b * b + 4 * c)) / 2
    S = N[-1] * (Ua / s2[-1] - torch.log(Ua))
    nexts = list(Us[1:]) + [Ua.reshape(1, 1)]
    for l in range(L):
        B = torch.kron(torch.eye(heads[l], dtype=torch.float64), torch.linalg.inv(nexts[l]).contiguous())
        S = S + N[l] * (torch.trace(B @ Us[l]) / s2[l] - torch.logdet(Us[l]) + heads[l] * torch.logdet(nexts[l]))
    K = torch.einsum("pia,ab,qib->pq", Xf, Us[0], Xf) + tau * torch.eye(len(y), dtype=torch.float64)
    S = S + torch.logdet(K) + yt @ torch.linalg.solve(K, yt)
    return S


def synthetic_oneshot_data(rng, P=40, n=30):
    """Features with a label-carrying direction in a few paths, so that the theory has something to find."""

    def feats(m):
        y = np.where(np.arange(m) < m // 2, 1.0, -1.0)
        X = rng.standard_normal((m, 12, 16)) / np.sqrt(12 * 16)
        X[:, 0, 5] += 0.6 * y / np.sqrt(12 * 16)
        X[:, 0, 9] += 0.4 * y / np.sqrt(12 * 16)
        return X, y

    features, ys = {}, {}
    for name in ("train",) + oneshot.EVAL_SETS:
        features[name], ys[name] = feats(P if name == "train" else n)
    outputs = {k: v + 0.1 for k, v in ys.items()}
    return oneshot.OneShotData(features, ys, outputs, np.eye(16), {"synthetic": True})


def central_differences(f, u0, h):
    """Columns d f / d u_k by central differences (f scalar- or vector-valued)."""
    cols = []
    for k in range(len(u0)):
        up, um = u0.copy(), u0.copy()
        up[k] += h
        um[k] -= h
        cols.append((np.asarray(f(up)) - np.asarray(f(um))) / (2 * h))
    return np.stack(cols, axis=-1)


def rewritten_run(tmp_path, src, edit_summary=None, edit_arrays=None):
    """A copy of the results folder ``src`` with its summary or arrays edited and its digest record regenerated,
    as a careful forger (or a buggy writer) would leave it: only the content checks can catch it."""
    import json
    import shutil
    from pathlib import Path

    from attention_paths.base.io import load_npz
    from attention_paths.runs import results

    run = tmp_path / Path(src).name
    shutil.copytree(src, run)
    summary = json.loads((run / "summary.json").read_text())
    arrays = load_npz(run / "arrays.npz")
    if edit_summary:
        edit_summary(summary)
    if edit_arrays:
        edit_arrays(arrays)
    (run / "summary.json").write_text(json.dumps(summary))
    np.savez(run / "arrays.npz", **arrays)
    results.write_files_record(run)
    return run


def cpu_has_avx512() -> bool:
    """Whether this CPU has AVX-512 (XLA then emits other vector code, and floating-point results differ in the
    last bits from a CPU without it); False where /proc/cpuinfo cannot be read."""
    try:
        with open("/proc/cpuinfo") as fh:
            return any(line.startswith("flags") and " avx512f" in line for line in fh)
    except OSError:
        return False


def interrupted_last_pt(run, name: str, history: list) -> Path:
    """``run/last.pt`` of an interrupted training of registered network ``name`` in the format written before
    issue 37 (no precision; weights of the network's initialisation, a fresh Adam state), its step, best and
    time those of the last entry of ``history``."""
    import dataclasses

    from attention_paths.tasks.omniglot import checkpoints, recipe
    from attention_paths.tasks.omniglot.model import InContextTransformer

    cfg = recipe.network_config(name)
    net = InContextTransformer(cfg.d_model, cfg.n_layers, cfg.n_heads, cfg.d_qk, cfg.seed)
    last = history[-1]
    state = {"config": dataclasses.asdict(cfg), "model": net.state_dict(),
             "optimizer": torch.optim.Adam(net.parameters()).state_dict(), "rng_state": {}, "step": last["step"],
             "history": history, "best": last, "seconds": last["seconds"]}  # fmt: skip
    Path(run).mkdir(parents=True, exist_ok=True)
    checkpoints._atomic_torch_save(state, Path(run) / "last.pt")
    return Path(run) / "last.pt"

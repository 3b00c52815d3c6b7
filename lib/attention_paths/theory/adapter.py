"""The theory applied to a torch model: read its attention paths (spec T§1-T§3) and give the solver its path
features (issue 51).

The theory's class of networks (T§1-T§2): every attention matrix is a function of the raw input alone, the
values are linear maps (no bias, no non-linearity), the heads of a layer are summed, there is no residual
stream, normalisation or MLP between the attention layers, and a token readout and a linear map give one scalar
output.  Such a network's output is a sum over attention paths (T§3),

    f(x) = sum_pi w_pi . xi_pi(x),    xi_pi(x) = x0^T Omega^(1,h1)(x) ... Omega^(L,hL)(x) r,

with ``w_pi`` [N0] the product of the path's value maps (readout side first) and ``x0`` [T, N0] the tokens that
the value path reads.  :class:`TheoryView` holds that factorisation of one model; :func:`adapt` builds it and
:func:`from_torch` gives the scaled path features (T§6.1) of some inputs in one call.

Two kinds of models are read:

* a model with a ``theory_view()`` method returning a :class:`TheoryView` (the extension point, as numpyro's
  ``MCMCKernel``: the book's :class:`~attention_paths.tasks.omniglot.model.InContextTransformer` declares its own);
* any other ``nn.Module`` whose forward ``torch.fx`` can trace and whose attention layers are
  ``torch.nn.MultiheadAttention``.  The traced graph is checked against every assumption of the class, and a
  model that breaks one is refused by :class:`AdapterError` naming the assumption and the module; a model that
  passes is checked once more numerically (:meth:`TheoryView.check`: its own forward against the path sum).

>>> import torch
>>> from torch import nn
>>> class Stack(nn.Module):  # two layers of two heads, queries and keys read the raw input
...     def __init__(self):
...         super().__init__()
...         self.embed = nn.Linear(4, 4, bias=False)
...         self.attn = nn.ModuleList(nn.MultiheadAttention(4, 2, bias=False, batch_first=True) for _ in range(2))
...         self.readout = nn.Linear(4, 1, bias=False)
...     def forward(self, x):  # x [B, T, 4]
...         z = self.embed(x)
...         for layer in self.attn:
...             z = layer(x, x, z, need_weights=False)[0]
...         return self.readout(z.mean(dim=1)).squeeze(-1)
>>> _ = torch.manual_seed(0)
>>> x = torch.randn(5, 3, 4)
>>> view = adapt(Stack())
>>> view.heads, view.readout
((2, 2), 'mean')
>>> from_torch(Stack(), x).shape  # [P, N0, Pi]
(5, 4, 4)
>>> bool(abs(view.path_outputs(x).sum(1) - view.outputs(x)).max() < 1e-12)  # the output is the path sum
True
"""

from __future__ import annotations

import copy
import inspect
import operator
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import torch
from torch import fx, nn

from attention_paths.theory.paths import PathFeatures, path_features, path_vectors, pruned_coefficients

__all__ = ["AdapterError", "TheoryView", "adapt", "from_torch"]


class AdapterError(ValueError):
    """A model outside the theory's class (T§1-T§2): the message names the broken assumption and the module."""


@dataclass(frozen=True)
class TheoryView:
    """A model as the theory sees it: its attention paths and the value weights along them.

    Parameters
    ----------
    heads : ``(H_1, ..., H_L)``, heads per attention layer
    modules : the name of each attention layer's module (for messages), [L]
    readout : the token readout: ``"mean"``, ``"sum"`` or a token index (``-1``: the last token)
    trace : ``trace(inputs) -> (x0 [B, T, N0], [Omega_l [B, H_l, T, T]], output [B])``, all float64 tensors:
        the tokens the value path reads, every layer's attention (``Omega[b, h, s, t]``, softmax over the key
        ``s``: each column sums to one, the package's convention) and the model's own output
    value_weights : [Pi, N1] float64, the path weights up to the input map, ``a^T V^(L,hL) ... V^(1,h1)`` with
        the head-sum scales (paths first layer slowest); the theory's ``V0`` is the input map
    input_map : [N1, N0] float64, the linear map from the tokens ``x0`` to the first layer's values (``V0``);
        ``path_weights = value_weights @ input_map`` gives ``f(x) = sum_pi w_pi . xi_pi(x)``
    value_widths : per layer, the value width of each head (checked equal within a layer)
    value_norms : per layer [H_l], the Frobenius norm of each head's value map (the value-norm pruning baseline)
    prune : ``prune(pruned) -> nn.Module``, a copy of the model with heads ``[(layer, head)]`` (0-based) removed
    rescale : removing heads rescales a layer's head sum by ``sqrt(H / kept)`` (the book's networks, T§14.3);
        ``False``: a removed head's output is zeroed and nothing else changes (``nn.MultiheadAttention``)
    """

    heads: tuple[int, ...]
    modules: tuple[str, ...]
    readout: Any
    trace: Callable = field(repr=False)
    value_weights: torch.Tensor = field(repr=False)
    input_map: torch.Tensor = field(repr=False)
    value_widths: tuple = field(repr=False)
    value_norms: tuple = field(repr=False)
    prune: Callable = field(repr=False)
    rescale: bool = False

    def __post_init__(self):
        heads = tuple(int(h) for h in self.heads)
        if not heads or any(h < 1 for h in heads) or len(self.modules) != len(heads):
            raise AdapterError(f"a theory view needs one or more layers of heads, one module name each; got {heads}")
        for layer, (name, widths) in enumerate(zip(self.modules, self.value_widths, strict=True)):
            if len(widths) != heads[layer] or len(set(int(w) for w in widths)) != 1:
                raise AdapterError(
                    f"heads of unequal value width in attention layer {layer + 1} (module '{name}'): widths "
                    f"{list(widths)}; the theory sums heads whose values map to one common width (T§2)"
                )
        n_paths = int(np.prod(heads))
        w, m = self.value_weights, self.input_map
        if w.ndim != 2 or w.shape[0] != n_paths or m.ndim != 2 or m.shape[0] != w.shape[1]:
            raise AdapterError(
                f"value weights [{n_paths}, N1] and an input map [N1, N0] needed, got {tuple(w.shape)} and "
                f"{tuple(m.shape)}"
            )
        object.__setattr__(self, "heads", heads)

    @property
    def path_weights(self) -> torch.Tensor:
        """``w_pi`` [Pi, N0] with ``f(x) = sum_pi w_pi . xi_pi(x)`` (T§3)."""
        return self.value_weights @ self.input_map

    @property
    def n_paths(self) -> int:
        return int(np.prod(self.heads))

    def readout_vector(self, T: int) -> torch.Tensor:
        """The token readout ``r`` [T] (T§2.4)."""
        if self.readout == "mean":
            return torch.full((T,), 1.0 / T, dtype=torch.float64)
        if self.readout == "sum":
            return torch.ones(T, dtype=torch.float64)
        r = torch.zeros(T, dtype=torch.float64)
        r[int(self.readout)] = 1.0
        return r

    def _batches(self, inputs, batch: int):
        n = _length(inputs)
        if n == 0:
            raise ValueError("the inputs are empty: need at least one example")
        for i in range(0, n, batch):
            yield _slice(inputs, slice(i, i + batch))

    def _path_inputs(self, inputs):
        """``(xi [B, Pi, N0], output [B])`` of one batch: ``xi_pi = x0^T omega^pi`` (T§3.3)."""
        x0, omegas, out = self.trace(inputs)
        if [tuple(o.shape[1:2]) for o in omegas] != [(h,) for h in self.heads]:
            raise AdapterError(f"the model's attention has {[o.shape[1] for o in omegas]} heads, not {self.heads}")
        omega = path_vectors(omegas, self.readout_vector(x0.shape[1]))  # [B, Pi, T]
        return torch.einsum("pit,pat->pai", x0.transpose(1, 2), omega), out  # as paths.path_inputs

    @torch.no_grad()
    def features(self, inputs, sigma0_2: float = 1.0, batch: int = 256) -> PathFeatures:
        """Scaled path features ``Xi`` [P, N0, Pi] of ``inputs`` (T§6.1), with the heads per layer."""
        parts = [path_features(self._path_inputs(b)[0], sigma0_2) for b in self._batches(inputs, batch)]
        return PathFeatures(np.concatenate(parts), self.heads)

    @torch.no_grad()
    def path_outputs(self, inputs, batch: int = 256) -> np.ndarray:
        """Each path's contribution ``w_pi . xi_pi(x)`` to the output, [P, Pi]; their sum is the output."""
        out = [
            torch.einsum("pi,bpi->bp", self.path_weights, self._path_inputs(b)[0]) for b in self._batches(inputs, batch)
        ]
        return torch.cat(out).numpy()

    @torch.no_grad()
    def outputs(self, inputs, batch: int = 256) -> np.ndarray:
        """The model's own outputs [P] (float64)."""
        return torch.cat([self.trace(b)[2] for b in self._batches(inputs, batch)]).numpy()

    def check(self, inputs, rtol: float = 1e-6) -> float:
        """The largest difference between the model's output and its path sum on ``inputs``, relative to the
        largest output; above ``rtol`` the model is not of the theory's class (:class:`AdapterError`)."""
        out, F = self.outputs(inputs), self.path_outputs(inputs)
        err = float(np.abs(F.sum(1) - out).max() / max(1e-300, float(np.abs(out).max())))
        if not err <= rtol:
            raise AdapterError(
                f"the model's output is not the sum over its attention paths (largest relative difference {err:.2e} "
                f"> {rtol:g}): it breaks an assumption of the theory's class (T§1-T§2) that the graph did not show"
            )
        return err

    def gd_order_parameter(self) -> np.ndarray:
        """Gram matrix of the trained value weights along the paths, ``w_pi . w_pi'`` [Pi, Pi] without the input
        map (the theory's ``V0``) and without the head-sum scales ``1/sqrt(H_l)`` (spec §B.10-3; only its
        pattern is comparable with the theory's ``U``, spec OP-T7)."""
        w = self.value_weights * (float(np.sqrt(np.prod(self.heads))) if self.rescale else 1.0)
        return (w @ w.T).numpy()

    def coefficients(self, pruned=()) -> np.ndarray:
        """Path coefficients [Pi] of the model with heads ``pruned`` ([(layer, head)], 0-based) removed: its
        output is ``path_outputs @ coefficients`` (T§14.3,
        :func:`~attention_paths.theory.paths.pruned_coefficients`)."""
        return pruned_coefficients(self.heads, pruned, "rescaled" if self.rescale else "mask")


# ------------------------------------------------------------------------------------------------ inputs
def _length(inputs) -> int:
    if isinstance(inputs, (tuple, list)):
        return len(inputs[0])
    return len(getattr(inputs, "images", inputs))


def _slice(inputs, sl):
    if isinstance(inputs, (tuple, list)):
        return type(inputs)(part[sl] for part in inputs)
    if hasattr(inputs, "subset"):
        return inputs.subset(np.arange(len(inputs))[sl])
    return inputs[sl]


# ------------------------------------------------------------------------------------------------ the API
def adapt(model: nn.Module) -> TheoryView:
    """The :class:`TheoryView` of ``model``: its own ``theory_view()`` where it has one, else read from its traced
    graph (``torch.nn.MultiheadAttention`` layers).  Raises :class:`AdapterError` naming the broken assumption and
    the module for a model outside the theory's class."""
    if not isinstance(model, nn.Module):
        raise AdapterError(f"expected a torch.nn.Module, got {type(model).__name__}")
    if callable(getattr(model, "theory_view", None)):
        return model.theory_view()
    return _traced_view(model)


def from_torch(
    model: nn.Module, inputs, *, sigma0_2: float = 1.0, batch: int = 256, check: bool = True
) -> PathFeatures:
    """Path features [P, N0, Pi] (T§6.1) of ``inputs`` for a torch model of the theory's class (T§1-T§2).

    Parameters
    ----------
    model : a multi-head attention network whose attention reads the raw input and whose values are linear
        (:func:`adapt`)
    inputs : what the model's forward takes, batched along the first axis: a tensor [P, T, N0] for a traced
        model (``batch_first``), or the model's own inputs where it declares ``theory_view()``
    sigma0_2 : prior variance of the input map ``V0`` (T§6.1)
    check : verify first that the model's output is its path sum (:meth:`TheoryView.check`)

    Returns
    -------
    :class:`~attention_paths.theory.paths.PathFeatures` (float64) [P, N0, Pi] with the heads per layer: what
    :class:`~attention_paths.theory.kernels.PathKernel` and :func:`~attention_paths.theory.predictor.predict` take.
    """
    view = adapt(model)
    if check:
        view.check(_slice(inputs, slice(0, batch)))
    return view.features(inputs, sigma0_2, batch)


# ------------------------------------------------------------------------------------------------ tracing
_NORMS = (nn.LayerNorm, nn.GroupNorm, nn.BatchNorm1d, nn.BatchNorm2d, nn.InstanceNorm1d, nn.RMSNorm)
_IDENTITIES = (nn.Identity, nn.Dropout)
_ADDS = {operator.add, torch.add, "add", operator.iadd}
_SCALES = {operator.mul, operator.truediv, torch.mul, "mul", "div", operator.imul}
_SHAPES = {"squeeze", "flatten", "contiguous", "reshape", "view"}
_MHA_ARGS = list(inspect.signature(nn.MultiheadAttention.forward).parameters)[1:]


def _traced_view(model: nn.Module) -> TheoryView:
    try:
        gm = fx.symbolic_trace(model)
    except Exception as err:  # fx raises many types for untraceable code
        raise AdapterError(
            f"cannot trace {type(model).__name__}.forward with torch.fx ({type(err).__name__}: {err}); give the "
            "model a theory_view() method returning an attention_paths TheoryView (the extension point)"
        ) from None
    graph = _Graph(gm)
    layers = graph.attention_layers()
    chains = [graph.value_chain(i) for i in range(len(layers))]
    token, readout_maps = graph.readout()
    mods = [gm.get_submodule(n.target) for n in layers]
    V = [_value_maps(m, n.target) for m, n in zip(mods, layers, strict=True)]
    w = _value_weights(V, chains, readout_maps)
    x0_node = graph.x0
    model64 = copy.deepcopy(model).double().eval()
    gm64 = fx.GraphModule(model64, gm.graph)
    names = tuple(n.target for n in layers)
    return TheoryView(
        heads=tuple(m.num_heads for m in mods),
        modules=names,
        readout=token,
        trace=lambda inputs: _Capture(gm64, names, x0_node, mods[0].batch_first).trace(inputs),
        value_weights=w,
        input_map=_product(chains[0], V[0][0].shape[1]),
        value_widths=tuple((m.head_dim,) * m.num_heads for m in mods),
        value_norms=tuple(np.array([float(torch.linalg.matrix_norm(v)) for v in Vl]) for Vl in V),
        prune=lambda pruned: _prune_mha(model, names, pruned),
        rescale=False,
    )


def _mha_arguments(node: fx.Node) -> dict:
    bound = dict(zip(_MHA_ARGS, node.args, strict=False))
    bound.update(node.kwargs)
    return bound


class _Graph:
    """The traced graph of a model, read against the theory's assumptions (each check raises AdapterError)."""

    def __init__(self, gm: fx.GraphModule):
        self.gm = gm
        self.nodes = list(gm.graph.nodes)
        self.mha = [
            n for n in self.nodes if n.op == "call_module" and isinstance(self._module(n), nn.MultiheadAttention)
        ]
        self.deps = {}  # node -> the attention nodes upstream of it
        for n in self.nodes:
            self.deps[n] = set().union(*(self.deps[i] | ({i} if i in self.mha else set()) for i in n.all_input_nodes))
        self.x0 = None

    def _module(self, node):
        return self.gm.get_submodule(node.target) if node.op == "call_module" else None

    def _what(self, node) -> str:
        if node.op == "call_module":
            return f"module '{node.target}' ({type(self._module(node)).__name__})"
        name = getattr(node.target, "__name__", node.target)
        return f"operation '{name}' (node {node.name})"

    def attention_layers(self) -> list:
        if not self.mha:
            raise AdapterError(
                "no torch.nn.MultiheadAttention layer in the traced model: the adapter reads attention from "
                "those, or from the model's own theory_view() method"
            )
        for n in self.mha:
            mod, args = self._module(n), _mha_arguments(n)
            for arg in ("query", "key", "attn_mask", "key_padding_mask"):
                a = args.get(arg)
                up = (self.deps[a] | ({a} & set(self.mha))) if isinstance(a, fx.Node) else set()
                if up:
                    raise AdapterError(
                        f"the attention of module '{n.target}' reads the output of an earlier attention layer "
                        f"('{sorted(u.target for u in up)[0]}') through its {arg}: the theory's attention is a "
                        "function of the raw input alone (T§2.2)"
                    )
            if mod.in_proj_bias is not None or mod.out_proj.bias is not None or mod.bias_v is not None:
                raise AdapterError(
                    f"affine, not linear, values: module '{n.target}' (MultiheadAttention) has biases (bias=True or "
                    "add_bias_kv=True); the theory's values are linear maps (T§2.3): build it with bias=False"
                )
            if mod.add_zero_attn:
                raise AdapterError(
                    f"module '{n.target}' adds a zero key (add_zero_attn=True), which the theory has not"
                )
        return self.mha

    def _walk(self, node, stop, where: str) -> tuple[list, fx.Node]:
        """Linear per-token maps from ``stop`` (a node, or None: the first non-linear-map node, x0) up to ``node``,
        readout side first, as matrices (None for identities); refuses anything else on the value path."""
        maps = []
        while node is not stop:
            if node.op == "call_function" and node.target is operator.getitem:
                if node.args[0] in self.mha and node.args[1] == 0:
                    if stop is None or node.args[0] is not stop:
                        src = node.args[0].target
                        raise AdapterError(f"{where} reads attention module '{src}', which is not the layer before it")
                    return maps, node.args[0]
                break
            m = self._one_map(node, where, values=True)
            if m is None:
                if stop is None and not self.deps[node] and node.target not in _ADDS:
                    return maps, node  # x0: a function of the raw input, where the value path starts
                raise AdapterError(self._refusal(node, where))
            maps.extend(m)
            node = node.args[0]
        if stop is None:
            return maps, node
        raise AdapterError(self._refusal(node, where))

    def _refusal(self, node, where: str) -> str:
        mod = self._module(node)
        if node.op == "placeholder":
            return (
                f"{where} reads the model's input, not the previous attention layer's output: the theory's layers "
                "are stacked, each layer's values reading the layer before (T§2.3)"
            )
        if node.target in _ADDS or node.target == "__add__":
            return (
                f"a residual stream: {self._what(node)} adds two branches on {where}; the theory's network has no "
                "residual connection between attention layers (T§2.3)"
            )
        if isinstance(mod, _NORMS) or "norm" in str(getattr(node.target, "__name__", node.target)):
            return f"normalisation on {where}: {self._what(node)}; the theory's network has none (T§2.3)"
        inner = node.args[0] if node.args and isinstance(node.args[0], fx.Node) else None
        if inner is not None and isinstance(self._module(inner), nn.Linear):
            return (
                f"an MLP on {where}: {self._what(inner)} then {self._what(node)}; the theory's network has no MLP "
                "between attention layers, its values are linear (T§2.3)"
            )
        return f"non-linear values: {self._what(node)} on {where}; the theory's values are linear maps (T§2.3)"

    def value_chain(self, i: int) -> list:
        """The linear maps from the previous layer's output (or from x0) to attention layer ``i``'s value."""
        node = _mha_arguments(self.mha[i])["value"]
        where = f"the value path into '{self.mha[i].target}'"
        if i == 0:
            if self.deps[node] or node in self.mha:
                raise AdapterError(f"{where} reads another attention layer's output")
            maps, self.x0 = self._walk(node, None, where)
            return maps
        maps, _ = self._walk(node, self.mha[i - 1], where)
        return maps

    def readout(self) -> tuple[Any, list]:
        """The token readout (``"mean"``, ``"sum"`` or a token index) and the linear maps after the last layer."""
        out = next(n for n in self.nodes if n.op == "output")
        node, maps, token = out.args[0], [], None
        where = f"the readout after '{self.mha[-1].target}'"
        while not (node.op == "call_function" and node.target is operator.getitem and node.args[0] in self.mha):
            if not isinstance(node, fx.Node):
                raise AdapterError(f"the model's output is not a tensor computed from its attention: {node!r}")
            tok = self._token_readout(node)
            if tok is not None:
                if token is not None:
                    raise AdapterError(f"{where} reduces the tokens twice ({self._what(node)})")
                token = tok
            elif not (node.op == "call_method" and node.target in _SHAPES):
                m = self._one_map(node, where)
                if m is None:
                    raise AdapterError(self._refusal(node, where))
                maps.extend(m)
            node = node.args[0]
        if node.args[0] is not self.mha[-1]:
            raise AdapterError(f"{where} reads module '{node.args[0].target}', not the last attention layer")
        if token is None:
            raise AdapterError(f"{where} has no token readout: take the mean over tokens or one token (T§2.4)")
        return token, maps

    def _one_map(self, node, where: str, values: bool = False) -> list | None:
        """``node`` as a linear per-token map: ``[W]`` (a bias-free ``nn.Linear``), ``[c]`` (a scalar scale), ``[]``
        (an identity), or ``None`` when it is none of them.  A bias is refused by name, on the value path
        (``values``) or the readout."""
        mod = self._module(node)
        if isinstance(mod, nn.Linear):
            if mod.bias is None:
                return [mod.weight]
            if values:
                raise AdapterError(f"affine, not linear, values: {self._what(node)} on {where} has a bias (T§2.3)")
            raise AdapterError(f"an affine readout: {self._what(node)} has a bias; the theory's readout is linear")
        if isinstance(mod, _IDENTITIES):
            return []
        c = _scale(node)
        return None if c is None else [c]

    def _token_readout(self, node):
        batch_first = self._module(self.mha[-1]).batch_first
        axis = 1 if batch_first else 0
        if node.target in ("mean", "sum", torch.mean, torch.sum):
            dim = node.kwargs.get("dim", node.args[1] if len(node.args) > 1 else None)
            if dim in (axis, axis - 3):
                return "mean" if node.target in ("mean", torch.mean) else "sum"
            raise AdapterError(f"{self._what(node)} reduces dimension {dim}, not the tokens (dimension {axis})")
        if node.op == "call_function" and node.target is operator.getitem:
            idx = node.args[1]
            if batch_first and isinstance(idx, tuple) and len(idx) == 2 and idx[0] == slice(None):
                idx = idx[1]
            if isinstance(idx, int):
                return idx
        return None


def _scale(node) -> float | None:
    """The factor of a multiplication or division by a Python number, else None."""
    if node.op not in ("call_function", "call_method") or node.target not in _SCALES or len(node.args) != 2:
        return None
    c = node.args[1]
    if not isinstance(c, (int, float)) or isinstance(c, bool):
        return None
    return 1.0 / c if node.target in (operator.truediv, "div") else float(c)


def _value_maps(mod: nn.MultiheadAttention, name: str) -> list[torch.Tensor]:
    """Each head's value map ``O_h W_v,h`` [E, vdim] of a MultiheadAttention (float64)."""
    E, H = mod.embed_dim, mod.num_heads
    Wv = mod.in_proj_weight[2 * E :] if mod._qkv_same_embed_dim else mod.v_proj_weight
    Wv, O = Wv.detach().double(), mod.out_proj.weight.detach().double()
    hd = E // H
    return [O[:, h * hd : (h + 1) * hd] @ Wv[h * hd : (h + 1) * hd] for h in range(H)]


def _product(maps, dim: int) -> torch.Tensor:
    """The matrix of per-token linear maps listed output side first (matrices [out, in] or numbers):
    ``m_1 m_2 ...``; the identity of size ``dim`` (times the numbers) when there is no matrix."""
    M, scale = None, 1.0
    for m in maps:
        if isinstance(m, float):
            scale *= m
        else:
            m = m.detach().double()
            M = m if M is None else M @ m
    return scale * (torch.eye(dim, dtype=torch.float64) if M is None else M)


def _value_weights(V, chains, readout_maps) -> torch.Tensor:
    """``R V^(L,hL) M_L ... M_2 V^(1,h1)`` [Pi, N1]: the path weights up to the input map ``M_1``, paths first
    layer slowest (the rows of each stack are the path suffixes, the earlier layer's head slower)."""
    W = _product(readout_maps, V[-1][0].shape[0])
    if W.shape[0] != 1:
        raise AdapterError(f"the theory's network has one scalar output; this model's readout gives {W.shape[0]}")
    for layer in reversed(range(len(V))):
        M = [
            torch.eye(v.shape[1], dtype=torch.float64) if layer == 0 else _product(chains[layer], v.shape[1])
            for v in V[layer]
        ]
        W = torch.stack([W @ v @ m for v, m in zip(V[layer], M, strict=True)])  # [H, rows, in]
        W = W.reshape(-1, W.shape[-1])
    return W


class _Capture(fx.Interpreter):
    """Runs a traced model in float64, recording ``x0`` and every attention layer's unaveraged weights."""

    def __init__(self, gm, names, x0_node, batch_first: bool):
        super().__init__(gm)
        self.names, self.x0_node, self.batch_first = set(names), x0_node, batch_first
        self.x0, self.omegas = None, []

    def trace(self, inputs):
        x = torch.as_tensor(np.asarray(inputs) if not isinstance(inputs, torch.Tensor) else inputs)
        with torch.no_grad():
            out = self.run(x.double())
        if out.ndim == 2 and out.shape[1] == 1:
            out = out[:, 0]
        x0 = self.x0 if self.batch_first else self.x0.transpose(0, 1)
        return x0, self.omegas, out

    def run_node(self, n):
        result = super().run_node(n)
        if n is self.x0_node:
            self.x0 = result
        return result

    def call_module(self, target, args, kwargs):
        if target not in self.names:
            return super().call_module(target, args, kwargs)
        mod = self.fetch_attr(target)
        bound = dict(zip(_MHA_ARGS, args, strict=False), **kwargs)
        bound.update(need_weights=True, average_attn_weights=False)
        out, weights = mod(**bound)
        self.omegas.append(weights.transpose(-1, -2))  # [B, H, query, key] -> Omega[b, h, key s, query t]
        return out, weights


def _prune_mha(model: nn.Module, names, pruned) -> nn.Module:
    """A copy of ``model`` whose heads ``pruned`` ([(layer, head)], 0-based) output zero: their columns of the
    attention layer's output map are zeroed."""
    pruned_model = copy.deepcopy(model)
    for layer, head in pruned:
        mod = pruned_model.get_submodule(names[layer])
        hd = mod.head_dim
        with torch.no_grad():
            mod.out_proj.weight[:, head * hd : (head + 1) * hd] = 0.0
    return pruned_model

"""Issue 51 §1: the adapter from a torch model to the theory (``attention_paths.adapt`` / ``from_torch``).

A model of the theory's class is read into its path factorisation, which reproduces the model's own output
and the theory network's path inputs; every model outside the class is refused by an error naming the broken
assumption and the module that broke it."""

import itertools

import numpy as np
import pytest
import torch
from torch import nn

import attention_paths as ap
from attention_paths.theory.adapter import AdapterError, TheoryView
from attention_paths.theory.paths import pruned_coefficients


class Stack(nn.Module):
    """A third-party-style stack: queries and keys read the raw input, values the layer before."""

    def __init__(self, n0=6, heads=(2, 3), batch_first=True, readout="mean", between=None, kdim=None, seed=0):
        super().__init__()
        torch.manual_seed(seed)
        self.batch_first, self.readout_kind, self.between = batch_first, readout, between
        self.embed = nn.Linear(n0, n0, bias=False)
        self.attn = nn.ModuleList(
            nn.MultiheadAttention(n0, h, bias=False, batch_first=batch_first, kdim=kdim, vdim=None) for h in heads
        )
        self.mix = nn.Linear(n0, n0, bias=False)
        self.head = nn.Linear(n0, 1, bias=False)

    def forward(self, x):
        xs = x if self.batch_first else x.transpose(0, 1)
        z = self.embed(xs)
        for i, layer in enumerate(self.attn):
            if i and self.between == "linear":
                z = self.mix(z) * 0.5
            z = layer(xs, xs, z, need_weights=False)[0]
        axis = 1 if self.batch_first else 0
        if self.readout_kind == "mean":
            r = z.mean(dim=axis)
        elif self.readout_kind == "last":
            r = z[:, -1] if self.batch_first else z[-1]
        else:
            r = z.sum(axis)
        return self.head(r).squeeze(-1)


def _x(B=7, T=5, n0=6, seed=1):
    return torch.randn(B, T, n0, generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize(
    "kw",
    [
        {},
        {"batch_first": False},
        {"readout": "last"},
        {"readout": "sum"},
        {"between": "linear"},
        {"heads": (3,)},
        {"heads": (2, 1, 2)},
    ],
)
def test_the_path_sum_is_the_models_output(kw):
    model = Stack(**kw).eval()
    x = _x()
    view = ap.adapt(model)
    F = view.path_outputs(x)
    assert F.shape == (7, view.n_paths) and view.n_paths == int(np.prod(kw.get("heads", (2, 3))))
    with torch.no_grad():
        own = model.double()(x.double()).numpy()
    np.testing.assert_allclose(F.sum(1), own, rtol=1e-12, atol=1e-12)
    assert view.check(x) < 1e-12


def test_features_are_those_of_the_theory_network_with_the_same_attention():
    """The adapter's features equal path_features(path_inputs(...)) of the theory's own pipeline on the same
    attention matrices (captured from nn.MultiheadAttention, softmax over keys: columns sum to one)."""
    model = Stack().eval()
    x = _x()
    view = ap.adapt(model)
    x0, omegas, _ = view.trace(x)
    for om in omegas:  # the package's convention: Omega[b, h, key, query], a column sums to one
        np.testing.assert_allclose(om.sum(-2).numpy(), 1.0, rtol=1e-12)

    class Captured(ap.AttentionLayer):
        def __init__(self, om):
            self.om, self.n_heads, self.n0 = om, om.shape[1], 6

        def attention(self, _):
            return self.om

    r = view.readout_vector(5)
    expected = ap.path_features(ap.path_inputs(x0.transpose(1, 2), [Captured(o) for o in omegas], r))
    got = ap.from_torch(model, x)
    assert got.heads == (2, 3) and got.shape == (7, 6, 6)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(expected))


def test_the_gd_order_parameter_is_the_gram_of_the_explicit_path_weights():
    model = Stack(heads=(2, 2)).eval()
    view = ap.adapt(model)
    E = model.embed.weight.detach().double()
    a = model.head.weight.detach().double()
    V = []
    for mha in model.attn:
        Wv, O = mha.in_proj_weight[12:].detach().double(), mha.out_proj.weight.detach().double()
        V.append([O[:, 3 * h : 3 * h + 3] @ Wv[3 * h : 3 * h + 3] for h in range(2)])
    w = torch.stack([a[0] @ V[1][h2] @ V[0][h1] @ E for h1 in range(2) for h2 in range(2)])
    np.testing.assert_allclose(view.path_weights.numpy(), w.numpy(), rtol=1e-12, atol=1e-14)
    u = torch.stack([a[0] @ V[1][h2] @ V[0][h1] for h1 in range(2) for h2 in range(2)])  # without the input map
    np.testing.assert_allclose(view.gd_order_parameter(), (u @ u.T).numpy(), rtol=1e-12)


def test_a_pruned_models_forward_is_the_path_sum_with_its_coefficients():
    model = Stack(heads=(3, 3)).eval()
    x = _x()
    view = ap.adapt(model)
    F = view.path_outputs(x)
    pruned = view.prune([(0, 1), (1, 2)])
    with torch.no_grad():
        own = pruned.double()(x.double()).numpy()
    np.testing.assert_allclose(F @ view.coefficients([(0, 1), (1, 2)]), own, rtol=1e-10, atol=1e-12)
    assert set(pruned.state_dict()) == set(model.state_dict())  # the same architecture, a plain state dict
    with pytest.raises(ValueError, match="all heads of layer 1"):
        view.coefficients([(0, 0), (0, 1), (0, 2)])


class Residual(Stack):
    def forward(self, x):
        z = self.embed(x)
        for layer in self.attn:
            z = z + layer(x, x, z, need_weights=False)[0]
        return self.head(z.mean(1)).squeeze(-1)


class Deep(Stack):  # the second layer's queries read the first layer's output
    def forward(self, x):
        z = self.embed(x)
        z = self.attn[0](x, x, z, need_weights=False)[0]
        z = self.attn[1](z, z, z, need_weights=False)[0]
        return self.head(z.mean(1)).squeeze(-1)


class WithMLP(Stack):
    def __init__(self):
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(6, 6, bias=False), nn.GELU())

    def forward(self, x):
        z = self.embed(x)
        z = self.attn[0](x, x, z, need_weights=False)[0]
        z = self.mlp(z)
        z = self.attn[1](x, x, z, need_weights=False)[0]
        return self.head(z.mean(1)).squeeze(-1)


class Nonlinear(Stack):
    def __init__(self):
        super().__init__()
        self.act = nn.Tanh()

    def forward(self, x):
        z = self.embed(x)
        z = self.act(self.attn[0](x, x, z, need_weights=False)[0])
        z = self.attn[1](x, x, z, need_weights=False)[0]
        return self.head(z.mean(1)).squeeze(-1)


class Normalised(Stack):
    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(6)

    def forward(self, x):
        z = self.embed(x)
        z = self.norm(self.attn[0](x, x, z, need_weights=False)[0])
        z = self.attn[1](x, x, z, need_weights=False)[0]
        return self.head(z.mean(1)).squeeze(-1)


class Biased(Stack):
    def __init__(self):
        super().__init__()
        self.attn[1] = nn.MultiheadAttention(6, 3, bias=True, batch_first=True)


class Unstacked(Stack):  # every layer's values read the input
    def forward(self, x):
        z = sum(layer(x, x, self.embed(x), need_weights=False)[0] for layer in self.attn)
        return self.head(z.mean(1)).squeeze(-1)


class Branchy(Stack):  # data-dependent control flow: not traceable
    def forward(self, x):
        if x.sum() > 0:
            return self.head(x.mean(1)).squeeze(-1)
        return -self.head(x.mean(1)).squeeze(-1)


@pytest.mark.parametrize(
    "cls, assumption, module",
    [
        (Residual, "a residual stream", "add"),
        (Deep, "reads the output of an earlier attention layer", "attn.1"),
        (WithMLP, "an MLP", "mlp.1"),
        (Nonlinear, "non-linear values", "act"),
        (Normalised, "normalisation", "norm"),
        (Biased, "affine, not linear, values", "attn.1"),
        (Unstacked, "reads the model.s input", "attn.1"),
        (Branchy, "cannot trace", "Branchy"),
    ],
)
def test_a_model_outside_the_class_is_refused_by_name(cls, assumption, module):
    with pytest.raises(AdapterError, match=assumption) as err:
        ap.adapt(cls())
    assert module in str(err.value)


def test_heads_of_unequal_value_width_are_refused_by_the_view():
    view = ap.adapt(Stack(heads=(2, 2)))
    with pytest.raises(AdapterError, match=r"unequal value width in attention layer 2 \(module 'attn.1'\)"):
        TheoryView(
            heads=(2, 2),
            modules=view.modules,
            readout="mean",
            trace=view.trace,
            value_weights=view.value_weights,
            input_map=view.input_map,
            value_widths=((3, 3), (3, 4)),
            value_norms=view.value_norms,
            prune=view.prune,
        )


def test_bad_inputs_are_named():
    with pytest.raises(AdapterError, match="torch.nn.Module"):
        ap.adapt(np.eye(3))
    with pytest.raises(AdapterError, match="no torch.nn.MultiheadAttention"):
        ap.adapt(nn.Sequential(nn.Linear(3, 1, bias=False)))
    with pytest.raises(ValueError, match="empty"):
        ap.from_torch(Stack(), _x()[:0], check=False)


@pytest.mark.parametrize("heads", [(4, 4), (3, 3, 3), (2, 8)])
def test_one_rule_of_pruned_path_coefficients_serves_the_adapter_the_yours_task_and_the_book(heads):
    """``theory.paths.pruned_coefficients`` (review of issue 51: the rule had been written three times) gives, bit
    for bit, the per-layer products the three places computed: the mask, the mask times sqrt(n / kept), and the
    mask over sqrt(kept); the path ``(h_1, ..., h_L)`` is the product of its heads' weights; bad input is named."""
    rng = np.random.default_rng(sum(heads))
    pruned = [(layer, int(h)) for layer, H in enumerate(heads) for h in rng.choice(H, size=H // 2, replace=False)]
    masks = [np.ones(H) for H in heads]
    for layer, h in pruned:
        masks[layer][h] = 0.0
    rules = {
        "mask": lambda m: m,
        "rescaled": lambda m: m * np.sqrt(len(m) / m.sum()),
        "kept": lambda m: m / np.sqrt(m.sum()),
    }
    for weighting, rule in rules.items():
        c = pruned_coefficients(heads, pruned, weighting)
        for k, path in enumerate(itertools.product(*(range(H) for H in heads))):
            assert c[k] == np.prod([rule(m)[h] for m, h in zip(masks, path, strict=True)])
    with pytest.raises(ValueError, match="no head 9 in layer 0"):
        pruned_coefficients(heads, [(0, 9)])
    with pytest.raises(ValueError, match="all heads of layer 1 are pruned"):
        pruned_coefficients(heads, [(0, h) for h in range(heads[0])])
    with pytest.raises(ValueError, match="weighting must be one of"):
        pruned_coefficients(heads, [], "scaled")

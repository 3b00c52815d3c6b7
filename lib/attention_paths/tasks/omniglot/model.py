"""The in-context transformer of one-shot classification: tokens and the gradient-descent-trained network.

Spec experiments §B.3-B.6.  An episode (:mod:`.episodes`) is [support, support, query]; each
32x32 image becomes 16 tokens of 8x8 patches (192 features), LayerNorm-ed without affine parameters; a
standardised sinusoidal position table and a frozen random label embedding (rows 0/1 = in-context
label of a support image, row 2 = query) are added, giving ``x0`` of shape [48, 192].

The network (:class:`InContextTransformer`) is the theory's network family (T§2) with trained weights:
a learned input map ``W_in`` (the theory's ``V0``), two layers of 4 **summed** heads whose queries and
keys act on the bare input ``x0``, value maps on the layer input, no residual, normalisation, MLP or
bias, mean readout over tokens and a scalar output.  Its query/key weights and ``x0`` go to the theory
unchanged (:meth:`InContextTransformer.theory_layers`).
"""

from __future__ import annotations

import copy
import math

import numpy as np
import torch
from torch import nn

from attention_paths.tasks.omniglot.episodes import Episodes
from attention_paths.theory.adapter import TheoryView
from attention_paths.theory.attention import QKFormHeads

__all__ = [
    "patchify",
    "sinusoidal_positions",
    "InContextTransformer",
    "N_TOKENS",
    "PATCH_FEATURES",
    "query_attention_by_block",
]

PATCH = 8
PATCHES_PER_IMAGE = 16
PATCH_FEATURES = 3 * PATCH * PATCH  # 192
N_TOKENS = 3 * PATCHES_PER_IMAGE  # 48


def patchify(images: torch.Tensor) -> torch.Tensor:
    """[..., 3, 32, 32] -> [..., 16, 192]: 8x8 patches in raster order, features (row*8 + col)*3 + channel."""
    *lead, c, h, w = images.shape
    if (c, h, w) != (3, 32, 32):
        raise ValueError(f"images must have shape [..., 3, 32, 32], got {tuple(images.shape)}")
    x = images.reshape(*lead, 3, 4, PATCH, 4, PATCH)  # channel, patch row, row, patch col, col
    n = len(lead)
    perm = list(range(n)) + [n + 1, n + 3, n + 2, n + 4, n]  # patch row, patch col, row, col, channel
    return x.permute(*perm).reshape(*lead, PATCHES_PER_IMAGE, PATCH_FEATURES)


def sinusoidal_positions(T: int = N_TOKENS, d: int = PATCH_FEATURES) -> torch.Tensor:
    """Standardised sinusoidal table [T, d]: sin/cos(t / 10000^(2i/d)), minus its mean, over (std + 1e-6)."""
    t = torch.arange(T, dtype=torch.float64)[:, None]
    i = torch.arange(d // 2, dtype=torch.float64)[None, :]
    angle = t / 10000.0 ** (2 * i / d)
    pe = torch.zeros(T, d, dtype=torch.float64)
    pe[:, 0::2], pe[:, 1::2] = torch.sin(angle), torch.cos(angle)
    return (pe - pe.mean()) / (pe.std() + 1e-6)


class InContextTransformer(nn.Module):
    """The gradient-descent-trained network of spec §B.5 (2 layers x 4 summed heads by default).

    Parameters
    ----------
    d_model : width of the value path (512 in the paper)
    n_layers, n_heads : attention layers and summed heads per layer
    d_qk : query/key dimension G (128)
    seed : seeds the frozen label embedding and the initial weights

    Learned: ``w_in`` [d_model, 192], per layer ``q``, ``k`` [H*G, 192] and ``v`` [H*d_model, d_model],
    ``readout`` [1, d_model].  Frozen buffers: ``positions`` [48, 192], ``label_embedding`` [3, 192] and
    ``head_mask`` [L, H] (1 = active; used for pruning).
    """

    def __init__(self, d_model: int = 512, n_layers: int = 2, n_heads: int = 4, d_qk: int = 128, seed: int = 42):
        super().__init__()
        gen = torch.Generator().manual_seed(seed)
        self.d_model, self.n_layers, self.n_heads, self.d_qk = d_model, n_layers, n_heads, d_qk
        self.register_buffer("positions", sinusoidal_positions().float())
        self.register_buffer("label_embedding", torch.randn(3, PATCH_FEATURES, generator=gen))
        self.register_buffer("head_mask", torch.ones(n_layers, n_heads))
        torch.manual_seed(int(torch.randint(0, 2**31 - 1, (1,), generator=gen)))  # PyTorch default init below
        self.w_in = nn.Linear(PATCH_FEATURES, d_model, bias=False)
        self.q = nn.ModuleList(nn.Linear(PATCH_FEATURES, n_heads * d_qk, bias=False) for _ in range(n_layers))
        self.k = nn.ModuleList(nn.Linear(PATCH_FEATURES, n_heads * d_qk, bias=False) for _ in range(n_layers))
        self.v = nn.ModuleList(nn.Linear(d_model, n_heads * d_model, bias=False) for _ in range(n_layers))
        self.readout = nn.Linear(d_model, 1, bias=False)

    # ---------------------------------------------------------------- tokens
    def tokens(self, episodes: Episodes | tuple) -> torch.Tensor:
        """``x0`` [B, 48, 192] of a batch of episodes (images [B, 3, 3, 32, 32], labels [B, 3])."""
        images, labels = (episodes.images, episodes.labels) if isinstance(episodes, Episodes) else episodes
        dev, dt = self.positions.device, self.positions.dtype
        images = torch.as_tensor(np.asarray(images), dtype=dt, device=dev)
        labels = torch.as_tensor(np.asarray(labels), dtype=torch.long, device=dev)
        p = patchify(images)  # [B, 3, 16, 192]
        p = torch.nn.functional.layer_norm(p, (PATCH_FEATURES,), eps=1e-5)
        p = p + self.label_embedding[labels][:, :, None, :]
        return p.reshape(p.shape[0], N_TOKENS, PATCH_FEATURES) + self.positions

    # ---------------------------------------------------------------- forward
    def attention(self, x0: torch.Tensor, layer: int) -> torch.Tensor:
        """``Omega[b, h, s, t]`` of one layer (softmax over keys ``s``), computed from the bare input ``x0``."""
        B, T, _ = x0.shape
        q = self.q[layer](x0).reshape(B, T, self.n_heads, self.d_qk)
        k = self.k[layer](x0).reshape(B, T, self.n_heads, self.d_qk)
        scores = torch.einsum("bshg,bthg->bhst", k, q) / math.sqrt(self.d_qk)
        return torch.softmax(scores, dim=2)

    def forward(self, x0: torch.Tensor) -> torch.Tensor:
        """Scalar outputs [B] for inputs ``x0`` [B, 48, 192]."""
        z = self.w_in(x0)  # [B, T, D]
        B, T, D = z.shape
        for layer in range(self.n_layers):
            omega = self.attention(x0, layer)
            v = self.v[layer](z).reshape(B, T, self.n_heads, D)
            mask = self.head_mask[layer]
            n_active = mask.sum()
            if n_active == 0:
                raise ValueError(f"all heads of layer {layer + 1} are pruned")
            z = torch.einsum("bhst,bshd,h->btd", omega, v, mask) / torch.sqrt(n_active)
        return self.readout(z.mean(dim=1)).squeeze(-1)

    # ---------------------------------------------------------------- path-factorised forward
    def path_forward(self, x0: torch.Tensor) -> torch.Tensor:
        """The same function as :meth:`forward`, computed through the path sum (spec T§3, issue 15).

        The values are linear and the readout is the mean over tokens, so
        ``f(x) = sum_pi w_pi . xi_pi(x)`` with ``w_pi = W_in^T V^(1,h1)^T ... V^(L,hL)^T a / sqrt(H^L)``
        [Pi, 192] (built from the weights by mat-vecs whose cost does not depend on the batch) and
        ``xi_pi = x0^T Omega^(1,h1) ... Omega^(L,hL) 1/T`` (from the attention alone).  The d_model-wide
        value activations of the T tokens are never formed; what remains is the query/key projections (all
        layers in one matmul) and the softmaxes.  Same parameters, head mask and ``1/sqrt(H - removed)``
        scaling as :meth:`forward`; gradients agree with it to rounding (tests).

        x0 : [B, T, 192] -> outputs [B].
        """
        B, T, _ = x0.shape
        L = self.n_layers
        w = self._path_weights(lambda t: t) @ self.w_in.weight  # [Pi, 192], differentiable
        a = torch.softmax(self._scores(x0), dim=-1).unbind(dim=2)  # a[l][b, t, h, s] = Omega^(l, h)[b, s, t]
        # u[b, path suffix, s]: the token weights Omega^(l) ... Omega^(L) 1/T, built from the last layer back
        u = a[L - 1].mean(dim=1)  # [B, H, s]: sum_t Omega[s, t] / T
        for layer in reversed(range(L - 1)):  # u_new[b, h, p, r] = sum_s Omega[b, h, r, s] u[b, p, s]
            u = torch.einsum("bshr,bps->bhpr", a[layer], u).reshape(B, -1, T)
        c = x0 @ w.T  # [B, T, Pi]
        return torch.einsum("bpt,btp->b", u, c)

    def _scores(self, x0: torch.Tensor) -> torch.Tensor:
        """Attention scores of every head of every layer, ``S[b, t, l, h, s] = (Q x_t) . (K x_s) / sqrt(G)``
        [B, T, L, H, T], in whichever of two exact forms costs fewer multiplications: through the bilinear
        forms ``A = Q^T K`` [192, 192] (one matmul and one batched matmul; about ``T F (F + T)`` per head, the
        cheaper for G = 128) or through the query and key projections (about ``T G (2F + T)`` per head, the
        cheaper for G below about 107, e.g. the 2 x 8 network's G = 64)."""
        B, T, F = x0.shape
        L, H, G = self.n_layers, self.n_heads, self.d_qk
        if G * (2 * F + T) < F * (F + T):
            q = (x0 @ torch.cat([self.q[layer].weight for layer in range(L)]).T).reshape(B, T, L, H, G)
            k = (x0 @ torch.cat([self.k[layer].weight for layer in range(L)]).T).reshape(B, T, L, H, G)
            return torch.einsum("btlhg,bslhg->btlhs", q, k) * (1.0 / math.sqrt(G))
        A = [
            torch.einsum(
                "hgi,hgj->ihj", self.q[layer].weight.reshape(H, G, F), self.k[layer].weight.reshape(H, G, F)
            ).reshape(F, H * F)
            for layer in range(L)
        ]
        Y = (x0 @ torch.cat(A, dim=1)).reshape(B, T * L * H, F)
        return (Y @ x0.transpose(1, 2)).reshape(B, T, L, H, T) * (1.0 / math.sqrt(G))

    # ---------------------------------------------------------------- pruning and theory
    def set_pruned(self, heads=()) -> "InContextTransformer":
        """Remove heads ``[(layer, head), ...]`` (0-based): their output is zeroed and the layer's head sum is
        rescaled by ``1/sqrt(H - removed)`` (spec T§14.3).  An empty list restores all heads."""
        self.head_mask.fill_(1.0)
        for layer, head in heads:
            if not (0 <= layer < self.n_layers and 0 <= head < self.n_heads):
                raise ValueError(f"no head {head} in layer {layer} (layers {self.n_layers}, heads {self.n_heads})")
            self.head_mask[layer, head] = 0.0
        return self

    def theory_layers(self) -> list[QKFormHeads]:
        """The trained query/key weights as float64 :class:`QKFormHeads`, one per layer (Q, K [H, G, 192])."""
        out = []
        for layer in range(self.n_layers):
            Q = self.q[layer].weight.detach().double().cpu().reshape(self.n_heads, self.d_qk, PATCH_FEATURES)
            K = self.k[layer].weight.detach().double().cpu().reshape(self.n_heads, self.d_qk, PATCH_FEATURES)
            out.append(QKFormHeads(Q, K))
        return out

    def theory_view(self) -> TheoryView:
        """The network as the theory sees it (:func:`attention_paths.adapt`, the adapter's extension point): a
        float64 copy's tokens, attention (:meth:`theory_layers`, from the bare input ``x0``), mean readout, value
        weights (:meth:`path_weights`, head mask and head-sum scales included) and input map ``W_in``.  Its inputs
        are episodes (an :class:`~.episodes.Episodes` or ``(images, labels)``); pruning a head rescales its
        layer's sum (:meth:`set_pruned`)."""
        net = copy.deepcopy(self).double().eval()
        layers = net.theory_layers()
        D, H = self.d_model, self.n_heads

        def trace(inputs):
            with torch.no_grad():
                x0 = net.tokens(inputs)  # float64 [B, 48, 192]
                return x0, [layer.attention(x0.transpose(1, 2)) for layer in layers], net(x0)

        V = [net.v[layer].weight.detach().reshape(H, D, D) for layer in range(self.n_layers)]
        return TheoryView(
            heads=(H,) * self.n_layers,
            modules=tuple(f"v.{layer}" for layer in range(self.n_layers)),
            readout="mean",
            trace=trace,
            value_weights=net.path_weights(),
            input_map=net.w_in.weight.detach(),
            value_widths=((D,) * H,) * self.n_layers,
            value_norms=tuple(torch.linalg.matrix_norm(v).numpy() for v in V),
            prune=lambda pruned: copy.deepcopy(self).set_pruned(pruned),
            rescale=True,
        )

    def path_weights(self) -> torch.Tensor:
        """Effective path weights ``w^pi = a^T V^(L,hL) ... V^(1,h1) / sqrt(H^L)`` [Pi, d_model] (paths in the
        package's flattening order); ``f(x) = sum_pi w^pi . W_in xi^pi(x)`` with ``xi^pi = x0^T omega^pi``."""
        return self._path_weights(lambda t: t.detach().double())

    def _path_weights(self, cast) -> torch.Tensor:
        """``a^T V^(L,hL) ... V^(1,h1)`` times the head-sum scales, [Pi, d_model], readout side first, with
        every weight passed through ``cast`` (detached float64 for :meth:`path_weights`, as is for training)."""
        D, H = self.d_model, self.n_heads
        W = cast(self.readout.weight)  # [1, D]
        for layer in reversed(range(self.n_layers)):
            mask = cast(self.head_mask[layer])
            n_active = mask.sum()
            if n_active == 0:
                raise ValueError(f"all heads of layer {layer + 1} are pruned")
            V = cast(self.v[layer].weight).reshape(H, D, D)  # V[h] maps D -> D
            W = torch.einsum("rd,hde,h->hre", W, V, mask / torch.sqrt(n_active)).reshape(-1, D)
        return W  # first layer's head major


@torch.no_grad()
def query_attention_by_block(net: InContextTransformer, episodes: Episodes, batch: int = 256) -> np.ndarray:
    """Share of the query tokens' attention on the label-0 support, the label-1 support and the query itself.

    Returns [L, H, 3]: for every head, the attention weight that the 16 query tokens put on the tokens of
    each block, averaged over query tokens and episodes (each row sums to one).
    """
    out = np.zeros((net.n_layers, net.n_heads, 3))
    dev = next(net.parameters()).device
    P = PATCHES_PER_IMAGE
    for i in range(0, len(episodes), batch):
        sl = slice(i, i + batch)
        x0 = net.tokens((episodes.images[sl], episodes.labels[sl])).to(dev)
        lab = torch.as_tensor(episodes.labels[sl][:, :2], device=dev)  # in-context labels of the supports
        for layer in range(net.n_layers):
            om = net.attention(x0, layer)[..., 2 * P :]  # [B, H, s, query tokens]
            blocks = om.reshape(om.shape[0], om.shape[1], 3, P, P).sum(3).mean(-1)  # [B, H, block]
            first_is_0 = (lab[:, 0] == 0)[:, None]
            to0 = torch.where(first_is_0, blocks[:, :, 0], blocks[:, :, 1])
            to1 = torch.where(first_is_0, blocks[:, :, 1], blocks[:, :, 0])
            out[layer] += torch.stack([to0, to1, blocks[:, :, 2]], -1).sum(0).double().cpu().numpy()
    return out / len(episodes)

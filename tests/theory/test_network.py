"""Model, attention, paths and exact conditional kernel (spec T§16.1)."""

import math

import numpy as np
import pytest
import torch
from helpers import random_instance, random_layers

import attention_paths as ap


@pytest.mark.parametrize("heads", [(2, 3), (3, 2), (2, 1, 2)])
@pytest.mark.parametrize("readout", ["last", "mean", "first"])
def test_path_decomposition_equals_forward_pass(heads, readout):
    rng = np.random.default_rng(1)
    n0, T = 7, 5
    layers = random_layers(n0, heads, seed=3)
    widths = tuple(4 + l for l in range(len(heads) + 1))
    sigma2 = (1.1,) + tuple(0.7 + 0.3 * l for l in range(len(heads))) + (0.9,)
    net = ap.AttentionPathNetwork(layers, ap.readout_vector(readout, T), widths, sigma2)
    net.sample_prior(torch.Generator().manual_seed(5))
    x = rng.standard_normal((11, n0, T))
    with torch.no_grad():
        f_layers = net(x)
        f_paths = net.forward_paths(ap.path_inputs(x, layers, net.readout))
    assert torch.allclose(f_layers, f_paths, rtol=1e-12, atol=1e-12 * f_layers.abs().max().item())
    # and the effective weights are the products along each path
    W1 = net.effective_weights().detach()
    for i, path in enumerate(ap.path_list(heads)):
        w = net.a.detach()[None, :]
        for l in reversed(range(len(heads))):
            w = w @ net.V[l][path[l]].detach() / math.sqrt(widths[l + 1])
        assert torch.allclose(W1[i], w[0], rtol=1e-12, atol=1e-14)


def test_flattening_order_and_partial_trace():
    H1, H2 = 3, 2
    for i, path in enumerate(ap.path_list((H1, H2))):
        assert path == (i // H2, i % H2)
        assert ap.path_index(path, (H1, H2)) == i
    assert ap.path_labels((2, 2)) == ["1,1", "1,2", "2,1", "2,2"]
    rng = np.random.default_rng(0)
    D = 4
    U = rng.standard_normal((H1 * D, H1 * D))
    U = U + U.T
    B = rng.standard_normal((D, D))
    B = B + B.T
    explicit = sum(U[h * D : (h + 1) * D, h * D : (h + 1) * D] for h in range(H1))
    np.testing.assert_allclose(ap.partial_trace(U, H1), explicit, rtol=1e-14)
    np.testing.assert_allclose(np.trace(np.kron(np.eye(H1), B) @ U), np.trace(B @ ap.partial_trace(U, H1)), rtol=1e-12)
    with pytest.raises(ValueError):
        ap.path_index((2, 0), (2, 2))


def test_attention_forms_match_explicit_loops():
    rng = np.random.default_rng(2)
    n0, T, G = 6, 4, 3
    x = rng.standard_normal((2, n0, T))
    W = rng.standard_normal((2, n0, n0))
    A = ap.WFormHeads(W).scores(x).numpy()
    for p in range(2):
        for h in range(2):
            for s in range(T):
                for t in range(T):
                    assert abs(A[p, h, s, t] - x[p, :, s] @ W[h] @ x[p, :, t]) < 1e-12
    Q, K = rng.standard_normal((2, G, n0)), rng.standard_normal((2, G, n0))
    A = ap.QKFormHeads(Q, K).scores(x).numpy()
    expected = np.einsum("hgi,pis,hgj,pjt->phst", K, x, Q, x) / math.sqrt(G)
    np.testing.assert_allclose(A, expected, rtol=1e-12)
    Om = ap.QKFormHeads(Q, K).attention(x).numpy()
    np.testing.assert_allclose(Om.sum(axis=2), 1.0, rtol=1e-13)  # softmax over keys (rows)
    np.testing.assert_allclose(
        Om[0, 1, :, 2], np.exp(expected[0, 1, :, 2]) / np.exp(expected[0, 1, :, 2]).sum(), rtol=1e-12
    )


def test_readout_vectors_and_bad_inputs():
    np.testing.assert_array_equal(ap.readout_vector("last", 3), [0, 0, 1])
    np.testing.assert_array_equal(ap.readout_vector("first", 3), [1, 0, 0])
    np.testing.assert_allclose(ap.readout_vector("mean", 4), 0.25)
    with pytest.raises(ValueError, match="readout style"):
        ap.readout_vector("max", 3)
    with pytest.raises(ValueError, match="shape"):
        ap.WFormHeads(np.zeros((2, 3, 4)))
    heads = ap.WFormHeads(np.zeros((1, 3, 3)))
    with pytest.raises(ValueError, match="N0=3"):
        heads.attention(np.zeros((2, 4, 5)))
    with pytest.raises(ValueError, match="non-finite"):
        heads.attention(np.full((1, 3, 2), np.nan))
    with pytest.raises(ValueError, match="widths"):
        ap.AttentionPathNetwork([heads], ap.readout_vector("last", 2), (3,))


def _conditional_design(net, x):
    """f(x_mu) = sum_ik M[mu, i, k] V0[i, k]: the Jacobian of the linear map V0 -> f."""
    V0 = net.V0.detach().clone()
    rows = []
    for mu in range(x.shape[0]):
        net.V0.grad = None
        f = net(x[mu : mu + 1])[0]
        (g,) = torch.autograd.grad(f, net.V0)
        rows.append(g.reshape(-1).numpy())
    assert torch.equal(net.V0.detach(), V0)
    return np.array(rows)


@pytest.mark.parametrize("heads", [(2, 3), (2, 1, 2)])
@pytest.mark.parametrize("readout", ["last", "mean"])
def test_exact_conditional_kernel_and_posterior_mean(readout, heads):
    """Given a, V^(l>=1), f is a GP in x with kernel K^{U(Theta)} (T§6.3); its posterior mean is kernel regression
    (two layers, and three: the nested U_1 of a 3-layer network)."""
    sigma0_2, tau = 1.3, 0.2
    x, y, layers, r, _ = random_instance(heads, P=14, readout=readout, seed=4)
    xs = np.random.default_rng(9).standard_normal((6,) + x.shape[1:])
    L = len(heads)
    net = ap.AttentionPathNetwork(layers, r, (4, 5, 6, 3)[: L + 1], (sigma0_2, 0.7, 1.3, 0.9, 1.1)[: L + 2])
    net.sample_prior(torch.Generator().manual_seed(2))
    M = _conditional_design(net, x)
    Ms = _conditional_design(net, xs)
    U = net.order_parameters()[0].detach().numpy()
    ftr = ap.path_features(ap.path_inputs(x, layers, r), sigma0_2)
    fte = ap.path_features(ap.path_inputs(xs, layers, r), sigma0_2)
    K = ap.renormalized_kernel(U, ftr)
    np.testing.assert_allclose(sigma0_2 * M @ M.T, K, rtol=1e-12, atol=1e-12 * np.abs(K).max())
    # weight-space Bayesian linear regression over V0 versus function-space prediction
    prec = M.T @ M / tau + np.eye(M.shape[1]) / sigma0_2
    v_hat = np.linalg.solve(prec, M.T @ y / tau)
    cov = np.linalg.inv(prec)
    pred = ap.predict(U, ftr, y, tau, fte)
    np.testing.assert_allclose(Ms @ v_hat, pred.mean, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(np.einsum("mi,ij,mj->m", Ms, cov, Ms), pred.var, rtol=1e-8, atol=1e-10)


def test_order_parameters_of_network_match_definition():
    layers = random_layers(5, (2, 2), seed=1)
    net = ap.AttentionPathNetwork(layers, ap.readout_vector("last", 4), (3, 4, 5))
    net.sample_prior(torch.Generator().manual_seed(0))
    U1, U2, Ua = [u.detach().numpy() for u in net.order_parameters()]
    a, V = net.a.detach().numpy(), [v.detach().numpy() for v in net.V]
    W2 = np.stack([a @ V[1][h] / np.sqrt(5) for h in range(2)])
    np.testing.assert_allclose(U2, W2 @ W2.T / 4, rtol=1e-12)
    np.testing.assert_allclose(Ua, a @ a / 5, rtol=1e-12)
    assert U1.shape == (4, 4) and np.linalg.eigvalsh(U1).min() > -1e-12

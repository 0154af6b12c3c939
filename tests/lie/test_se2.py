"""SE(2) (:mod:`jaxse3.lie.se2`) is SE(3) restricted to planar motions: every map against its se3 counterpart on the
embedded twist, at exactly zero rotation, on both sides of the Taylor switch and beyond, under jit and vmap, and with
autodiff through the closed forms (central differences, finite gradients at ω = 0)."""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxse3 import se3
from jaxse3.lie import se2

from .conftest import ANGLES

P = np.asarray(se2.PLANE)


def _embed(X):
    return jnp.zeros(X.shape[:-1] + (6,), X.dtype).at[..., P].set(X)


def _planar_pose(H):  # SE(3) pose of a planar pose (rotation about z, translation in the xy-plane)
    G = jnp.eye(4, dtype=H.dtype)
    return G.at[:2, :2].set(H[:2, :2]).at[:2, 3].set(H[:2, 2])


def _restrict(M):
    return M[..., P, :][..., :, P]


def _points():
    rng = np.random.default_rng(0)
    signs = [1.0, -1.0] * len(ANGLES)
    return [jnp.asarray([s * w, *rng.normal(size=2)]) for w, s in zip(ANGLES, signs)]


@pytest.mark.parametrize("X", _points())
def test_se2_maps_are_the_se3_maps_restricted_to_the_plane(X):
    Y = jnp.asarray([0.7, -0.3, 1.1])
    X6 = _embed(X)
    H = se2.exp(X)
    G = se3.exp(X6)
    np.testing.assert_allclose(_planar_pose(H), G, atol=1e-13)
    np.testing.assert_allclose(H[2], [0.0, 0.0, 1.0], atol=0)
    for name in ("ad", "dexp"):
        np.testing.assert_allclose(getattr(se2, name)(X), _restrict(getattr(se3, name)(X6)), atol=1e-13)
    for name in ("Ad", "Ad_inv", "coAd"):
        np.testing.assert_allclose(getattr(se2, name)(H), _restrict(getattr(se3, name)(G)), atol=1e-13)
    np.testing.assert_allclose(se2.adbar(Y), _restrict(se3.adbar(_embed(Y))), atol=1e-13)
    np.testing.assert_allclose(se2.ad(X).T @ Y, se2.adbar(Y) @ X, atol=1e-13)  # the defining identity of adbar
    # the plane is a subalgebra: ad and Ad of planar elements keep the out-of-plane components zero
    out = np.setdiff1d(np.arange(6), P)
    np.testing.assert_allclose(se3.ad(X6)[out][:, P], 0.0, atol=0)
    np.testing.assert_allclose(se3.Ad(G)[out][:, P], 0.0, atol=1e-15)


def test_se2_maps_under_jit_and_vmap():
    Xs = jnp.stack(_points())
    for name in ("ad", "exp", "dexp"):
        f = getattr(se2, name)
        np.testing.assert_allclose(jax.jit(jax.vmap(f))(Xs), jnp.stack([f(x) for x in Xs]), atol=1e-15)
    Hs = se2.exp(Xs)
    for name in ("Ad", "Ad_inv", "coAd"):
        f = getattr(se2, name)
        np.testing.assert_allclose(jax.jit(f)(Hs), jnp.stack([f(h) for h in Hs]), atol=1e-15)
    np.testing.assert_allclose(se2.Ad(Hs) @ se2.Ad_inv(Hs), jnp.broadcast_to(jnp.eye(3), (len(Xs), 3, 3)), atol=1e-13)


@pytest.mark.parametrize("w", [0.0, 1e-9, 0.4, ANGLES[-3], ANGLES[-2], 3.0])
def test_se2_derivatives_through_the_closed_forms(w):
    """jax.jvp of exp and dexp against central differences (and against se3's rules), finite at ω = 0."""
    X = jnp.asarray([w, 0.3, -0.8])
    U = jnp.asarray([0.9, -0.4, 0.25])
    for name in ("exp", "dexp"):
        f = getattr(se2, name)
        _, t = jax.jvp(f, (X,), (U,))
        h = 1e-6
        fd = (f(X + h * U) - f(X - h * U)) / (2 * h)
        np.testing.assert_allclose(t, fd, atol=2e-8)
        assert np.all(np.isfinite(jax.jacfwd(jax.jacfwd(f))(X)))
    d_dexp = _restrict(se3.d_dexp(_embed(X), _embed(U)))
    np.testing.assert_allclose(jax.jvp(se2.dexp, (X,), (U,))[1], d_dexp, atol=1e-12)


@pytest.mark.parametrize("w", [0.0, 0.4, ANGLES[-3], ANGLES[-2], 3.0])
def test_se2_dexp_derivatives_are_the_se3_ones_restricted(w):
    X, Z, S = jnp.asarray([w, 0.3, -0.8]), jnp.asarray([0.2, -1.1, 0.5]), jnp.asarray([-0.6, 0.1, 0.9])
    X6, Z6, S6 = _embed(X), _embed(Z), _embed(S)
    pairs = [
        (se2.d_dexp(X, S), se3.d_dexp(X6, S6)),
        (se2.dexp_jac(X, Z), se3.dexp_jac(X6, Z6)),
        (se2.dexpT_jac(X, Z), se3.dexpT_jac(X6, Z6)),
        (se2.dexp_jac_dir(X, Z, S), se3.dexp_jac_dir(X6, Z6, S6)),
    ]
    for a, b in pairs:
        np.testing.assert_allclose(a, _restrict(b), atol=1e-12)
    # the closed forms against autodiff of the 3×3 closed form of dexp, under vmap
    dexp_jac = jax.jacfwd(lambda x, z: se2.dexp(x) @ z)
    autodiff = [
        jax.jvp(se2.dexp, (X,), (S,))[1],
        dexp_jac(X, Z),
        jax.jacfwd(lambda x: se2.dexp(x).T @ Z)(X),
        jax.jvp(lambda x: dexp_jac(x, Z), (X,), (S,))[1],
    ]
    batched = jax.vmap(lambda x: (se2.d_dexp(x, S), se2.dexp_jac(x, Z), se2.dexpT_jac(x, Z), se2.dexp_jac_dir(x, Z, S)))
    for a, b in zip(batched(jnp.stack([X, -X]))[:4], autodiff, strict=True):
        np.testing.assert_allclose(a[0], b, atol=1e-12)
    # and against central differences of the maps they differentiate
    eps = 1e-6

    def central(f, direction):
        return (f(X + eps * direction) - f(X - eps * direction)) / (2 * eps)

    np.testing.assert_allclose(se2.d_dexp(X, S), central(se2.dexp, S), atol=1e-8)
    for j, e in enumerate(jnp.eye(3)):
        np.testing.assert_allclose(se2.dexp_jac(X, Z)[:, j], central(lambda x: se2.dexp_apply(x, Z), e), atol=1e-8)
        np.testing.assert_allclose(se2.dexpT_jac(X, Z)[:, j], central(lambda x: se2.dexpT_apply(x, Z), e), atol=1e-8)
    np.testing.assert_allclose(se2.dexp_jac_dir(X, Z, S), central(lambda x: se2.dexp_jac(x, Z), S), atol=1e-8)
    np.testing.assert_allclose(se2.dexp_apply(X, Z), se3.dexp_apply(X6, Z6)[P], atol=1e-13)
    np.testing.assert_allclose(se2.dexpT_apply(X, Z), se3.dexpT_apply(X6, Z6)[P], atol=1e-13)
    batch = se2.dexp_jac(jnp.stack([X, 2 * X]), Z)  # broadcasting over leading axes
    np.testing.assert_allclose(batch[1], _restrict(se3.dexp_jac(2 * X6, Z6)), atol=1e-12)


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: se2.exp(jnp.zeros(6)), "se2.exp: 'X' must have shape (..., 3), got (6,)"),
        (lambda: se2.Ad_inv(jnp.eye(4)), "se2.Ad_inv: 'H' must have shape (..., 3, 3), got (4, 4)"),
        (lambda: se2.dexp_jac(jnp.zeros(3), jnp.zeros(2)), "se2.dexp_jac: 'Z' must have shape (..., 3), got (2,)"),
    ],
)
def test_se2_names_the_argument_with_the_wrong_shape(call, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        call()

"""GVS kinematics: tangent operator, Magnus expansions (C1–C14), poses, body Jacobians, J̇, joint derivative terms.

Oracles: the series Σ ad^k/(k+1)! and finite differences for T; autodiff of plain formulas for 𝓩 and its
derivatives; expm-based poses and autodiff Jacobians of :mod:`tests.rod.reference`; a DOP853 integration of g′ = g ξ̂
for the convergence orders.
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.linalg import expm

from jaxse3 import rod as R
from jaxse3.rod.kinematics import joints
from jaxse3.rod.magnus import collocation_nodes, magnus_dZ, magnus_dZT, magnus_omega, magnus_Z
from tests.rod import reference as ref
from tests.rod.conftest import random_state, relative_error, small_rod

_fk = jax.jit(R.forward_kinematics)
_dk = jax.jit(R.differential_kinematics)
_ref_poses = jax.jit(ref.poses)
_ref_twists = jax.jit(ref.twists_and_bias)


def test_tangent_operator_is_the_papers_series_and_satisfies_B14():
    rng = np.random.default_rng(0)
    for Om in [rng.normal(size=6), np.zeros(6), 1e-9 * rng.normal(size=6)]:
        A = np.asarray(ref.ad(jnp.asarray(Om)))
        series = sum(np.linalg.matrix_power(A, k) / math.factorial(k + 1) for k in range(30))
        T = np.asarray(R.tangent_operator(jnp.asarray(Om)))
        np.testing.assert_allclose(T, series, atol=1e-14)
    # B14: d/dt exp(Ω(t)) = exp(Ω)·(Ad⁻¹_{exp Ω} T(Ω) Ω̇)^
    Om, dOm, eps = rng.normal(size=6), rng.normal(size=6), 1e-6
    d = (
        expm(np.asarray(ref.hat(jnp.asarray(Om + eps * dOm)))) - expm(np.asarray(ref.hat(jnp.asarray(Om - eps * dOm))))
    ) / (2 * eps)
    g = expm(np.asarray(ref.hat(jnp.asarray(Om))))
    body = np.asarray(ref.Ad_inv(jnp.asarray(g))) @ np.asarray(R.tangent_operator(jnp.asarray(Om))) @ dOm
    np.testing.assert_allclose(d, g @ np.asarray(ref.hat(jnp.asarray(body))), atol=1e-8)


@pytest.mark.parametrize("order", [4, 2])
def test_magnus_Z_and_its_derivatives_are_the_q_derivatives(order):
    rng = np.random.default_rng(1)
    n, nc, h = 7, len(collocation_nodes(order)), 0.13
    Phi = jnp.asarray(rng.normal(size=(nc, 6, n)))
    xs = jnp.asarray(rng.normal(size=(nc, 6)))
    q, v, w = (jnp.asarray(rng.normal(size=k)) for k in (n, n, 6))

    def Om(q):
        return magnus_omega(Phi @ q + xs, h, order)

    def Z(q):
        return magnus_Z(Phi @ q + xs, Phi, h, order)

    np.testing.assert_allclose(Z(q), jax.jacfwd(Om)(q), atol=1e-14)
    np.testing.assert_allclose(magnus_dZ(Phi, v, h, order), jax.jacfwd(lambda q: Z(q) @ v)(q), atol=1e-14)
    np.testing.assert_allclose(magnus_dZT(Phi, w, h, order), jax.jacfwd(lambda q: Z(q).T @ w)(q), atol=1e-14)
    if order == 4:  # (C1) written out
        xi = Phi @ q + xs
        want = h / 2 * (xi[0] + xi[1]) + math.sqrt(3) * h**2 / 12 * ref.ad(xi[0]) @ xi[1]
        np.testing.assert_allclose(Om(q), want, atol=1e-15)
        assert abs(collocation_nodes(4)[0] - (0.5 - math.sqrt(3) / 6)) < 1e-16


@jax.jit
def _joint_terms_and_oracles(rod, q, qd, qdd):
    jt = joints(rod, q, qd, qdd, derivatives=True)
    S = lambda q: joints(rod, q).S
    Sd = lambda q: joints(rod, q, qd, rate_matrix=True).Sd
    got = (jt.dS_qd, jt.dS_qdd, jt.dSd_qd, jt.Sd)
    want = (
        jax.jacfwd(lambda q: S(q) @ qd)(q),
        jax.jacfwd(lambda q: S(q) @ qdd)(q),
        jax.jacfwd(lambda q: Sd(q) @ qd)(q),
        jax.jvp(S, (q,), (qd,))[1],
    )  # Ṡ = time derivative along q̇ (C21)
    return got, want


def test_joint_derivative_terms_C19_C20_C24():
    rod = small_rod()
    q, qd, qdd, _ = random_state(rod, 2)
    for qq in (q, jnp.zeros_like(q)):
        got, want = _joint_terms_and_oracles(rod, qq, qd, qdd)
        for a, b in zip(got, want):
            assert bool(jnp.all(jnp.isfinite(a)))
            assert relative_error(a, b) < 1e-12


@pytest.mark.parametrize("order", [4, 2])
def test_matrix_free_joint_rates(order):
    """S q̇ and S q̈ + Ṡ q̇ from Ω̇, Ω̈ without the matrix Ṡ equal the products with S and with Ṡ (C21), which is the
    time derivative of S along q̇ (autodiff oracle), at a random and at the straight configuration."""
    rod = small_rod(order)
    q, qd, qdd, _ = random_state(rod, 3)
    for qq in (q, jnp.zeros_like(q)):
        jt = joints(rod, qq, qd, qdd)
        assert jt.Sd is None
        S, Sd = joints(rod, qq).S, jax.jvp(lambda x: joints(rod, x).S, (qq,), (qd,))[1]
        assert relative_error(jt.S_qd, S @ qd) < 1e-13
        assert relative_error(jt.S_acc, S @ qdd + Sd @ qd) < 1e-12


@pytest.mark.parametrize("order", [4, 2])
def test_poses_jacobians_twists_against_expm_reference(order):
    rod = small_rod(order)
    q, qd, _, _ = random_state(rod, 4)
    for qq in (q, jnp.zeros_like(q)):
        g, J, eta, Jd = _dk(rod, qq, qd)
        np.testing.assert_allclose(g, _ref_poses(rod, qq), atol=1e-13)
        np.testing.assert_allclose(_fk(rod, qq), g, atol=1e-15)
        Jr, etar, Jdqd = _ref_twists(rod, qq, qd)
        assert relative_error(J, Jr) < 1e-12
        assert relative_error(eta, etar) < 1e-12
        assert relative_error(jnp.einsum("kin,n->ki", Jd, qd), Jdqd) < 1e-11
        assert relative_error(J, R.body_jacobians(rod, qq)) < 1e-15
    # straight rod: points on the base x axis at X_k
    g0 = _fk(rod, jnp.zeros(rod.n_dof))
    want = rod.base_pose[:3, 3] + rod.X[:, None] * rod.base_pose[:3, 0]
    np.testing.assert_allclose(g0[:, :3, 3], want, atol=1e-15)
    np.testing.assert_allclose(R.tip_position(rod, jnp.zeros(rod.n_dof)), want[-1], atol=1e-15)


def test_jacobian_is_the_body_derivative_of_forward_kinematics():
    """δg = g (J δq)^ by central differences of the production forward kinematics."""
    rod = small_rod()
    q, _, _, _ = random_state(rod, 5)
    g, J, _, _ = _dk(rod, q, jnp.zeros_like(q))
    dq = jnp.asarray(np.random.default_rng(5).normal(size=rod.n_dof))
    eps = 1e-6
    dg = (_fk(rod, q + eps * dq) - _fk(rod, q - eps * dq)) / (2 * eps)
    want = jnp.einsum("kij,kjl->kil", g, jax.vmap(ref.hat)(J @ dq))
    assert relative_error(dg, want) < 1e-8


@functools.partial(jax.jit, static_argnums=2)
def _omegas(xi, h, order):
    return jax.vmap(lambda x: magnus_omega(x, h, order))(xi)


def _uniform_tip(basis, q, L, order, N):
    h = L / N
    Xc = (np.arange(N)[:, None] + collocation_nodes(order)) * h
    xi = basis(jnp.asarray(Xc), L) @ q + jnp.array([0.0, 0, 0, 1, 0, 0])
    Om = np.asarray(_omegas(xi, h, order))
    g = np.eye(4)
    for O in Om:
        g = g @ expm(np.asarray(ref.hat(jnp.asarray(O))))
    return g


@pytest.mark.parametrize("order, rate", [(4, 16.0), (2, 4.0)])
def test_magnus_convergence_order(order, rate):
    """Tip error falls ≈16× (Zanna) / ≈4× (midpoint) per halving of the spacing, vs DOP853 of g′ = g ξ̂."""
    basis, L = R.LegendreBasis((3, 3, 3, 2, 2, 2)), 0.5
    q = 3.0 * jnp.asarray(np.random.default_rng(6).normal(size=basis.n_dof))
    q = q.at[12:].multiply(0.05)  # moderate stretch/shear
    exact = ref.integrate_pose(lambda X: np.asarray(basis(jnp.asarray(X), L) @ q) + [0, 0, 0, 1, 0, 0], L)
    errs = [np.max(np.abs(_uniform_tip(basis, q, L, order, N) - exact)) for N in (4, 8, 16, 32)]
    ratios = np.array(errs[:-1]) / np.array(errs[1:])
    assert np.all(ratios > 0.75 * rate) and np.all(ratios < 1.35 * rate), ratios


def test_gauss_point_rod_converges_to_the_exact_pose():
    """The rod's own (Gauss-point) kinematics converge to the exact tip pose as n_gauss grows."""
    L = 0.4
    basis = R.LegendreBasis((2, 2, 2, 1, 1, 1))
    q = 2.0 * jnp.asarray(np.random.default_rng(7).normal(size=basis.n_dof))
    strain = jax.jit(lambda X: basis(X, L) @ q)
    exact = ref.integrate_pose(lambda X: np.asarray(strain(jnp.asarray(X))) + [0, 0, 0, 1, 0, 0], L)
    errs = []
    for n in (3, 6, 12):
        rod = R.Rod(L, R.CircularSection(0.01), R.Material(1e6, 1000.0), basis, n_gauss=n)
        errs.append(np.max(np.abs(np.asarray(jax.jit(R.tip_pose)(rod, q)) - exact)))
    assert errs[0] > 5 * errs[1] > 25 * errs[2] and errs[2] < 1e-5, errs


def test_vmap_over_configurations():
    rod = small_rod()
    qs = jnp.stack([random_state(rod, s)[0] for s in range(4)])
    batched = jax.vmap(_fk, in_axes=(None, 0))(rod, qs)
    for i in range(4):
        np.testing.assert_allclose(batched[i], _fk(rod, qs[i]), atol=1e-15)

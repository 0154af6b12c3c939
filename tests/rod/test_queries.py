"""Queries at any arc length (``pose_at``, ``strain_at``, ``internal_wrench``), the shear-correction factor and the
rotary-inertia switch.

Oracles: the rod's own computational points (the queries must reproduce them exactly), the closed form g(s) =
g₀ exp(s ξ̂) of constant strain (per segment for piecewise-constant strain), the planar curve of a linearly varying
curvature integrated by Simpson's rule, equilibrium of a cantilever under a tip wrench (the internal wrench at s is the
tip wrench transported, Ad*_{g(s)⁻¹g(L)} 𝓕_L, from the solved shape alone), the weak form Σ_k w_k Φ_kᵀ𝓕(X_k) = Kq + Dq̇,
Timoshenko's tip deflection F L³/(3EI) + F L/(k G A) and Cowper's published factors.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxse3 import rod as R, se3

L = 0.4
MAT = R.Material(E=2e5, rho=1100.0, nu=0.45, damping=30.0)
pose_at = jax.jit(R.pose_at)  # one compilation per rod and query shape


def _rod(orders, n_gauss=6, **kw):
    return R.Rod(L, R.CircularSection(0.02, 0.012), MAT, R.LegendreBasis(orders), n_gauss=n_gauss, **kw)


@pytest.fixture(scope="module")
def spatial():
    rod = _rod((2, 2, 2, 1, 1, 1), n_gauss=4, xi_star=lambda X, L: jnp.array([0.0, 0.5 * X, 0.0, 1.0, 0.0, 0.0]))
    q = jnp.asarray(np.random.default_rng(0).normal(size=rod.n_dof)) * 0.4
    return rod, q


def test_queries_at_the_computational_points_are_the_rods_own(spatial):
    rod, q = spatial
    g = jax.jit(R.forward_kinematics)(rod, q)
    np.testing.assert_allclose(pose_at(rod, q, rod.X), g, atol=1e-14)
    np.testing.assert_allclose(pose_at(rod, q, L), g[-1], atol=1e-14)
    np.testing.assert_allclose(jax.jit(R.strain_at)(rod, q, rod.X), rod.Phi @ q + rod.xi_star, atol=1e-14)
    qs = jnp.stack([q, -q, 0 * q])  # under vmap, at the straight rod too
    poses = jax.jit(jax.vmap(lambda a: R.pose_at(rod, a, jnp.array([0.0, 0.13, L]))))(qs)
    assert poses.shape == (3, 3, 4, 4) and np.all(np.isfinite(poses))
    np.testing.assert_allclose(poses[1, 1], pose_at(rod, -q, 0.13), atol=1e-14)


def test_constant_strain_is_an_exponential_between_the_points():
    rod = _rod((0, 0, 0, 0, 0, 0), n_gauss=3)
    q = jnp.array([0.7, -2.0, 3.0, 0.1, 0.2, -0.3])
    xi = q + jnp.array([0.0, 0.0, 0.0, 1.0, 0.0, 0.0])
    s = jnp.array([0.0, 0.031, 0.17, 0.2999, 0.4])
    want = jax.vmap(lambda t: se3.exp(t * xi))(s)
    np.testing.assert_allclose(R.pose_at(rod, q, s), want, atol=1e-13)


def test_piecewise_constant_strain_follows_each_segment():
    rod = R.Rod(L, R.CircularSection(0.02), MAT, R.PiecewiseConstantBasis(2), n_gauss=3, n_segments=2)
    q = jnp.asarray(np.random.default_rng(1).normal(size=12))
    xi1, xi2 = (q[6 * i : 6 * i + 6] + jnp.array([0.0, 0, 0, 1, 0, 0]) for i in (0, 1))
    for s in (0.05, L / 2, 0.27, L):
        want = se3.exp(s * xi1) if s <= L / 2 else se3.exp(L / 2 * xi1) @ se3.exp((s - L / 2) * xi2)
        np.testing.assert_allclose(pose_at(rod, q, s), want, atol=1e-13)
        np.testing.assert_allclose(R.strain_at(rod, q, s), xi1 if s < L / 2 else xi2, atol=1e-15)


def test_a_linearly_varying_curvature_matches_the_integrated_curve():
    """κ(s) = a + b s (bending about z, Legendre order 1): θ = as + bs²/2, p = ∫(cos θ, sin θ). Between the points the
    Magnus intervals interpolate the curve to the 4th order of the points themselves (observed at s = 0.2: 1.2e−6 m with
    8 Gauss points, 1.0e−7 m with 16; the tip, a computational point: 3.4e−6 and 2.5e−7)."""
    q = jnp.array([4.0, 2.5])  # Legendre: κ = q₀ + q₁ (2s/L − 1)
    a, b = q[0] - q[1], 2 * q[1] / L
    errors = []
    for n_gauss in (8, 16):
        rod = _rod((None, None, 1, None, None, None), n_gauss=n_gauss)
        err = 0.0
        for s in (0.037, 0.2, 0.3333):
            t = np.linspace(0.0, s, 20001)
            theta = a * t + b * t**2 / 2
            g = np.asarray(pose_at(rod, q, s))
            want = np.array([_simpson(f, t) for f in (np.cos(theta), np.sin(theta))])
            err = max(err, np.abs(np.asarray(g[:2, 3]) - want).max())
            np.testing.assert_allclose(np.arctan2(g[1, 0], g[0, 0]), a * s + b * s**2 / 2, atol=1e-13)
        errors.append(err)
    assert errors[1] < 5e-7 and errors[0] / errors[1] > 8  # 4th order: 2⁴ = 16 in h


def _simpson(f, t):  # an even number of equal intervals
    h = t[1] - t[0]
    return h / 3 * (f[0] + f[-1] + 4 * f[1:-1:2].sum() + 2 * f[2:-1:2].sum())


def _cantilever_statics(rod, wrench):
    loads = R.Loads.at_tip(rod, wrench, frame="world")
    z = jnp.zeros(rod.n_dof)
    res = jax.jit(lambda q: R.generalized_forces(rod, q, z, None, loads) - R.inverse_dynamics_at_rest(rod, q))
    jac = jax.jit(jax.jacfwd(res))
    q = z
    for _ in range(30):
        dq = np.linalg.solve(jac(q), -res(q))
        q = q + dq
        if np.abs(dq).max() < 1e-13:
            return q
    raise AssertionError("Newton did not converge")


def test_the_internal_wrench_balances_the_tip_wrench():
    """Gravity-free tapered cantilever in its plane under a tip force and moment (world-aligned; large deflection,
    |q| ≈ 1): at equilibrium the section at s carries the tip wrench transported to it, Ad*_{g(s)⁻¹g(L)} 𝓕_L. The
    constitutive wrench of the Ritz solution converges to it with the basis order (observed, relative to each
    section's largest component: 2.5e−2 at Legendre order 2, 2.2e−4 at order 6; 16 Gauss points)."""
    wrench = jnp.array([0.0, 0.0, 0.002, 0.0, 0.05, 0.0])
    errors = []
    for order in (2, 6):
        rod = _rod((None, None, order, order, order, None), n_gauss=16, gravity=(0.0, 0.0, 0.0))
        q = _cantilever_statics(rod, wrench)
        s = jnp.array([0.0, 0.1, 0.25, 0.33, L])
        g, gL = R.pose_at(rod, q, s), R.tip_pose(rod, q)
        tip_local = se3.Ad(_rotation(gL)).T @ wrench  # the world-aligned wrench at the tip, in the tip frame
        want = jax.vmap(lambda gs: se3.Ad(se3.inv(gL) @ gs).T @ tip_local)(g)
        got = R.internal_wrench(rod, q, s)
        errors.append(np.abs((got - want) / np.abs(want).max(axis=-1, keepdims=True)).max())
        assert np.abs(q).max() > 0.5  # a large deflection, so the transport matters
    assert errors[1] < 1e-3 and errors[0] / errors[1] > 20, errors


def _rotation(g):
    return g.at[:3, 3].set(0.0)


def test_the_internal_wrench_integrates_to_the_generalised_internal_force(spatial):
    """The weak form Σ_k w_k Φ_kᵀ 𝓕(X_k) = K q + D q̇ (D64, D65) with the shear factor, elastic and viscous parts."""
    for k in (1.0, 0.6):
        rod = _rod((2, 2, 2, 1, 1, 1), n_gauss=4, shear_factor=k)
        rng = np.random.default_rng(2)
        q, qd = (jnp.asarray(rng.normal(size=rod.n_dof)) for _ in range(2))
        F = R.internal_wrench(rod, q, rod.X, qd)
        weak = jnp.einsum("k,kin,ki->n", rod.weights, rod.Phi, F)
        np.testing.assert_allclose(weak, -R.internal_forces(rod, q, qd), rtol=1e-12)
    np.testing.assert_allclose(R.internal_wrench(rod, q, 0.1), R.internal_wrench(rod, q, 0.1, 0 * qd), rtol=1e-15)


def test_timoshenkos_tip_deflection_with_the_shear_factor():
    """A short stubby cantilever under a small tip force: δ = F L³/(3EI) + F L/(k G A) to the linear order (the shear
    term is 9 % of δ here); k = 1 and Cowper's k. Cowper's published values: 0.886 (circle), 0.850 (rectangle) for
    ν = 0.3."""
    r, length, F = 0.03, 0.2, 1e-3
    mat = R.Material(E=1e6, rho=1000.0, nu=0.3)
    section = R.CircularSection(r)
    area, inertia = np.pi * r**2, np.pi * r**4 / 4
    np.testing.assert_allclose(R.cowper_shear_factor(section, mat), 6 * 1.3 / (7 + 1.8), rtol=1e-14)
    np.testing.assert_allclose(R.cowper_shear_factor(section, mat), 0.8864, atol=1e-4)
    np.testing.assert_allclose(R.cowper_shear_factor(R.RectangularSection(0.01, 0.02), mat), 0.8497, atol=1e-4)
    for k in (1.0, float(R.cowper_shear_factor(section, mat))):
        rod = R.Rod(
            length, section, mat, R.LegendreBasis((None, None, 3, None, 2, None)), n_gauss=5,
            gravity=(0.0, 0.0, 0.0), shear_factor=k,
        )  # fmt: skip
        q = _cantilever_statics(rod, jnp.array([0.0, 0.0, 0.0, 0.0, F, 0.0]))
        bending, shear = F * length**3 / (3 * mat.E * inertia), F * length / (k * mat.G * area)
        np.testing.assert_allclose(R.tip_position(rod, q)[1], bending + shear, rtol=1e-5)


def test_without_rotary_inertia_the_bending_sections_have_no_angular_mass():
    with_, without = _rod((2, 2, 2, 1, 1, 1)), _rod((2, 2, 2, 1, 1, 1), rotary_inertia=False)
    np.testing.assert_array_equal(without.inertia[:, 1:3], 0.0)
    np.testing.assert_array_equal(without.inertia[:, [0, 3, 4, 5]], with_.inertia[:, [0, 3, 4, 5]])
    assert np.all(with_.inertia[1:-1, 1:3] > 0)


def test_bad_query_and_model_arguments_are_named(spatial):
    rod, q = spatial
    for fn in (R.pose_at, R.strain_at, R.internal_wrench):
        with pytest.raises(ValueError, match=rf"{fn.__name__}: 's' must be an arc length in \[0, L = 0.4\]"):
            fn(rod, q, jnp.array([0.1, 0.41]))
    with pytest.raises(ValueError, match="'q' must have shape"):
        R.pose_at(rod, q[:3], 0.1)
    with pytest.raises(ValueError, match="'shear_factor' must be positive"):
        _rod((1, 1, 1, 1, 1, 1), shear_factor=0.0)
    with pytest.raises(ValueError, match="'rotary_inertia' must be True or False"):
        _rod((1, 1, 1, 1, 1, 1), rotary_inertia="no")

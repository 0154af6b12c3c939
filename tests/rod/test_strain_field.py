"""The SE(3) strain-field rod (seed 000 §2.3.2, §7): strains, strain rates, energy derivatives, golden values.

Oracles: the digest's 40-digit golden values (§4.4) of the paper's §7 rod; autodiff (jvp / grad / hessian) of a plain
reference written here (dexp as the truncated series Σ ad^i/(i+1)!, no custom rules); central finite differences.
"""

from __future__ import annotations

import functools
import importlib.util
import math
import pathlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxse3.lie.rules import RULE_CALLS
from jaxse3.rod import strain_field as sf

ROOT = pathlib.Path(__file__).resolve().parents[2]


@functools.cache
def example():
    """The §7 example script (its fields and studies are under test here)."""
    spec = importlib.util.spec_from_file_location("strain_field_rod_example", ROOT / "examples" / "strain_field_rod.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# --------------------------------------------------------------------------------------------------------------------
# plain reference (no custom rules): dexp by its series (seed 000 eq. (18)), entire, 30 terms: round-off level for φ ≤ 3


def ad_plain(X):
    def sk(v):
        return jnp.array([[0.0, -v[2], v[1]], [v[2], 0.0, -v[0]], [-v[1], v[0], 0.0]])

    x, y = sk(X[:3]), sk(X[3:])
    return jnp.block([[x, jnp.zeros((3, 3))], [y, x]])


def dexp_plain(X, terms=30):
    A = ad_plain(X)
    out, P = jnp.eye(6), jnp.eye(6)
    for i in range(1, terms):
        P = A @ P / (i + 1)
        out = out + P
    return out


def density_plain(X, dX, K, chi0):
    e = dexp_plain(-X) @ dX - chi0
    return 0.5 * e @ K @ e


def rng_points(seed, n, scale=1.0):
    k1, k2 = jax.random.split(jax.random.PRNGKey(seed))
    X = scale * jax.random.normal(k1, (n, 6))
    dX = jax.random.normal(k2, (n, 6)) + jnp.array([0.0, 0.0, 0.0, 1.0, 0.0, 0.0])
    return X, dX


K_TEST = jnp.diag(jnp.array([2.0, 3.0, 5.0, 7.0, 11.0, 13.0])) + 0.3 * jnp.ones((6, 6))
CHI0_TEST = jnp.array([0.1, -0.2, 0.3, 1.0, 0.05, -0.05])


def points_with_zero_rotation():
    """The evaluation points used below include x = 0 exactly (a straight rod) and tiny x."""
    X, dX = rng_points(0, 5)
    X = X.at[0, :3].set(0.0).at[1, :3].set(1e-9)
    return X, dX


def _fast(f, *args):
    """f(*args) compiled once (compilation dominates these tests)."""
    return jax.jit(f).lower(*args).compile()(*args)


@functools.cache
def _density_derivs():
    """Closed forms, and jax.grad/jax.hessian through the custom_jvp rules, of V̄ in (X, X′), vmapped, compiled
    for the points of points_with_zero_rotation."""

    def one(X, dX, K, chi0):
        z = jnp.concatenate([X, dX])
        f = lambda z: sf.energy_density(z[:6], z[6:], K, chi0)
        return (
            sf.energy_density(X, dX, K, chi0),
            sf.energy_density_grad(X, dX, K, chi0),
            sf.energy_density_hess(X, dX, K, chi0),
            jax.grad(f)(z),
            jax.hessian(f)(z),
        )

    def plain(X, dX, K, chi0):
        z = jnp.concatenate([X, dX])
        f = lambda z: density_plain(z[:6], z[6:], K, chi0)
        return f(z), jax.grad(f)(z), jax.hessian(f)(z)

    example = (*points_with_zero_rotation(), K_TEST, CHI0_TEST)
    return tuple(jax.jit(jax.vmap(f, (0, 0, None, None))).lower(*example).compile() for f in (one, plain))


def test_energy_density_derivatives_against_plain_autodiff():
    """Eqs. (15), (16) (+ X′ blocks) == autodiff of the plain energy; jax.grad/hessian give the same, x = 0 included."""
    X, dX = points_with_zero_rotation()
    closed, plain = _density_derivs()
    v, g, H, g_ad, H_ad = closed(X, dX, K_TEST, CHI0_TEST)
    vp, gp, Hp = plain(X, dX, K_TEST, CHI0_TEST)
    scale_g, scale_h = float(jnp.abs(gp).max()), float(jnp.abs(Hp).max())
    np.testing.assert_allclose(v, vp, rtol=1e-13)
    for a in (g, g_ad):
        np.testing.assert_allclose(a, gp, atol=1e-12 * scale_g, rtol=0)
    for a in (H, H_ad):
        np.testing.assert_allclose(a, Hp, atol=1e-12 * scale_h, rtol=0)
    np.testing.assert_allclose(H, jnp.swapaxes(H, -1, -2), atol=1e-13 * scale_h)
    assert all(bool(jnp.isfinite(a).all()) for a in (v, g, H, g_ad, H_ad))


def test_hessian_runs_the_closed_form_rules():
    """jax.grad and jax.hessian of the coefficient energy invoke the custom_jvp rules of eqs. (15)/(16) (the counters
    fail if the rules were bypassed), and equal the explicit chain-rule assemblies."""
    rod = sf.StrainFieldRod(K_TEST, CHI0_TEST, sf.ChebyshevField(3, clamped=False), n_quad=5)
    c = rod.straight() + 0.2 * jax.random.normal(jax.random.PRNGKey(3), (rod.n_coeffs, 6))
    jax.clear_caches()  # rules are traced once and cached: count a fresh trace
    before = dict(RULE_CALLS)
    g = _fast(lambda c: jax.grad(sf.energy, argnums=1)(rod, c), c)
    assert RULE_CALLS["rod.energy_density"] > before.get("rod.energy_density", 0)
    jax.clear_caches()  # rules are traced once and cached: count a fresh trace
    mid = RULE_CALLS["rod.energy_density_grad"]
    H = _fast(lambda c: jax.hessian(sf.energy, argnums=1)(rod, c), c)
    assert RULE_CALLS["rod.energy_density_grad"] > mid
    np.testing.assert_allclose(g, _fast(sf.energy_gradient, rod, c), rtol=1e-12, atol=1e-12 * float(jnp.abs(g).max()))
    np.testing.assert_allclose(H, _fast(sf.energy_hessian, rod, c), rtol=1e-12, atol=1e-12 * float(jnp.abs(H).max()))

    # and against the plain reference energy (Gauss–Legendre sum written here)
    def plain_energy(c):
        X, dX = rod.basis0 @ c, rod.basis1 @ c
        return jnp.dot(rod.weights, jax.vmap(density_plain, (0, 0, None, None))(X, dX, K_TEST, CHI0_TEST))

    Hp = _fast(jax.hessian(plain_energy), c)
    np.testing.assert_allclose(H, Hp, atol=1e-11 * float(jnp.abs(Hp).max()), rtol=0)


def test_material_tangents_against_finite_differences():
    """Tangents of V̄ and of its gradient with respect to K and χ₀ (custom_jvp) vs central differences."""
    X, dX = points_with_zero_rotation()
    X, dX = X[0], dX[0]
    dK = jax.random.normal(jax.random.PRNGKey(5), (6, 6))
    dc = jax.random.normal(jax.random.PRNGKey(6), (6,))
    h = 1e-6

    def both(K, c):
        return jnp.concatenate([sf.energy_density(X, dX, K, c)[None], sf.energy_density_grad(X, dX, K, c)])

    _, tan = jax.jvp(both, (K_TEST, CHI0_TEST), (dK, dc))
    fd = (both(K_TEST + h * dK, CHI0_TEST + h * dc) - both(K_TEST - h * dK, CHI0_TEST - h * dc)) / (2 * h)
    np.testing.assert_allclose(tan, fd, rtol=1e-7, atol=1e-7 * float(jnp.abs(fd).max()))


@functools.cache
def _rates_vs_autodiff():
    """χ′, χ″ by the formulas (with D_{−X}) vs d/dτ, d²/dτ² of the plain strain χ(τ) = dexp_{−X}X′ (series dexp)."""
    coef = jax.random.normal(jax.random.PRNGKey(7), (4, 6))

    def field(tau):  # polynomial field whose rotation part vanishes at τ = 0.3 (x = 0 exactly there)
        p = jnp.stack([tau**k for k in range(4)]) @ coef
        return p.at[:3].multiply(tau - 0.3)

    def chi_plain(tau):
        X, dX = field(tau), jax.jvp(field, (tau,), (1.0,))[1]
        return dexp_plain(-X) @ dX

    def run(taus):
        d = sf.field_derivatives(field, taus, 3)
        got = sf.strain_rates(d[:, 0], d[:, 1], d[:, 2], d[:, 3])
        d1 = lambda t: jax.jvp(chi_plain, (t,), (1.0,))[1]
        d2 = lambda t: jax.jvp(d1, (t,), (1.0,))[1]
        want = jnp.stack([jax.vmap(chi_plain)(taus), jax.vmap(d1)(taus), jax.vmap(d2)(taus)], axis=1)
        return got, want, sf.strain(d[:, 0], d[:, 1])

    return jax.jit(run)


def test_strain_rates_against_autodiff():
    taus = jnp.array([0.0, 0.1, 0.3, 0.3 + 1e-7, 0.77, 1.0])
    got, want, chi = _rates_vs_autodiff()(taus)
    np.testing.assert_allclose(got, want, rtol=1e-11, atol=1e-11 * float(jnp.abs(want).max()))
    np.testing.assert_allclose(chi, want[:, 0], rtol=1e-12, atol=1e-13)


def test_paper_golden_values():
    """Seed 000 §7 rod: X, χ, χ′, χ″ at τ = 0.25, 0.4, 0.5 (x = 0) equal the digest §4.4 values to 1e-9 relative."""
    errs = example().golden_errors()
    assert sorted(errs) == [0.25, 0.4, 0.5]
    assert max(max(e) for e in errs.values()) < 1e-9, errs


def test_paper_energy_derivatives():
    """V̄, ∂V̄/∂X (15) and ∂²V̄/∂X² (16) at τ = 0.4 against the digest values and against jax autodiff."""
    ex = example()
    en = ex.energy_check(0.4)
    gold = ex.ENERGY_GOLDEN
    assert abs(en["value"] - gold["value"]) < 1e-9 * gold["value"]
    np.testing.assert_allclose(en["gradient"], gold["gradient"], rtol=1e-8, atol=1e-9 * 108.3)
    H = en["hessian"]
    assert abs(np.linalg.norm(H) - gold["hessian_fro"]) < 1e-8 * gold["hessian_fro"]
    assert abs(np.linalg.norm(H, 2) - gold["hessian_2"]) < 1e-8 * gold["hessian_2"]
    np.testing.assert_allclose(np.diag(H), gold["hessian_diag"], rtol=1e-6)
    for kind in ("rules", "plain"):
        np.testing.assert_allclose(en["grad_" + kind], en["gradient"], rtol=1e-12, atol=1e-12 * 108.3)
        np.testing.assert_allclose(en["hessian_" + kind], H, rtol=1e-12, atol=1e-12 * 55.8)


def test_switching_error_orders():
    """‖χ′ − χ′^[k]‖ at ‖x‖ = ε: scales as ε^k (k ≥ 1), matches the digest §4.4 numbers (3 digits)."""
    ex = example()
    study = ex.switching_study()
    for eps in (1e-2, 1e-3):
        np.testing.assert_allclose(study[eps][:4], ex.SWITCH_GOLDEN[eps][:4], rtol=2e-2)
    for k in range(1, 4):
        slope = math.log10(study[1e-2][k] / study[1e-3][k])
        assert abs(slope - k) < 0.05, (k, slope)


def test_literal_closed_forms_fail_near_zero_robust_do_not():
    """The paper's literal closed forms: NaN at x = 0 exactly (every entry but the structural zero block of the
    se(3) form), O(1) relative error of χ″ at τ = 0.5 − 1e-7 (the artefacts of its Fig. 5); the library's robust
    evaluation matches the golden values there (checked above)."""
    ex = example()
    d2 = np.asarray(ex.LITERAL.d2_dexp(jnp.zeros(6), jnp.ones(6), jnp.ones(6)))
    assert np.isnan(np.delete(d2.reshape(2, 3, 2, 3), 1, axis=2)[0]).all() and np.isnan(d2[3:]).all()
    np.testing.assert_array_equal(d2[:3, 3:], 0.0)
    taus = jnp.array([0.5 - 1e-7, 0.4])
    lit, rob = map(np.asarray, _fast(lambda t: (ex.rates(t, ex.LITERAL), ex.rates(t)), taus))
    assert np.isfinite(rob).all()
    assert np.abs(lit[0, 2] - rob[0, 2]).max() > 1.0 * np.abs(rob[0, 2]).max()  # χ″ next to x = 0
    assert np.abs(lit[0, 1] - rob[0, 1]).max() > 1e-4 * np.abs(rob[0, 1]).max()  # χ′
    np.testing.assert_allclose(lit[1], rob[1], rtol=1e-9, atol=1e-9)  # far from x = 0 they agree


def test_chebyshev_field_and_rod_model():
    """Basis derivatives vs autodiff; clamping; straight configuration; positions; shape errors."""
    fld = sf.ChebyshevField(5, clamped=True)
    c = jax.random.normal(jax.random.PRNGKey(8), (5, 6))
    tau = jnp.array([0.0, 0.3, 1.0])
    d = sf.field_derivatives(lambda t: fld(c, t), tau, 3)
    for k in range(4):
        np.testing.assert_allclose(fld(c, tau, k), d[:, k], rtol=1e-12, atol=1e-10)
    np.testing.assert_allclose(fld(c, 0.0), 0.0, atol=1e-15)
    rod = sf.StrainFieldRod.from_material(2.0, 10.0, 4.0, 0.1, 1e-3, 2e-3, 3e-3, degree=4)
    c0 = rod.straight()
    np.testing.assert_allclose(sf.positions(rod, c0, tau), tau[:, None] * jnp.array([2.0, 0.0, 0.0]), atol=1e-14)
    assert float(sf.energy(rod, c0)) == pytest.approx(0.0, abs=1e-20)
    np.testing.assert_allclose(sf.poses(rod, c0, 1.0)[:3, 3], [2.0, 0.0, 0.0], atol=1e-14)
    with pytest.raises(ValueError, match="coeffs"):
        sf.energy(rod, jnp.zeros((3, 6)))
    with pytest.raises(ValueError, match="stiffness"):
        sf.StrainFieldRod(jnp.eye(5), jnp.zeros(6), fld)
    with pytest.raises(ValueError, match="'K'"):
        sf.energy_density(jnp.zeros(6), jnp.zeros(6), jnp.eye(3), jnp.zeros(6))
    with pytest.raises(ValueError, match="degree"):
        sf.ChebyshevField(0)

"""Newton statics of the strain-field rod by energy minimisation with the exact Hessian.

Oracles: the exact circle of a pure tip moment; an independent shooting solution of the Simo–Reissner rod ODE
(extensible, shearable; scipy DOP853 + fsolve) written here, for a tip force and for gravity plus a tip force.
"""

from __future__ import annotations

import functools

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.integrate import solve_ivp
from scipy.optimize import fsolve

from jaxse3.rod import strain_field as sf
from jaxse3.sim import energy_statics as es

# the seed 000 §7 rubber rod (N, mm): 8 × 8 mm², L = 100 mm, E = 10 MPa, G = 0.3 MPa as printed
L, E, G, A, I = 100.0, 10.0, 0.3, 64.0, 8.0**4 / 12.0
KB, KS = np.array([G * 2 * I, E * I, E * I]), np.array([E * A, G * A, G * A])
DEGREE = 8  # spectral convergence: tip error vs shooting ~1e-11 at degree 8


def shooting_tip(F, f=np.zeros(3)):
    """Tip position of the clamped rod under a tip force F and a distributed force f per unit length (no tip moment):
    integrate R′ = R κ̃, r′ = R ρ, m′ = −r′ × n from the base, n(s) = F + f (L − s), κ = K_b⁻¹Rᵀm,
    ρ = e₁ + K_s⁻¹Rᵀn, and solve m(L) = 0 for the base moment m(0)."""

    def rhs(s, z):
        R, m = z[:9].reshape(3, 3), z[12:]
        n = F + f * (L - s)
        kappa, rho = (R.T @ m) / KB, np.array([1.0, 0.0, 0.0]) + (R.T @ n) / KS
        dr = R @ rho
        K = np.array([[0, -kappa[2], kappa[1]], [kappa[2], 0, -kappa[0]], [-kappa[1], kappa[0], 0]])
        return np.concatenate([(R @ K).ravel(), dr, -np.cross(dr, n)])

    def run(m0):
        z0 = np.concatenate([np.eye(3).ravel(), np.zeros(3), m0])
        return solve_ivp(rhs, (0.0, L), z0, method="DOP853", rtol=1e-12, atol=1e-12).y[:, -1]

    m0 = fsolve(lambda m0: run(m0)[12:], np.cross([L, 0, 0], F) + np.cross([L / 2, 0, 0], f * L), xtol=1e-12)
    return run(m0)[9:12]


@functools.cache
def rod():
    return sf.StrainFieldRod.from_material(L, E, G, A, I, I, 2 * I, degree=DEGREE)


def newton(tol=1e-12):
    """Tolerances as arrays, so that every case reuses one compiled solver (Python floats would be static)."""
    return es.NewtonMinimiser(rtol=jnp.asarray(tol), atol=jnp.asarray(tol))


@functools.cache
def solve():
    """One compiled solver for every load case: the arrays of rod, loads and tolerances are arguments."""
    arrays, static = eqx.partition((rod(), es.RodLoads(), newton()), eqx.is_array)

    def run(arrays):
        rod_, loads, solver = eqx.combine(arrays, static)
        res = es.solve_statics(rod_, loads, solver=solver)
        return res, sf.positions(rod_, res.value, jnp.ones(()))

    compiled = jax.jit(run).lower(arrays).compile()
    return lambda *args: compiled(eqx.partition(args, eqx.is_array)[0])


def test_pure_tip_moment_gives_the_exact_circle():
    theta = 2.0  # tip rotation (rad): M L/(E I)
    res, tip = solve()(rod(), es.RodLoads(tip_moment=(0.0, 0.0, theta * E * I / L)), newton())
    assert bool(res.converged)
    exact = L / theta * np.array([np.sin(theta), 1.0 - np.cos(theta), 0.0])
    np.testing.assert_allclose(tip, exact, rtol=1e-11, atol=1e-11 * L)
    # the exact solution is X(τ) = τ χ with χ = (0, 0, θ, L, 0, 0): in the span of the clamped Chebyshev basis
    np.testing.assert_allclose(sf.field(rod(), res.value, 0.7), 0.7 * np.array([0, 0, theta, L, 0, 0]), atol=1e-9)


@pytest.mark.parametrize("gravity", [False, True])
def test_tip_force_and_gravity_against_shooting(gravity):
    F = np.array([0.0, -2.0 * E * I / L**2, 0.0])  # F L²/(E I) = 2: large deflection (tip ≈ 50 % of L down)
    f = np.array([0.0, 0.0, -2e-3]) if gravity else np.zeros(3)  # per unit length; the loads take it per unit τ
    res, tip = solve()(rod(), es.RodLoads(tip_force=F, distributed_force=f * L), newton())
    ref = shooting_tip(F, f)
    assert bool(res.converged)
    assert np.linalg.norm(np.asarray(tip) - ref) < 1e-9 * np.linalg.norm(ref), (tip, ref)
    # quadratic convergence: the last steps before round-off square the (normalised) residual
    residuals = np.asarray(res.stats["residuals"])
    r = residuals[: int(res.num_steps) + 1] / residuals[0]
    assert r[-1] < 1e-12
    tail = [k for k in range(len(r) - 1) if 1e-12 < r[k + 1] and r[k] < 1e-2]
    assert tail, r
    for k in tail:
        assert r[k + 1] < 10.0 * r[k] ** 2, r


def test_failure_is_reported():
    """An unreachable tolerance (0) makes the solver stop at round-off or at the step limit: a runtime error."""
    with pytest.raises(Exception, match=r"(maximum number of steps|line search failed)"):
        res, _ = solve()(rod(), es.RodLoads(tip_force=(0.0, -0.7, 0.0)), newton(0.0))
        jax.block_until_ready(res.value)
    with pytest.raises(ValueError, match="coeffs0"):
        es.solve_statics(rod(), es.RodLoads(), jnp.zeros((2, 6)))
    with pytest.raises(ValueError, match="tip_force"):
        es.RodLoads(tip_force=(1.0, 2.0))


@pytest.mark.slow
def test_tip_force_against_gvs_statics():
    """Cross-check with the GVS rod statics (seed 003; :mod:`jaxse3.rod`, :mod:`jaxse3.sim.statics`) on the same rod
    and load, in SI units: tip positions agree within 1e-4 relative (measured 9e-6 with Legendre order 5, 8 Gauss
    points; the strain-field solution agrees with shooting to 1e-11)."""
    from jaxse3 import rod as gvs
    from jaxse3.sim import statics, system

    w, Lm = 8e-3, L * 1e-3
    F = 2.0 * E * 1e6 * (w**4 / 12) / Lm**2  # the same F L²/(EI) = 2
    r = gvs.Rod(
        Lm,
        gvs.RectangularSection(w, w),
        gvs.Material(E * 1e6, 1000.0, G=G * 1e6),
        gvs.LegendreBasis((5,) * 6),
        n_gauss=8,
        gravity=(0.0, 0.0, 0.0),
    )
    sys_ = system.rod_system(r, gvs.Loads.at_tip(r, [0.0, 0.0, 0.0, 0.0, -F, 0.0]))
    sol = statics.solve_statics(sys_, jnp.zeros(sys_.n_inputs), load_steps=4)
    assert bool(sol.converged)
    _, tip = solve()(rod(), es.RodLoads(tip_force=(0.0, -2.0 * E * I / L**2, 0.0)), newton())
    gvs_tip_mm = np.asarray(sol.tip) * 1e3
    assert np.linalg.norm(gvs_tip_mm - np.asarray(tip)) < 1e-4 * np.linalg.norm(tip), (gvs_tip_mm, tip)

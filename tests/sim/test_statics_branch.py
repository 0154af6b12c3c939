"""Large-deformation statics of a GVS cantilever (seed 003 eq. (13)) against the elastica: the default adaptive load
continuation stays on the branch that grows from the straight rod, where a single full-load Newton solve does not.

The rod is slender (r/L = 0.005: EA L²/EI = 1.6e5), so the extensible, shearable Cosserat rod is within ~3e-4 L of the
inextensible elastica; Legendre order 8 in bending resolves the curvature. The oracle is the elastica boundary-value
problem solved with scipy: θ(0) = 0, θ'(L) = 0 and, in s̄ = s/L with θ measured from the x axis (up positive),

* self-weight q: θ'' = α (1 − s̄) cos θ, α = qL³/EI;
* tip load P: θ'' = k cos θ, k = PL²/EI (Bisshopp & Drucker 1945: δ/L = 0.8106 at k = 10).

One rod structure (a world tip wrench and gravity, either of them zero) serves both load cases, so each load-step
mode compiles once.
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.integrate import solve_bvp

from jaxse3 import rod as R
from jaxse3.sim import rod_system, solve_statics

LENGTH, RADIUS, E, RHO = 1.0, 0.005, 1e7, 1000.0
EI = E * np.pi * RADIUS**4 / 4
WEIGHT = RHO * np.pi * RADIUS**2  # mass per length
TOLERANCE = 1e-3  # of L; measured 2.7e-4 (self-weight) and 1.1e-4 (tip load), the rod's extensibility


def elastica_tip(load: str, alpha: float) -> np.ndarray:
    """(x, z)/L of the tip of the inextensible elastica cantilever along +x, load along −z."""

    def rhs(s, y):
        theta, dtheta, _, _ = y
        w = 1 - s if load == "weight" else np.ones_like(s)
        return np.vstack([dtheta, alpha * w * np.cos(theta), np.cos(theta), np.sin(theta)])

    s = np.linspace(0.0, 1.0, 101)
    guess = np.vstack([np.zeros_like(s), np.zeros_like(s), s, np.zeros_like(s)])
    sol = solve_bvp(rhs, lambda a, b: np.array([a[0], b[1], a[2], a[3]]), s, guess, tol=1e-10, max_nodes=100000)
    assert sol.status == 0
    return sol.y[2:, -1]


@functools.cache
def cantilever(load: str, alpha: float, upright: bool = False):
    """A uniform rod along world x, clamped at the origin, under self-weight (qL³/EI = α) or a tip force
    (PL²/EI = α) along world −z; ``upright``: self-weight along −x instead (a standing column)."""
    gravity = alpha * EI / (WEIGHT * LENGTH**3) if load == "weight" else 0.0
    rod = R.Rod(
        LENGTH,
        R.CircularSection(RADIUS),
        R.Material(E, RHO, nu=0.5),
        R.LegendreBasis((2, 8, 2, 2, 2, 2)),
        n_gauss=9,
        gravity=(-gravity, 0.0, 0.0) if upright else (0.0, 0.0, -gravity),
    )
    force = alpha * EI / LENGTH**2 if load == "tip" else 0.0
    return rod_system(rod, R.Loads.at_tip(rod, [0.0, 0.0, 0.0, 0.0, 0.0, -force]))


def _tip_xz(sol) -> np.ndarray:
    return np.asarray(sol.tip)[[0, 2]] / LENGTH


def test_elastica_oracle_reproduces_bisshopp_drucker():
    np.testing.assert_allclose(elastica_tip("tip", 10.0), [0.4450, -0.8106], atol=1e-4)


def test_heavy_self_weight_finds_the_elastica_branch():
    """qL³/EI = 50: the default continuation reaches the elastica, the same as 50 equal load steps. A single full-load
    Newton solve from straight wanders (tens of iterations) and lands where round-off takes it — a far-away unstable
    equilibrium with the tip behind the base, or the elastica — and its stability flag says which."""
    system = cantilever("weight", 50.0)
    assert system.n_inputs == 0  # u defaults to zeros
    sol = solve_statics(system)
    assert bool(sol.converged) and bool(sol.stable) and float(sol.residual_norm) < 1e-10
    np.testing.assert_allclose(_tip_xz(sol), elastica_tip("weight", 50.0), atol=TOLERANCE)
    taken = int(sol.load_steps_taken)
    fractions = np.asarray(sol.load_fractions)
    assert 1 < taken < 10 and fractions[taken - 1] == 1.0 and np.all(np.diff(fractions[:taken]) > 0)
    assert np.all(fractions[taken:] == 0)

    fine = solve_statics(system, load_steps=50)
    assert bool(fine.converged) and bool(fine.stable)
    np.testing.assert_allclose(fine.q, sol.q, atol=1e-8)

    single = solve_statics(system, load_steps=1, throw=False)
    assert int(single.num_steps) > 3 * int(sol.num_steps) / taken  # far more iterations than a continuation step
    if bool(single.converged):
        on_elastica = np.max(np.abs(_tip_xz(single) - _tip_xz(sol))) < TOLERANCE
        assert bool(single.stable) == on_elastica


def test_tip_load_finds_the_elastica_branch():
    """PL²/EI = 10: the default continuation reaches the elastica (Bisshopp & Drucker) in a few load steps; a single
    full-load Newton solve from straight is at the edge of Newton's basin (it stops at its step limit or wanders
    there, depending on the round-off of the matrix products): it needs at least twice the continuation's
    iterations, and ends on the elastica if it converges."""
    system = cantilever("tip", 10.0)
    sol = solve_statics(system)
    assert bool(sol.converged) and bool(sol.stable) and float(sol.residual_norm) < 1e-10
    np.testing.assert_allclose(_tip_xz(sol), elastica_tip("tip", 10.0), atol=TOLERANCE)
    assert int(sol.load_steps_taken) > 1
    single = solve_statics(system, load_steps=1, throw=False)
    assert int(single.num_steps) >= 2 * int(sol.num_steps)
    if bool(single.converged):
        np.testing.assert_allclose(_tip_xz(single), _tip_xz(sol), atol=1e-8)
    else:
        assert "maximum number of steps" in single.message


def test_small_load_takes_one_step():
    """PL²/EI = 0.1, nearly linear: the full-load step is accepted; the tip deflection is the elastica's (≈ PL³/3EI)."""
    sol = solve_statics(cantilever("tip", 0.1))
    assert bool(sol.converged) and int(sol.load_steps_taken) == 1
    np.testing.assert_allclose(_tip_xz(sol), elastica_tip("tip", 0.1), atol=1e-5)
    assert abs(float(_tip_xz(sol)[1]) + 0.1 / 3) < 1e-3


@functools.partial(jax.jit, static_argnums=0)  # one compilation for every α
def _energy_hessian(energy, params, q):
    return jax.hessian(lambda x: energy(params, x, jnp.zeros_like(x)).total)(q)


@pytest.mark.parametrize("alpha, index", [(5.0, 0), (7.5, 0), (8.3, 2), (30.0, 2), (58.0, 3)])
def test_the_morse_index_of_a_standing_column_counts_greenhills_buckling_loads(alpha, index):
    """Greenhill's standing column: the straight rod under its own weight qL³/EI = α is an equilibrium at every α,
    stable below the first critical self-weight α₁ = 7.837 and with one more unstable direction in each bending
    plane above each critical load (α₂ = 55.98; Timoshenko & Gere §2.10). Newton from the straight rod stays
    straight (the bending residual is zero by symmetry). The rod bends about y with Legendre order 8 and about z with
    order 2: α₁ of both planes lies in (7.8, 7.9), α₂ in (56.5, 57) about y and in (59, 60) about z (measured), so
    the Morse index is 0 on both sides of α₁'s neighbourhood, 2 above α₁ (one per plane), 3 above the resolved α₂.
    A second oracle: the spectrum of the Hessian of the potential energy (elastic + gravitational), by autodiff of
    the model's energy, a path apart from the residual's rules."""
    system = cantilever("weight", alpha, upright=True)
    sol = solve_statics(system, load_steps=1)
    assert bool(sol.converged)
    np.testing.assert_allclose(np.asarray(sol.tip)[1:], 0.0, atol=1e-12)  # straight
    assert int(sol.morse_index) == index
    assert bool(sol.stable) == (index == 0) and (float(sol.least_stiffness) > 0) == (index == 0)
    hessian = _energy_hessian(system.energy, system.params, sol.q)
    w = np.linalg.eigvalsh(np.asarray(hessian))
    assert int(np.sum(w < -1e-8 * np.abs(w).max())) == index
    np.testing.assert_allclose(float(sol.least_stiffness), w[0], rtol=1e-7)

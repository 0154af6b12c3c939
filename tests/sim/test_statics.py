"""Statics: Newton on τ(q, 0, u) − ID(q, 0, 0) = 0 (seed 003 eq. (13)) against independent solutions."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.optimize

from jaxse3 import rod as R
from jaxse3.sim import System, rod_system, solve_statics, solve_statics_batch, stack
from tests.rod.conftest import random_state, small_rod
from tests.sim import standin

U = jnp.array([1.0, -0.5])


def _reference(system, u):
    """Independent equilibrium: scipy's hybrd on K q + g sin q = B u, from the linear solution."""
    p = system.params
    K, B, g = np.asarray(p.K), np.asarray(p.B), float(p.g)
    f = lambda q: K @ q + g * np.sin(q) - B @ np.asarray(u)
    return scipy.optimize.fsolve(f, np.linalg.solve(K, B @ np.asarray(u)), xtol=1e-13)


def test_linear_statics_is_exact():
    s = standin.make(g=0.0)
    sol = solve_statics(s, U)
    q_exact = np.linalg.solve(np.asarray(s.params.K), np.asarray(s.params.B) @ np.asarray(U))
    np.testing.assert_allclose(sol.q, q_exact, rtol=1e-12, atol=1e-14)
    assert bool(sol.converged) and sol.message == "successful"


@pytest.mark.parametrize(
    "jacobian, load_steps",
    [("analytic", None), ("finite-difference", None), ("analytic", 1), ("finite-difference", 1), ("analytic", 3)],
)
def test_nonlinear_statics_matches_reference(jacobian, load_steps):
    s = standin.make(g=1.5)
    sol = solve_statics(s, 3 * U, jacobian=jacobian, load_steps=load_steps)
    assert bool(sol.converged) and bool(sol.stable)
    assert float(sol.residual_norm) < 1e-10
    np.testing.assert_allclose(sol.q, _reference(s, 3 * U), rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(sol.tip, [s.n_dof, sol.q[-1], 0.0])
    taken = int(sol.load_steps_taken)
    assert int(sol.num_steps) >= taken and float(sol.load_fractions[taken - 1]) == 1.0
    if load_steps is None:  # a moderate load: the full-load step is on the branch
        assert taken == 1
    else:
        assert taken == load_steps
        np.testing.assert_allclose(sol.load_fractions, np.arange(1, load_steps + 1) / load_steps)


def test_newton_failure_is_reported():
    s = standin.make(g=1.0, stiffness=0.0)  # B u − sin q = 0 has no root when |B u| > 1
    u = jnp.array([10.0, 10.0])
    sol = solve_statics(s, u, throw=False, max_steps=20, load_steps=1)
    assert not bool(sol.converged)
    assert "maximum number of steps" in sol.message
    with pytest.raises(Exception, match="maximum number of steps"):
        solve_statics(s, u, max_steps=20, load_steps=1)


def test_continuation_stalls_at_the_limit_point():
    """B λu = sin q: the branch from q = 0 ends at the fold λ* = 1/max|B u| (where sin q_i = 1); the adaptive
    continuation approaches it, says that it stalled and returns the last equilibrium."""
    s = standin.make(g=1.0, stiffness=0.0)
    u = jnp.array([10.0, 10.0])
    fold = 1 / np.max(np.abs(np.asarray(s.params.B) @ np.asarray(u)))
    sol = solve_statics(s, u, throw=False, max_steps=20)
    assert not bool(sol.converged) and "load continuation stalled" in sol.message
    taken = int(sol.load_steps_taken)
    lam = np.asarray(sol.load_fractions[:taken])
    assert np.all(np.diff(lam) > 0) and 0.999 * fold < lam[-1] <= fold
    np.testing.assert_allclose(np.sin(sol.q), lam[-1] * np.asarray(s.params.B) @ np.asarray(u), atol=1e-10)
    with pytest.raises(Exception, match="load continuation stalled"):
        solve_statics(s, u, max_steps=20)


def test_stability_flag_matches_the_tangent_stiffness():
    """K q + g sin q = 0 with g ≫ ‖K‖ has the stable root q = 0 and roots near q_i ≈ 3.4 where −∂R/∂q =
    K + g diag(cos q) is negative definite (the pendulums stand nearly upright); ``stable`` is checked against
    numpy's eigenvalues."""
    s = standin.make(g=30.0)
    K, g = np.asarray(s.params.K), float(s.params.g)
    for q0, expected in ((0.1 * jnp.ones(4), True), (jnp.full(4, 3.3), False)):
        sol = solve_statics(s, jnp.zeros(2), q0=q0, load_steps=1)
        assert bool(sol.converged) and bool(sol.stable) == expected
        assert (np.linalg.eigvalsh(K + g * np.diag(np.cos(np.asarray(sol.q))))[0] > 0) == expected


@pytest.mark.parametrize("load_steps", [None, 3])
def test_derivatives_are_those_of_the_equilibrium(load_steps):
    """Implicit function theorem at the full load, whatever the path: ∂q/∂u = (K + g diag cos q)⁻¹ B, in reverse and
    forward mode, under vmap; q does not depend on the initial guess."""
    s = standin.make(g=1.5)
    K, B, g = (np.asarray(x) for x in (s.params.K, s.params.B, s.params.g))
    q = lambda u: solve_statics(s, u, load_steps=load_steps).q
    expected = np.linalg.solve(K + g * np.diag(np.cos(np.asarray(q(3 * U)))), B)
    np.testing.assert_allclose(jax.jacrev(q)(3 * U), expected, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(jax.jacfwd(q)(3 * U), expected, rtol=1e-10, atol=1e-12)
    batched = jax.vmap(jax.jacrev(q))(jnp.stack([3 * U, 3 * U]))
    np.testing.assert_allclose(batched[1], expected, rtol=1e-10, atol=1e-12)
    dq_dq0 = jax.jacrev(lambda q0: solve_statics(s, 3 * U, q0=q0, load_steps=load_steps).q)(jnp.zeros(4))
    np.testing.assert_array_equal(dq_dq0, 0.0)


def test_batch_of_systems_without_inputs():
    """u defaults to zeros, also for a batch of systems; the inputs-only batch still needs a (B, n_inputs) u."""
    members = [standin.make(g=g, n_inputs=0) for g in (0.5, 1.5)]
    batch = solve_statics_batch(stack(members), batch_system=True, q0=jnp.ones(4))
    for i, m in enumerate(members):
        np.testing.assert_allclose(batch.q[i], solve_statics(m, q0=jnp.ones(4)).q, atol=1e-12)
        np.testing.assert_allclose(batch.q[i], 0.0, atol=1e-12)
    with pytest.raises(ValueError, match="nothing is batched"):
        solve_statics_batch(members[0])


def test_batch_statics_equals_loop():
    """One vmap, chunks of 2 (lax.map over vmapped chunks) and one member at a time (chunks of 1, the last chunk of 3
    padded) all equal the reference solved member by member; a batch of systems in chunks too."""
    s = standin.make(g=1.5)
    us = jnp.asarray(np.random.default_rng(1).uniform(0, 3, size=(5, 2)))
    for chunk_size in (None, 2, 1, 3):
        batch = solve_statics_batch(s, us, chunk_size=chunk_size)
        for i in range(5):
            np.testing.assert_allclose(batch.q[i], _reference(s, us[i]), rtol=1e-9, atol=1e-10)
        assert batch.converged.shape == (5,) and bool(batch.converged.all())
    members = [standin.make(g=g) for g in (0.5, 1.5, 1.0)]
    batch = solve_statics_batch(stack(members), us[:3], batch_system=True, chunk_size=2)
    for i, m in enumerate(members):
        np.testing.assert_allclose(batch.q[i], _reference(m, us[i]), rtol=1e-9, atol=1e-10)
    with pytest.raises(ValueError, match="solve_statics_batch: chunk_size must be a positive int or None"):
        solve_statics_batch(s, us, chunk_size=0)


def test_bad_arguments():
    s = standin.make()
    with pytest.raises(ValueError, match=r"u must have shape \(2,\)"):
        solve_statics(s, jnp.zeros(3))
    with pytest.raises(ValueError, match="jacobian"):
        solve_statics(s, U, jacobian="numeric")
    with pytest.raises(ValueError, match=r"q0 must have shape \(4,\)"):
        solve_statics(s, U, q0=jnp.zeros(2))
    with pytest.raises(ValueError, match="solve_statics: 'u' must be finite"):
        solve_statics(s, jnp.array([1.0, jnp.nan]))
    with pytest.raises(ValueError, match="solve_statics: 'q0' must be finite"):
        solve_statics(s, U, q0=jnp.array([0.0, jnp.inf, 0.0, 0.0]))
    with pytest.raises(ValueError, match="solve_statics_batch: 'u' must be finite"):
        solve_statics_batch(s, jnp.array([[1.0, 0.0], [jnp.nan, 0.0]]))
    with pytest.raises(ValueError, match="solve_statics_batch: 'q0' must be finite"):
        solve_statics_batch(s, jnp.zeros((2, 2)), q0=jnp.full(4, jnp.nan))
    for bad in (0, 2.0):
        with pytest.raises(ValueError, match="load_steps must be None"):
            solve_statics(s, U, load_steps=bad)


# ------------------------------------------------------------------------------------------------ the seed 003 CDM


@pytest.mark.slow
def test_cdm_statics_physics():
    """Hanging CDM: under gravity alone it stays straight and stretches by ∫ρgA_below/(EA) (the weight below X,
    integrated independently here); a pulled cable bends it towards that cable's side (cable 1 runs along local z =
    world +x); analytic and finite-difference Newton Jacobians give the same equilibria."""
    from jaxse3.sim import scenarios, solve_statics_batch

    s = scenarios.cdm_system()
    u = jnp.array([[0.0] * 5, [30.0, 0, 0, 0, 0], [0, 40.0, 40.0, 0, 0], [0, 0, 0, 20.0, 0]])
    sol = solve_statics_batch(s, u)
    assert bool(sol.converged.all()) and float(sol.residual_norm.max()) < 1e-8
    # gravity only: straight along −z, stretched by the weight below each section
    L, rb, rt, rho, E, g = 0.5, 0.03, 0.015, 1000.0, 1e6, 9.81
    X = np.linspace(0, L, 20001)
    A = np.pi * (rb + (rt - rb) * X / L) ** 2
    below = np.array([np.trapezoid(A[i:], X[i:]) for i in range(0, len(X), 50)])
    stretch = np.trapezoid(rho * g * below / (E * A[::50]), X[::50])
    np.testing.assert_allclose(sol.tip[0, :2], 0.0, atol=1e-12)
    np.testing.assert_allclose(-sol.tip[0, 2] - L, stretch, rtol=2e-2)
    assert 1e-4 < stretch < 1e-2
    # cable 1 pulls the tip to +x, cables 2 + 3 together to −x; the helical cable twists (torsion coordinates ≠ 0)
    assert float(sol.tip[1, 0]) > 0.05 and abs(float(sol.tip[1, 1])) < 1e-9
    assert float(sol.tip[2, 0]) < -0.05 and abs(float(sol.tip[2, 1])) < 1e-9
    assert float(jnp.abs(sol.q[3, :5]).max()) > 1e-2
    fd = solve_statics_batch(s, u, jacobian="finite-difference")
    np.testing.assert_allclose(fd.q, sol.q, atol=1e-8)


def test_rod_statics_residual_takes_the_rest_path():
    """A rod system's residual at rest (inverse_dynamics_at_rest, no velocity terms) equals its dynamics residual at
    q̇ = q̈ = 0, value and Jacobian, and a system without it falls back to the latter."""
    rod = small_rod()
    s = rod_system(rod)
    plain = System(s.params, s.forward_dynamics, s.residual, s.points, s.n_dof, s.n_inputs, s.scale_loads)
    q, _, _, u = random_state(rod, 5)
    z = jnp.zeros_like(q)
    at_rest = jax.jit(jax.value_and_grad(lambda q: jnp.sum(s.statics_residual(q, u) ** 2)))
    moving = jax.jit(jax.value_and_grad(lambda q: jnp.sum(s.dynamics_residual(q, z, z, u) ** 2)))
    for a, b in zip(at_rest(q), moving(q)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(plain.statics_residual(q, u), s.dynamics_residual(q, z, z, u), rtol=0, atol=0)
    assert s.rest_residual is not None and plain.rest_residual is None
    assert R.ROD_RULE_CALLS["inverse_dynamics_at_rest"] > 0


def test_start_from_a_neighbouring_equilibrium():
    """``start=(system0, u0)``: from the equilibrium of another load and other parameters (gravity, stiffness) to the
    target's, along the straight line between them; the same equilibrium as scipy's, in one load step, and the same
    derivatives (implicit function theorem at the target)."""
    near = standin.make(g=1.5)
    target = standin.make(g=2.0, stiffness=1.3)
    q0 = solve_statics(near, U).q
    sol = solve_statics(target, 3 * U, q0, start=(near, U))
    assert bool(sol.converged) and int(sol.load_steps_taken) == 1
    np.testing.assert_allclose(sol.q, _reference(target, 3 * U), rtol=1e-9, atol=1e-10)
    direct = solve_statics(target, 3 * U)
    assert int(sol.num_steps) <= int(direct.num_steps)
    tip = lambda u, start: solve_statics(target, u, q0, start=start).q[-1]
    np.testing.assert_allclose(jax.grad(tip)(3 * U, (near, U)), jax.grad(tip)(3 * U, None), rtol=1e-10)
    # a batch of systems from one common equilibrium, as the loop of single solves
    gs = jnp.array([1.8, 2.0, 2.2])
    systems = stack([standin.make(g=float(g), stiffness=1.3) for g in gs])
    batch = solve_statics_batch(systems, jnp.tile(3 * U, (3, 1)), batch_system=True, q0=q0, start=(near, U))
    for i, g in enumerate(gs):
        one = solve_statics(standin.make(g=float(g), stiffness=1.3), 3 * U, q0, start=(near, U))
        np.testing.assert_allclose(batch.q[i], one.q, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize(
    "start, match",
    [
        ("not a tuple", "start must be a tuple"),
        ((standin.make(n=3), U), "start's system must have the structure of system"),
        ((standin.make(), jnp.zeros(3)), r"start's inputs u0 must have shape \(2,\)"),
        ((standin.make(), jnp.array([1.0, jnp.nan])), "start's u0"),
    ],
)
def test_bad_start(start, match):
    with pytest.raises(ValueError, match=match):
        solve_statics(standin.make(), U, start=start)

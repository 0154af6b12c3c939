"""Index-3 Newmark-β (:class:`ConstrainedNewmark`, seed 003 eqs. (52a), (52b) with the chain factors of eq. (12)) on
a pendulum in Cartesian coordinates: q = (x, y), the rod's length held by the constraint e = (|q|² − L²)/(2L) = 0 with
its multiplier λ (the rod's tension, −λ) in the residual r = m g − m q̈ + (q/L) λ.

Oracles: the pendulum's angle θ(t) from the one-degree-of-freedom ODE θ̈ = −(g/L) sin θ (diffrax Dopri8 at
tolerances 1e−12), the tension m(g cos θ + L θ̇²) of the same motion, the energy ½m|q̇|² + mgy, the hand-written
Jacobian against ``jax.jacfwd``, central finite differences for gradients, and a stack of pendulums against separate
solves.
"""

from __future__ import annotations

import functools

import diffrax
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxse3.integrate.newmark import ConstrainedNewmark, ConstrainedResidualTerm
from jaxse3.integrate.newton import newton_statistics

L, MASS = 0.7, 1.3
THETA0 = 2.0  # rad from the downward vertical, at rest: a large swing
T_FINAL = 2.0
N_SAVE = 21


def residual(t, q, qd, qdd, lam, args):
    (g,) = args
    return MASS * jnp.stack([jnp.zeros_like(g), -g]) - MASS * qdd + (q / L) * lam[0]


def constraint(t, q, args):
    return jnp.stack([(q @ q - L**2) / (2 * L)])


def jacobian(t, q, qd, qdd, lam, args):
    eye = jnp.eye(2)
    return eye * lam[0] / L, jnp.zeros((2, 2)), -MASS * eye, (q / L)[:, None], (q / L)[None, :]


def start(theta0):
    return jnp.stack([L * jnp.sin(theta0), -L * jnp.cos(theta0)]), jnp.zeros(2)


@functools.cache
def runner(user_jacobian: bool, iteration: str = "newton", stacked: bool = False, rho_inf: float | None = None):
    if stacked:
        stack = lambda f, n: lambda t, *a: jax.vmap(lambda *s: f(t, *s, a[-1]))(*a[:n])
        term = ConstrainedResidualTerm(stack(residual, 4), stack(constraint, 1), stack(jacobian, 4))
    else:
        term = ConstrainedResidualTerm(residual, constraint, jacobian if user_jacobian else None)

    def run(h, q0, qd0, g, tol, t_final=T_FINAL):
        options = dict(tol=tol, iteration=iteration)
        method = (
            ConstrainedNewmark(**options)
            if rho_inf is None
            else ConstrainedNewmark.generalized_alpha(rho_inf, **options)
        )
        saveat = diffrax.SaveAt(ts=jnp.linspace(0.0, t_final, N_SAVE), solver_state=True)
        sol = diffrax.diffeqsolve(
            term,
            method,
            0.0,
            t_final,
            h,
            (q0, qd0),
            args=(g,),
            saveat=saveat,
            max_steps=4096,
            throw=False,
        )
        return sol.ys, sol.solver_state.acceleration, newton_statistics(sol), sol.result == diffrax.RESULTS.successful

    return jax.jit(run)


@functools.cache
def reference(g=9.81):
    """(θ, θ̇) of θ̈ = −(g/L) sin θ at the saved times."""
    sol = diffrax.diffeqsolve(
        diffrax.ODETerm(lambda t, y, args: jnp.stack([y[1], -g / L * jnp.sin(y[0])])),
        diffrax.Dopri8(),
        0.0,
        T_FINAL,
        1e-3,
        jnp.array([THETA0, 0.0]),
        saveat=diffrax.SaveAt(ts=jnp.linspace(0.0, T_FINAL, N_SAVE)),
        stepsize_controller=diffrax.PIDController(rtol=1e-12, atol=1e-12),
        max_steps=100_000,
    )
    return np.asarray(sol.ys[:, 0]), np.asarray(sol.ys[:, 1])


def measure(h, user_jacobian=False, iteration="newton", rho_inf=None):
    (q, qd), x, stats, ok = runner(user_jacobian, iteration, rho_inf=rho_inf)(h, *start(THETA0), 9.81, 1e-14)
    assert bool(ok)
    theta, theta_d = reference()
    energy = 0.5 * MASS * jnp.sum(qd**2, axis=1) + MASS * 9.81 * q[:, 1]
    tension = MASS * (9.81 * np.cos(theta[-1]) + L * theta_d[-1] ** 2)
    return {
        "theta": float(np.abs(np.arctan2(q[:, 0], -q[:, 1]) - theta).max()),
        "e": float(np.abs(jax.vmap(lambda q: constraint(0.0, q, None))(q)).max()),
        "velocity": float(np.abs(jnp.sum(q * qd, axis=1) / L).max()),  # A q̇
        "energy": float(np.abs(energy - energy[0]).max()),
        "tension": float(abs(-x[2] - tension)),
        "jacobians": int(stats["jacobians"]),
    }


def test_reference_swing_is_large():
    theta, _ = reference()
    assert theta.min() < -1.9 and theta.max() > 1.9


@pytest.mark.parametrize("iteration", ["newton", "modified"])
def test_second_order_with_the_constraint_held_to_round_off(iteration):
    """Steps 4 and 2 ms, Newton tolerance 1e−14. Observed at 2 ms: |Δθ| 2.1e−4 rad, |e| ≤ 1.2e−15 m at every saved
    step (held by Newton, not drifting), |A q̇| ≤ 4.3e−5 m/s (not imposed: O(h²)), energy within 7.4e−4 J of the
    start (O(h²), no drift: the trapezoidal rule conserves only quadratic energies exactly), the tension −λ at 2 s
    within 0.37 N of m(g cos θ + Lθ̇²) = 24 N (the multiplier converges at second order too); θ, the energy, A q̇ and
    the tension fall by 4.0 when the step halves. Bounds ~2–5× above."""
    coarse, fine = measure(4e-3, iteration=iteration), measure(2e-3, iteration=iteration)
    for key in ("theta", "energy", "velocity", "tension"):
        assert 3.6 < coarse[key] / fine[key] < 4.4, (key, coarse, fine)
    assert fine["theta"] < 1e-3, fine
    assert fine["e"] < 1e-13, fine
    assert fine["velocity"] < 2e-4, fine
    assert fine["energy"] < 4e-3, fine
    assert fine["tension"] < 0.8, fine


@pytest.mark.parametrize("rho_inf", [0.8, 0.5])
def test_generalized_alpha_is_second_order_with_accurate_multipliers(rho_inf):
    """Generalised-α on the index-3 pendulum (Arnold & Brüls 2007): θ, the energy, A q̇ and the tension converge at
    second order with the constraint held to round-off, as with Newmark-β, but the tension is 80× (ρ∞ = 0.8) and 56×
    (0.5) more accurate at 2 ms — 4.7e−3 and 6.6e−3 N against 0.37 N: the numerical damping removes the (−1)ⁿ
    oscillation that the trapezoidal rule leaves in λ. The price: θ's error grows by 1.06× and 1.5× (2.2e−4 and
    3.2e−4 rad at 2 ms). Bounds ~2–4× above."""
    coarse, fine = measure(4e-3, rho_inf=rho_inf), measure(2e-3, rho_inf=rho_inf)
    for key in ("theta", "energy", "velocity", "tension"):
        assert 3.6 < coarse[key] / fine[key] < 4.4, (key, coarse, fine)
    assert fine["e"] < 1e-13, fine
    assert fine["theta"] < 1e-3, fine
    assert fine["tension"] < 0.02, fine


def test_user_jacobian_equals_autodiff_and_modified_saves_jacobians():
    """The hand-written partials give the same motion as ``jax.jacfwd`` of r and e with the same Newton iterations
    (exact partials: quadratic convergence, 1838 updates in 1000 steps); the chord iteration with a kept inverse the
    same motion with fewer Jacobian evaluations. "The same" is to the Newton tolerance amplified by 1/(βh²) in q̈ and
    λ: where round-off decides whether a step takes one more update, the motions part by up to 2.4e−9 over the 2 s
    swing (observed under the tests' XLA options; bitwise equal under XLA's defaults)."""
    auto = runner(False)(2e-3, *start(THETA0), 9.81, 1e-14)
    user = runner(True)(2e-3, *start(THETA0), 9.81, 1e-14)
    chord = runner(True, "modified")(2e-3, *start(THETA0), 9.81, 1e-14)
    assert int(auto[2]["total"]) == int(user[2]["total"]) < 2 * 1000
    for a, b in ((auto, user), (user, chord)):
        for x, y in zip(jax.tree.leaves(a[0]), jax.tree.leaves(b[0])):
            np.testing.assert_allclose(x, y, rtol=0, atol=1e-8)
    assert int(chord[2]["jacobians"]) < int(user[2]["jacobians"]) // 2


@pytest.mark.parametrize(("iteration", "rho_inf"), [("newton", None), ("modified", None), ("modified", 0.8)])
def test_gradients_match_finite_differences(iteration, rho_inf):
    """d/d(θ₀, g) of a function of the state at 0.4 s (100 steps) through every step's implicit-function rule (with
    generalised-α's pseudo-acceleration in the previous state) and the start's (q̈₀, λ₀). (Over longer runs central
    differences lose digits: a residual error δR moves the root by ~δR/(βh²).)"""
    run = runner(False, iteration, rho_inf=rho_inf)

    def loss(theta0, g):
        (q, qd), *_ = run(4e-3, *start(theta0), g, 1e-14, 0.4)
        return q[-1, 0] + 0.1 * qd[-1, 1]

    grads = jax.jit(jax.grad(loss, argnums=(0, 1)))(THETA0, 9.81)
    # a step of 1e−4: the differences' truncation error is ~1e−8 relative, while at 1e−6 the Newton solves' round-off
    # (δR ~ 1e−14 over βh² ~ 4e−6) already moves them by ~1e−6 relative, as much as the tolerance
    e = 1e-4
    fd = (
        (loss(THETA0 + e, 9.81) - loss(THETA0 - e, 9.81)) / (2 * e),
        (loss(THETA0, 9.81 + e) - loss(THETA0, 9.81 - e)) / (2 * e),
    )
    np.testing.assert_allclose(grads, fd, rtol=1e-6)


def test_stack_of_systems_equals_separate_solves():
    thetas = jnp.array([THETA0, 0.5, -1.0])
    q0s, qd0s = jax.vmap(start)(thetas)
    (q, _), x, _, ok = runner(True, stacked=True)(4e-3, q0s, qd0s, 9.81, 1e-14)
    assert bool(ok) and q.shape == (N_SAVE, 3, 2) and x.shape == (3, 3)
    for i in range(3):
        (qi, _), xi, _, _ = runner(True)(4e-3, q0s[i], qd0s[i], 9.81, 1e-14)
        np.testing.assert_allclose(q[:, i], qi, rtol=0, atol=1e-12)
        # (q̈, λ): with γ = ½ they carry an undamped (−1)ⁿ mode of the index-3 system, in which round-off differences
        # (one convergence test for the stack) persist, amplified by 1/(βh²) (up to 3.2e−5 seen on |x| ≈ 10); the
        # positions do not see it
        np.testing.assert_allclose(x[i], xi, rtol=0, atol=1e-4)


def test_a_failed_start_is_a_result_code():
    """A start whose (q̈₀, λ₀) solve does not converge (here a non-finite position) fails the first step with a result
    code, not an exception, under ``throw=False``."""
    q0 = jnp.array([jnp.nan, 0.0])
    *_, ok = runner(False)(4e-3, q0, jnp.zeros(2), 9.81, 1e-14)
    assert not bool(ok)

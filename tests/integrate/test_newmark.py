"""Newmark-β (seed 003 eqs. (10)–(12)) and its generalised-α form on a two-degree-of-freedom oscillator.

Oracles: the exact solution of the linear system (matrix exponential of the first-order form), scipy DOP853 at
rtol = atol = 1e-12 for the nonlinear one, exact energy conservation of the trapezoidal rule (β = ¼, γ = ½) for the
linear undamped case, the spectral radius of generalised-α's one-step map (Chung & Hulbert 1993: ρ∞ at infinite
frequency, 1 for ρ∞ = 1), the hand-written Jacobian vs ``jax.jacfwd``, and central finite differences for gradients.
"""

from __future__ import annotations

import functools

import diffrax
import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.linalg
from scipy.integrate import solve_ivp

from jaxse3.integrate.newmark import Newmark, NewmarkState, SecondOrderResidualTerm, chung_hulbert
from jaxse3.integrate.newton import newton_statistics

MASS = np.array([[2.0, 0.3], [0.3, 1.0]])
STIFF = np.array([[4.0, -1.0], [-1.0, 3.0]])
Q0, QD0 = np.array([0.8, -0.4]), np.array([0.1, 0.5])


def residual(t, q, qd, qdd, args):
    """r = M q̈ + c K q̇ + K q + ε sin q (Rayleigh damping c, nonlinearity ε)."""
    c, eps = args
    K = jnp.asarray(STIFF)
    return jnp.asarray(MASS) @ qdd + c * K @ qd + K @ q + eps * jnp.sin(q)


def jacobian(t, q, qd, qdd, args):
    c, eps = args
    K = jnp.asarray(STIFF)
    return K + eps * jnp.diag(jnp.cos(q)), c * K, jnp.asarray(MASS)


def stacked_jacobian(t, q, qd, qdd, args):
    """Blocks (B, 2, 2) of a stack of B oscillators (each row of q one system; args shared)."""
    return jax.vmap(lambda q, qd, qdd: jacobian(t, q, qd, qdd, args))(q, qd, qdd)


def stacked_residual(t, q, qd, qdd, args):
    return jax.vmap(lambda q, qd, qdd: residual(t, q, qd, qdd, args))(q, qd, qdd)


def method(rho_inf: float | None = None, **options) -> Newmark:
    """Newmark-β (None) or generalised-α with spectral radius ``rho_inf`` at infinity."""
    return Newmark(**options) if rho_inf is None else Newmark.generalized_alpha(rho_inf, **options)


@functools.cache
def runner(user_jacobian: bool, iteration: str = "newton", stacked: bool = False, rate: float = 0.1, rho_inf=None):
    if stacked:
        term = SecondOrderResidualTerm(stacked_residual, stacked_jacobian)
    else:
        term = SecondOrderResidualTerm(residual, jacobian if user_jacobian else None)

    def run(h, t1, q0, qd0, args, tol):
        saveat = diffrax.SaveAt(ts=t1 * jnp.linspace(0.0, 1.0, 11), solver_state=True)
        sol = diffrax.diffeqsolve(
            term,
            method(rho_inf, tol=tol, iteration=iteration, rate=rate),
            0.0,
            t1,
            h,
            (q0, qd0),
            args=args,
            saveat=saveat,
            max_steps=4096,
            throw=False,
        )
        return sol.ys, newton_statistics(sol), sol.result == diffrax.RESULTS.successful

    return jax.jit(run)


def solve(
    h,
    t1=2.0,
    c=0.0,
    eps=0.0,
    q0=Q0,
    qd0=QD0,
    tol=1e-12,
    user_jacobian=False,
    iteration="newton",
    rate=0.1,
    rho_inf=None,
):
    run = runner(user_jacobian, iteration, False, rate, rho_inf)
    return run(h, t1, jnp.asarray(q0), jnp.asarray(qd0), (c, eps), tol)


def exact_linear(t, c):
    """q(t), q̇(t) of M q̈ + cK q̇ + K q = 0 from expm of the first-order system (ε = 0)."""
    Minv = np.linalg.inv(MASS)
    A = np.block([[np.zeros((2, 2)), np.eye(2)], [-Minv @ STIFF, -c * Minv @ STIFF]])
    x = scipy.linalg.expm(A * t) @ np.concatenate([Q0, QD0])
    return x[:2], x[2:]


@functools.cache
def reference_nonlinear(t1, c, eps):
    def rhs(t, x):
        q, qd = x[:2], x[2:]
        qdd = np.linalg.solve(MASS, -(c * STIFF @ qd + STIFF @ q + eps * np.sin(q)))
        return np.concatenate([qd, qdd])

    sol = solve_ivp(rhs, (0.0, t1), np.concatenate([Q0, QD0]), method="DOP853", rtol=1e-12, atol=1e-12)
    return sol.y[:2, -1], sol.y[2:, -1]


def test_linear_damped_order_two_against_exact():
    errs = []
    for h in (0.04, 0.02, 0.01):
        ys, _, ok = solve(h, c=0.1)
        assert ok
        q_ex, qd_ex = exact_linear(2.0, 0.1)
        errs.append([np.max(np.abs(ys[0][-1] - q_ex)), np.max(np.abs(ys[1][-1] - qd_ex))])
    errs = np.array(errs)
    assert errs[0, 0] < 1e-2
    np.testing.assert_allclose(np.log2(errs[:-1] / errs[1:]), 2.0, atol=0.05)


def test_undamped_linear_energy_is_conserved():
    """β = ¼, γ = ½ conserves ½q̇ᵀMq̇ + ½qᵀKq exactly for the linear undamped system (to Newton tolerance)."""
    ys, stats, ok = solve(0.1, t1=5.0)
    assert ok
    q, qd = np.asarray(ys[0]), np.asarray(ys[1])
    energy = 0.5 * np.einsum("ti,ij,tj->t", qd, MASS, qd) + 0.5 * np.einsum("ti,ij,tj->t", q, STIFF, q)
    np.testing.assert_allclose(energy, energy[0], rtol=1e-13)
    assert float(stats["max_per_step"]) == 1  # linear residual: one Newton update per step


@pytest.mark.parametrize("rho_inf", [None, 0.0, 0.6, 1.0])
def test_nonlinear_order_two_and_user_jacobian_equals_autodiff(rho_inf):
    """Newmark-β and generalised-α (from asymptotic annihilation to no damping): second order in q."""
    errs = []
    q_ref, _qd_ref = reference_nonlinear(2.0, 0.05, 1.5)
    for h in (0.04, 0.02, 0.01):
        ys_ad, stats, ok = solve(h, c=0.05, eps=1.5, rho_inf=rho_inf)
        ys_user, stats_user, ok_user = solve(h, c=0.05, eps=1.5, user_jacobian=True, rho_inf=rho_inf)
        assert ok and ok_user
        np.testing.assert_allclose(ys_user[0], ys_ad[0], rtol=0, atol=1e-13)
        np.testing.assert_allclose(ys_user[1], ys_ad[1], rtol=0, atol=1e-13)
        assert int(stats["total"]) == int(stats_user["total"])
        assert 1.0 <= float(stats["per_step"]) <= 3.0
        errs.append(np.max(np.abs(ys_ad[0][-1] - q_ref)))
    errs = np.array(errs)
    np.testing.assert_allclose(np.log2(errs[:-1] / errs[1:]), 2.0, atol=0.1)


def step_map(solver: Newmark, omega_h: float) -> np.ndarray:
    """The one-step map of ``solver`` on q̈ + q = 0 with step h = ωh, on the state (q, h q̇, h² a) (q̈_n = −q_n holds at
    t_n), column by column: the step is linear, so one Newton update solves it."""
    term = SecondOrderResidualTerm(lambda t, q, qd, qdd, args: qdd + q)
    h = omega_h

    def step(z):
        q, qd, a = z[:1], z[1:2] / h, z[2:] / h**2
        zero = jnp.asarray(0, jnp.int32)
        state = NewmarkState(-q, a, zero, zero, zero, None)
        (q1, qd1), _, _, state1, _ = solver.step(term, 0.0, h, (q, qd), None, state, False)
        return jnp.concatenate([q1, h * qd1, h * h * state1.pseudo_acceleration])

    return np.stack([np.asarray(step(jnp.asarray(e))) for e in np.eye(3)], axis=1)


@pytest.mark.parametrize("rho_inf", [0.0, 0.5, 0.8, 1.0])
def test_generalized_alpha_damps_high_frequencies_to_rho_inf(rho_inf):
    """Chung & Hulbert's design: the spectral radius of the one-step map tends to ρ∞ as ωh → ∞ and to 1 as ωh → 0
    (dissipation only where the step cannot resolve the motion); for ρ∞ = 1 it is 1 at every ωh, as for the
    trapezoidal Newmark-β (α_m = α_f = 0). At ωh → ∞ the eigenvalue −ρ∞ is triple, so the radius approaches it like
    (ωh)^(−2/3) (measured: 7.7e−3 above ρ∞ at ωh = 10³, 7.8e−5 at 10⁶, where the Newton tolerance must allow for
    the round-off of a residual scaled by β'h² ≈ 10¹¹)."""
    alpha_m, alpha_f, gamma, beta = chung_hulbert(rho_inf)
    assert gamma == pytest.approx(0.5 - alpha_m + alpha_f) and beta == pytest.approx(
        0.25 * (1 - alpha_m + alpha_f) ** 2
    )
    radius = lambda wh, tol, solver=None: np.abs(
        np.linalg.eigvals(step_map(solver or Newmark.generalized_alpha(rho_inf, tol=tol), wh))
    ).max()
    far, farther = radius(1e3, 1e-8), radius(1e6, 1e-3)
    assert abs(farther - rho_inf) < 2e-4 and abs(farther - rho_inf) < 0.05 * abs(far - rho_inf) + 5e-5
    assert radius(1e-2, 1e-12) == pytest.approx(1.0, abs=1e-8)
    if rho_inf == 1.0:
        for wh in (0.1, 1.0, 10.0):
            assert radius(wh, 1e-10) == pytest.approx(1.0, abs=1e-12)
            assert radius(wh, 1e-10, Newmark(tol=1e-10)) == pytest.approx(1.0, abs=1e-12)
    else:
        assert radius(10.0, 1e-10) < 0.95  # damped well before ωh = ∞ (0.24, 0.68, 0.93 for ρ∞ = 0, 0.5, 0.8)


def test_generalized_alpha_without_damping_is_the_trapezoidal_rule():
    """ρ∞ = 1 gives α_m = α_f = ½, γ = ½, β = ¼: from a_0 = q̈_0 every a_n = q̈_n, so the steps are Newmark-β's."""
    ys, _, _ = solve(0.04, c=0.05, eps=1.5)
    ys_ga, _, _ = solve(0.04, c=0.05, eps=1.5, rho_inf=1.0)
    for x, y in zip(ys, ys_ga):
        np.testing.assert_allclose(y, x, rtol=0, atol=1e-13)


def test_generalized_alpha_rejects_rho_inf_outside_0_1():
    for bad in (-0.1, 1.5):
        with pytest.raises(ValueError, match="rho_inf"):
            Newmark.generalized_alpha(bad)


def test_newton_failure_is_reported():
    _, _, ok = solve(0.04, c=0.05, eps=1.5, tol=0.0)
    assert not ok


def test_vmap_over_initial_conditions():
    q0s = jnp.asarray(Q0) + jnp.array([[0.0, 0.0], [0.3, -0.2], [-0.5, 0.1]])
    run = runner(False)
    ys_b, _, ok = jax.jit(jax.vmap(run, in_axes=(None, None, 0, None, None, None)))(
        0.04, 2.0, q0s, jnp.asarray(QD0), (0.05, 1.5), 1e-12
    )
    assert bool(jnp.all(ok))
    for i in range(3):
        ys, _, _ = run(0.04, 2.0, q0s[i], jnp.asarray(QD0), (0.05, 1.5), 1e-12)
        np.testing.assert_allclose(ys_b[0][i], ys[0], rtol=1e-12, atol=1e-13)


def test_gradient_matches_finite_differences():
    run = runner(True)

    def loss(q0, eps):
        ys, _, _ = run(0.04, 1.0, q0, jnp.asarray(QD0), (0.05, eps), 1e-12)
        return jnp.sum(ys[0][-1] ** 2) + jnp.sum(jnp.sin(ys[1][-1]))

    g_q0, g_eps = jax.jit(jax.grad(loss, argnums=(0, 1)))(jnp.asarray(Q0), 1.5)
    e = 1e-6
    fd_q0 = [(loss(jnp.asarray(Q0) + e * d, 1.5) - loss(jnp.asarray(Q0) - e * d, 1.5)) / (2 * e) for d in np.eye(2)]
    fd_eps = (loss(jnp.asarray(Q0), 1.5 + e) - loss(jnp.asarray(Q0), 1.5 - e)) / (2 * e)
    np.testing.assert_allclose(g_q0, fd_q0, rtol=1e-7, atol=1e-8)
    np.testing.assert_allclose(g_eps, fd_eps, rtol=1e-7, atol=1e-8)


def test_modified_newton_same_solution_fewer_jacobians():
    """iteration="modified" (J kept across steps, refreshed when an update contracts the residual by less than
    ``rate``) solves the same equations: the same trajectory to the Newton tolerance, with fewer Jacobians."""
    h, t1 = 0.2, 4.0  # a strong nonlinearity (ε = 60) and long steps, so that J changes noticeably per step
    ys, stats, ok = solve(h, t1, c=0.05, eps=60.0)
    assert ok and int(stats["jacobians"]) == int(stats["total"]) + round(t1 / h)  # Newton: one per iterate
    for rate, most in ((0.1, 3), (1e-3, int(stats["jacobians"]) // 2)):  # measured: 2 and 32 of 88
        ys_m, stats_m, ok_m = solve(h, t1, c=0.05, eps=60.0, iteration="modified", rate=rate)
        assert ok_m and 1 < int(stats_m["jacobians"]) <= most, (rate, stats_m)
        np.testing.assert_allclose(ys_m[0], ys[0], rtol=0, atol=1e-11)
        np.testing.assert_allclose(ys_m[1], ys[1], rtol=0, atol=1e-10)
    _ys_lin, stats_lin, _ = solve(0.02, 2.0, c=0.05, iteration="modified")  # linear: J never changes
    assert int(stats_lin["jacobians"]) == 1 and int(stats_lin["max_per_step"]) == 1  # exact J: one update


def test_modified_newton_gradient_matches_finite_differences():
    """The root's derivative is the implicit-function one at the exact Jacobian, not the stale chord matrix."""
    run = runner(True, "modified")

    def loss(eps):
        ys, _, _ = run(0.04, 1.0, jnp.asarray(Q0), jnp.asarray(QD0), (0.05, eps), 1e-12)
        return jnp.sum(ys[0][-1] ** 2)

    g = jax.jit(jax.grad(loss))(1.5)
    e = 1e-6
    np.testing.assert_allclose(g, (loss(1.5 + e) - loss(1.5 - e)) / (2 * e), rtol=1e-7)


@pytest.mark.parametrize("iteration", ["newton", "modified"])
def test_stack_of_systems_equals_separate_solves(iteration):
    """y0 of shape (B, n) with block Jacobians: B independent systems on one time grid = B separate solves."""
    q0s = jnp.asarray(Q0) + jnp.array([[0.0, 0.0], [0.3, -0.2], [-0.5, 0.1]])
    qd0s = jnp.broadcast_to(jnp.asarray(QD0), q0s.shape)
    ys_b, _stats_b, ok = runner(True, iteration, stacked=True)(0.04, 2.0, q0s, qd0s, (0.05, 1.5), 1e-12)
    assert bool(ok) and ys_b[0].shape == (11, 3, 2)
    for i in range(3):
        ys, _, _ = solve(0.04, c=0.05, eps=1.5, q0=q0s[i], iteration=iteration)
        np.testing.assert_allclose(ys_b[0][:, i], ys[0], rtol=0, atol=1e-11)


@pytest.mark.parametrize(("iteration", "rho_inf"), [("newton", None), ("modified", None), ("modified", 0.6)])
def test_gradients_in_the_step_size_the_parameters_and_a_stack_match_finite_differences(iteration, rho_inf):
    """The root's derivative from one linearisation (the step's partials give its tangent in the previous state —
    with generalised-α's pseudo-acceleration — and in h): the gradient with respect to h (25 steps of h), the damping
    and a stack's initial positions equals central differences."""
    run = runner(True, iteration, rho_inf=rho_inf)
    run_stack = runner(True, iteration, stacked=True, rho_inf=rho_inf)
    q0s = jnp.asarray(Q0) + jnp.array([[0.0, 0.0], [0.3, -0.2]])
    qd0s = jnp.broadcast_to(jnp.asarray(QD0), q0s.shape)

    def loss(h, c, q0s):
        ys, _, _ = run(h, 25 * h, jnp.asarray(Q0), jnp.asarray(QD0), (c, 1.5), 1e-13)
        ys_b, _, _ = run_stack(0.04, 1.0, q0s, qd0s, (0.05, 1.5), 1e-13)
        return jnp.sum(ys[0][-1] ** 2) + jnp.sum(jnp.sin(ys[1][-1])) + jnp.sum(ys_b[0][-1] * ys_b[1][-1])

    args = (jnp.asarray(0.04), jnp.asarray(0.05), q0s)
    grads = jax.jit(jax.grad(loss, argnums=(0, 1, 2)))(*args)
    e = 1e-6
    for i, g in enumerate(grads):
        for d in np.eye(g.size):
            d = jnp.asarray(d.reshape(g.shape))
            shifted = lambda s: loss(*(a + s * d if j == i else a for j, a in enumerate(args)))
            fd = (shifted(e) - shifted(-e)) / (2 * e)
            np.testing.assert_allclose(jnp.vdot(g, d), fd, rtol=1e-6, atol=1e-9, err_msg=f"argument {i}")


def test_bad_state_shape():
    term = SecondOrderResidualTerm(residual)
    with pytest.raises(ValueError, match="two vectors"):
        diffrax.diffeqsolve(
            term, Newmark(), 0.0, 0.1, 0.05, (jnp.zeros((2, 1, 1)), jnp.zeros((2, 1, 1))), args=(0.0, 0.0)
        )
    with pytest.raises(ValueError, match=r"needs the term's jacobian"):
        diffrax.diffeqsolve(term, Newmark(), 0.0, 0.1, 0.05, (jnp.zeros((3, 2)), jnp.zeros((3, 2))), args=(0.0, 0.0))
    with pytest.raises(ValueError, match="iteration must be"):
        Newmark(iteration="chord")

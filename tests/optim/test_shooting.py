"""Single shooting: on a linear system with a quadratic cost the knots that L-BFGS finds equal the minimiser of the
exact quadratic (built from matrix exponentials, independently of the simulator); bounds hold (reparameterised for
L-BFGS, projected for Adam) and the bounded optimum is a KKT point; the cost is the trapezoidal rule of the running
cost plus the terminal cost; a non-finite cost stops with the last good iterate; bad input is named; a solution
survives a save/load round trip. Multiple shooting: its transcription is single shooting where the segments
join, and it converges to the same exact minimiser."""

import jax.numpy as jnp
import numpy as np
import pytest
import scipy.linalg

from jaxse3.optim import Problem, Solution, costs, gradient_mode, solve_shooting
from jaxse3.optim.segments import MultipleShooting
from jaxse3.optim.shooting import FORWARD_MAX, _cost_and_gradient
from tests.sim import standin

T, N_KNOTS, N_SAVE = 1.0, 4, 21
TARGET = np.array([0.3, -0.2, 0.1, 0.25])
W_EFFORT = 1e-2


def _running(t, q, qd, u):
    return W_EFFORT * costs.effort(u)


def _terminal(q, qd):
    return 0.5 * jnp.sum((q - TARGET) ** 2)


def _problem(**kw):
    """The linear stand-in (M q̈ + D q̇ + K q = B u) reaching TARGET; one compiled step serves every test (the costs
    are module-level functions and the bounds are arrays). Tsit5: the stand-in is not stiff and the optimiser, not
    the integrator, is under test here (gradients through Kvaerno5 and Newmark: tests/sim/test_gradients.py); under
    the tests' compiler settings Kvaerno5 made this file six times slower (285 s against 49 s, 2026-12-02)."""
    system = standin.make(g=0.0)
    options = dict(running=_running, terminal=_terminal, n_knots=N_KNOTS, kind="linear", n_save=N_SAVE)
    return Problem(system, T, simulation=dict(solver="tsit5", rtol=1e-11, atol=1e-13), **(options | kw))


def _exact_quadratic(system):
    """(P, S, w): q(T) = P c for flattened knots c (from rest; first-order hold on each knot interval, exactly by the
    matrix exponential of the system augmented with u and u̇), u at the samples = S c, trapezoid weights w."""
    p = system.params
    M, K, D, B = (np.asarray(a) for a in (p.M, p.K, p.D, p.B))
    n, m = B.shape
    Minv = np.linalg.inv(M)
    A = np.zeros((2 * n + 2 * m, 2 * n + 2 * m))
    A[:n, n : 2 * n] = np.eye(n)
    A[n : 2 * n, :n], A[n : 2 * n, n : 2 * n], A[n : 2 * n, 2 * n : 2 * n + m] = -Minv @ K, -Minv @ D, Minv @ B
    A[2 * n : 2 * n + m, 2 * n + m :] = np.eye(m)
    h = T / (N_KNOTS - 1)
    E = scipy.linalg.expm(A * h)
    P = np.zeros((n, N_KNOTS * m))
    for j in range(N_KNOTS * m):
        c = np.eye(N_KNOTS * m)[j].reshape(N_KNOTS, m)
        x = np.zeros(2 * n)
        for k in range(N_KNOTS - 1):
            x = (E @ np.concatenate([x, c[k], (c[k + 1] - c[k]) / h]))[: 2 * n]
        P[:, j] = x[:n]
    ts = np.linspace(0, T, N_SAVE)
    S = np.einsum(
        "ks,ij->sikj", np.stack([np.interp(ts, np.linspace(0, T, N_KNOTS), e) for e in np.eye(N_KNOTS)]), np.eye(m)
    )
    S = S.reshape(N_SAVE * m, N_KNOTS * m)
    w = np.full(N_SAVE, T / (N_SAVE - 1))
    w[[0, -1]] /= 2
    return P, S, np.repeat(w, m)


def _exact_cost(c, P, S, w):
    c = np.ravel(c)
    r = P @ c - TARGET
    return 0.5 * r @ r + W_EFFORT * 0.5 * np.sum(w * (S @ c) ** 2)


def test_cost_is_the_trapezoidal_rule_plus_the_terminal_cost():
    problem = _problem()
    c = np.random.default_rng(0).normal(size=problem.control_shape)
    P, S, w = _exact_quadratic(problem.system)
    np.testing.assert_allclose(problem.cost(c), _exact_cost(c, P, S, w), rtol=1e-8)


def test_the_gradient_in_forward_and_in_reverse_mode_is_the_exact_quadratics():
    """The solver's gradient ∇J = Pᵀ(P c − target) + w_u Sᵀ W S c: in forward mode (the default up to FORWARD_MAX
    decision variables) and in reverse mode (beyond, or when the simulation options ask for a reverse adjoint)."""
    forward = _problem()
    options = dict(running=_running, terminal=_terminal, n_knots=N_KNOTS, n_save=N_SAVE)
    simulation = dict(solver="tsit5", rtol=1e-11, atol=1e-13, adjoint="checkpoint")
    reverse = Problem(forward.system, T, simulation=simulation, **options)
    many = _problem(n_knots=FORWARD_MAX // 2 + 1)  # two inputs
    assert [gradient_mode(p) for p in (forward, reverse, many)] == ["forward", "reverse", "reverse"]
    assert gradient_mode(MultipleShooting(forward, 2)) == "forward"  # 8 knots and 8 states
    c = np.random.default_rng(5).normal(size=forward.control_shape)
    P, S, w = _exact_quadratic(forward.system)
    want = (P.T @ (P @ np.ravel(c) - TARGET) + W_EFFORT * S.T @ (w * (S @ np.ravel(c)))).reshape(c.shape)
    no_constraints = (jnp.zeros(0), jnp.zeros((N_SAVE, 0)), jnp.asarray(1.0))
    for problem in (forward, reverse):
        L, _, _, g, _ = _cost_and_gradient(problem, jnp.asarray(c), no_constraints)
        np.testing.assert_allclose(L, _exact_cost(c, P, S, w), rtol=1e-8)
        np.testing.assert_allclose(g, want, rtol=1e-6, atol=1e-8 * np.abs(want).max())


def test_lbfgs_finds_the_minimiser_of_the_exact_quadratic():
    problem = _problem()
    P, S, w = _exact_quadratic(problem.system)
    H = P.T @ P + W_EFFORT * S.T @ (w[:, None] * S)
    c_star = np.linalg.solve(H, P.T @ TARGET)
    sol = solve_shooting(problem, max_iters=60, gtol=1e-8)
    # the adaptive solver's step choices make J noisy at ~1e−10 relative: the line search may stall with a projected
    # gradient a little above gtol (2.9e−8 was seen, with the knots 5e−6 from c*), which the checks below bound
    assert sol.converged or "line search found no decrease" in sol.message, sol.message
    # H's smallest eigenvalue is ~1e-3: a gradient of 1e-8 leaves knots up to ~1e-5 from c*
    np.testing.assert_allclose(np.ravel(sol.values), c_star, atol=1e-5 * np.abs(c_star).max())
    np.testing.assert_allclose(sol.cost, _exact_cost(c_star, P, S, w), rtol=1e-9)
    assert sol.cost_history[0] > sol.cost and sol.iterations == len(sol.cost_history) - 1
    assert sol.u.shape == (N_SAVE - 1, 2) and sol.x.shape == (N_SAVE, 8) and sol.tip.shape == (N_SAVE, 3)


@pytest.mark.parametrize("optimiser", ["lbfgs", "adam"])
def test_bounded_solutions_stay_in_the_box_and_are_kkt_points(optimiser):
    """With 0 ≤ u ≤ 1.5 (some bounds active): every knot stays in the box; at the solution the exact gradient
    vanishes on the free knots and points outwards on the active ones."""
    lower, upper = 0.0, 1.5
    problem = _problem(lower=lower, upper=upper)
    P, S, w = _exact_quadratic(problem.system)
    kw = dict(max_iters=60, gtol=1e-7) if optimiser == "lbfgs" else dict(max_iters=400, learning_rate=2e-2, gtol=1e-4)
    sol = solve_shooting(problem, np.full(problem.control_shape, 0.5), optimiser=optimiser, **kw)
    c = np.ravel(sol.values)
    assert np.all(c >= lower) and np.all(c <= upper)
    g = P.T @ (P @ c - TARGET) + W_EFFORT * S.T @ (w * (S @ c))
    at_lower, at_upper = c < lower + 1e-4, c > upper - 1e-4
    assert at_lower.any() or at_upper.any(), "the test needs an active bound"
    free = ~(at_lower | at_upper)
    tol = 1e-5 if optimiser == "lbfgs" else 2e-4
    assert np.all(np.abs(g[free]) < tol) and np.all(g[at_lower] > -tol) and np.all(g[at_upper] < tol)
    assert sol.cost < sol.cost_history[0]


def test_a_non_finite_cost_stops_with_the_last_good_iterate():
    problem = _problem()
    explode = Problem(
        problem.system,
        T,
        terminal=lambda q, qd: jnp.where(jnp.sum(q) > 0.0, jnp.nan, -jnp.sum(q)),  # NaN once the motion goes up
        n_knots=N_KNOTS,
        n_save=N_SAVE,
        simulation=dict(problem.simulation),
    )
    sol = solve_shooting(explode, optimiser="adam", learning_rate=1.0, max_iters=50)
    assert not sol.converged and "not finite" in sol.message
    assert np.all(np.isfinite(sol.cost_history)) and np.isfinite(explode.cost(sol.values))


def test_bad_problems_are_named():
    system = standin.make()
    with pytest.raises(ValueError, match="the terminal cost must return a scalar, got shape"):
        Problem(system, T, terminal=lambda q, qd: q)
    with pytest.raises(ValueError, match=r"lower > upper for inputs \[1\]"):
        Problem(system, T, lower=[0.0, 2.0], upper=[1.0, 1.0])
    with pytest.raises(ValueError, match="not a whole number of Newmark steps"):
        Problem(system, 1.0, simulation=dict(solver="newmark", dt=0.3))
    with pytest.raises(ValueError, match="kind must be one of"):
        Problem(system, T, kind="spline")
    problem = Problem(system, T, n_knots=3)
    with pytest.raises(ValueError, match=r"initial must have shape \(3, 2\), got \(2, 3\)"):
        solve_shooting(problem, np.zeros((2, 3)))
    with pytest.raises(ValueError, match="optimiser must be one of"):
        solve_shooting(problem, optimiser="bfgs")


def test_solution_round_trip(tmp_path):
    sol = solve_shooting(_problem(), max_iters=2)
    path = sol.save(tmp_path / "reach", metadata={"target": TARGET.tolist()})
    back = Solution.load(path)
    for name in ("values", "t", "u", "x", "tip", "cost_history", "gradient_history"):
        np.testing.assert_array_equal(getattr(back, name), getattr(sol, name))
    assert (back.iterations, back.converged, back.message) == (sol.iterations, sol.converged, sol.message)
    assert back.info == sol.info
    raw = np.load(path)
    assert raw["u"].shape == (N_SAVE - 1, 2) and raw["x"].shape == (N_SAVE, 8)


def _terminal_target(q, qd):
    return q[:2] - TARGET[:2]


def _first_input_at_least(t, q, qd, u):
    return U_MIN - u[:1]


U_MIN = -1.0


def test_terminal_equality_constraint_gives_the_exact_constrained_minimiser():
    """q₁(T), q₂(T) exactly at their targets: the KKT system of the equality-constrained quadratic
    [[H, Pᵀ], [P, 0]] [c; λ] = [b; target] is the oracle, multipliers included."""
    problem = _problem(terminal_constraint=_terminal_target)
    P, S, w = _exact_quadratic(problem.system)
    H = P.T @ P + W_EFFORT * S.T @ (w[:, None] * S)
    P2 = P[:2]
    kkt = np.block([[H, P2.T], [P2, np.zeros((2, 2))]])
    solution = np.linalg.solve(kkt, np.concatenate([P.T @ TARGET, TARGET[:2]]))
    c_star, lam_star = solution[:-2], solution[-2:]
    unconstrained = np.linalg.solve(H, P.T @ TARGET)
    assert np.abs(P2 @ unconstrained - TARGET[:2]).max() > 1e-2  # the constraint changes the answer
    # the adaptive solver's noise (rtol 1e-11) limits the violation to ~1e-8 and the projected gradient to 2e-7–1.5e-6,
    # depending on the CPU's rounding (the line search finds no decrease below it): where the line search stops first,
    # the constraint and the exact minimiser below decide
    sol = solve_shooting(problem, max_iters=300, gtol=5e-7, ctol=1e-7)
    assert sol.converged or "the line search found no decrease" in sol.message, sol.message
    assert sol.info["violation_history"][-1] <= 1e-7 and sol.info["rounds"] > 1
    np.testing.assert_allclose(np.ravel(sol.values), c_star, atol=1e-4 * np.abs(c_star).max())
    np.testing.assert_allclose(sol.x[-1, :2], TARGET[:2], atol=1e-7)
    np.testing.assert_allclose(sol.info["multipliers"]["terminal"], lam_star, rtol=1e-3)


def test_path_inequality_constraint_gives_the_exact_constrained_minimiser():
    """u₁(t) ≥ U_MIN at the samples: a linear inequality on the knots; the QP with it solved by scipy from the
    explicit matrices (no simulation) is the oracle."""
    import scipy.optimize

    problem = _problem(path_constraint=_first_input_at_least)
    P, S, w = _exact_quadratic(problem.system)
    H = P.T @ P + W_EFFORT * S.T @ (w[:, None] * S)
    b = P.T @ TARGET
    A = S[0::2]  # u₁ at every sample
    unconstrained = np.linalg.solve(H, b)
    assert np.min(A @ unconstrained) < U_MIN - 0.5  # the constraint binds
    qp = scipy.optimize.minimize(
        lambda c: 0.5 * c @ H @ c - b @ c,
        unconstrained,
        jac=lambda c: H @ c - b,
        constraints=[{"type": "ineq", "fun": lambda c: A @ c - U_MIN, "jac": lambda c: A}],
        method="SLSQP",
        options={"ftol": 1e-15, "maxiter": 500},
    )
    gtol = 1e-6
    sol = solve_shooting(problem, max_iters=400, gtol=gtol, ctol=1e-7)
    assert sol.converged, sol.message
    assert np.min(A @ np.ravel(sol.values)) >= U_MIN - 1e-7
    # what gtol guarantees: the knots off the bound (u₁'s knots are on it) within ‖∇‖₂ / λ_min of their Hessian
    free = np.abs(qp.x - U_MIN) > 1e-6
    assert free.sum() == 4
    bound = gtol * np.sqrt(free.sum()) / np.linalg.eigvalsh(H[np.ix_(free, free)])[0]  # 2.5e-3: H is ill-conditioned
    np.testing.assert_allclose(np.ravel(sol.values), qp.x, atol=bound)
    assert sol.cost >= _exact_cost(unconstrained, P, S, w)


def test_line_search_takes_a_decrease_below_the_costs_noise_by_its_slope(monkeypatch):
    """Near a minimum a cost evaluated with noise (here every trial 1e−9 above its exact value, as a simulation's
    tolerances leave it) shows no Armijo decrease at any step; the slope along the step (the approximate Wolfe
    condition) still tells the exact step to the minimum, which is accepted. With no allowance for the noise the
    search fails."""
    from types import SimpleNamespace

    from jaxse3.optim import shooting

    def noisy(problem, x, multipliers):  # (merit, …, gradient, …) as _cost_and_gradient
        return 1.0 + 0.5 * jnp.vdot(x, x) + 1e-9, None, None, x, None

    monkeypatch.setattr(shooting, "_cost_and_gradient", noisy)
    box = SimpleNamespace(project=lambda x: x)
    c = jnp.full(2, 1e-5)
    J = 1.0 + 0.5 * float(c @ c)
    trial, _ = shooting._projected_search(box, c, J, c, -c, None)
    np.testing.assert_array_equal(trial, 0.0)
    monkeypatch.setattr(shooting, "COST_NOISE", 0.0)
    assert shooting._projected_search(box, c, J, c, -c, None) is None


def test_bad_constraints_are_named():
    with pytest.raises(ValueError, match=r"terminal_constraint must return a vector"):
        _problem(terminal_constraint=lambda q, qd: jnp.sum(q))
    with pytest.raises(ValueError, match="ctol must be >= 0 and finite"):
        solve_shooting(_problem(), ctol=-1.0)


def test_multiple_shooting_transcription_is_single_shooting_where_the_segments_join():
    """Started on a single-shooting motion (four segments), the defects are zero and the cost, the stitched motion
    and the constraints are single shooting's."""
    problem = _problem()
    c = np.random.default_rng(3).normal(size=problem.control_shape)
    ms = MultipleShooting(problem, 4)
    z = ms.initial(c)
    traj = ms.rollout(z)
    np.testing.assert_allclose(ms.defects(traj), 0.0, atol=1e-9)
    np.testing.assert_allclose(ms.cost_of(traj), problem.cost(c), rtol=1e-9)
    single = problem.rollout(c)
    stitched = ms.stitch(traj)
    np.testing.assert_allclose(stitched.t, single.t, atol=1e-14)
    np.testing.assert_allclose(stitched.q, single.q, atol=1e-9)
    np.testing.assert_allclose(stitched.u, single.u, atol=1e-12)
    np.testing.assert_allclose(ms.split(z)[0], c)


def test_multiple_shooting_converges_to_the_minimiser_of_the_exact_quadratic():
    """Two segments (the middle state free, the defect an equality constraint of the augmented Lagrangian): the
    solve converges, the knots are the exact minimiser of single shooting and the segments join. (With every inner
    solve run to gtol it stopped at 400 updates, its defect 6.7e−7 on one CPU and 4e−5 on another; with the inexact
    inner solves it converges in about 200.)"""
    problem = _problem()
    P, S, w = _exact_quadratic(problem.system)
    H = P.T @ P + W_EFFORT * S.T @ (w[:, None] * S)
    c_star = np.linalg.solve(H, P.T @ TARGET)
    sol = solve_shooting(problem, segments=2, max_iters=400, gtol=1e-7, ctol=1e-7, penalty=1.0)
    assert sol.converged, sol.message
    assert sol.info["method"] == "multiple shooting" and sol.info["defect"] <= 1e-7
    assert np.asarray(sol.info["segment_states"]).shape == (1, 8)
    np.testing.assert_allclose(np.ravel(sol.values), c_star, atol=1e-4 * np.abs(c_star).max())
    np.testing.assert_allclose(sol.cost, _exact_cost(c_star, P, S, w), rtol=1e-5)
    assert sol.u.shape == (N_SAVE - 1, 2) and sol.x.shape == (N_SAVE, 8) and sol.tip.shape == (N_SAVE, 3)
    np.testing.assert_allclose(sol.x[:, :4], problem.rollout(sol.values).q, atol=1e-5)
    with pytest.raises(ValueError, match="must divide into 3 segments"):
        solve_shooting(problem, segments=3)
    with pytest.raises(ValueError, match="segments must be a positive int"):
        solve_shooting(problem, segments=0)

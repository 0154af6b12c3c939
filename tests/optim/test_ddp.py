"""DDP and iLQR: on a linear-quadratic problem both reach the exact optimum (the normal equations of the stacked
problem, built independently) in one step, with either regularisation; with bounds on u the solution satisfies the
KKT conditions of the box-constrained problem (the gradient of J through a plain rollout vanishes on the free
controls and points outwards at active bounds), as does the box QP of the backward pass on its own; on a nonlinear
rigid arm (symplectic Euler with IDSVA SO's second derivatives, checked against autodiff of a step through the plain
forward dynamics) DDP and iLQR reach the same first-order optimal point, DDP superlinearly at the end; one
compilation serves a vmapped batch of initial states; implicit Euler (Newton) and the weighted Hessians that DDP
uses for steps without full tensors equal autodiff of plain steps, and DDP through implicit Euler converges; bad
input is named."""

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxse3 import rigid
from jaxse3.optim import DiscreteProblem, implicit_euler, solve_ddp, symplectic_euler
from jaxse3.optim.ddp import _box_qp, _derivatives
from jaxse3.rigid._forward_dynamics import forward_dynamics as forward_dynamics_plain
from jaxse3.sim import rigid_system

RNG = np.random.default_rng(0)
N_X, N_U, T = 4, 2, 12
A = np.eye(N_X) + 0.1 * RNG.normal(size=(N_X, N_X))
B = 0.3 * RNG.normal(size=(N_X, N_U))
X0 = np.array([1.0, -0.5, 0.3, 0.2])
Q, R, QT = np.diag([1.0, 2.0, 0.5, 1.0]), 0.1 * np.eye(N_U), 10.0 * np.eye(N_X)


def _lq_problem():
    return DiscreteProblem(
        lambda x, u: jnp.asarray(A) @ x + jnp.asarray(B) @ u,
        lambda x, u: 0.5 * x @ jnp.asarray(Q) @ x + 0.5 * u @ jnp.asarray(R) @ u,
        lambda x: 0.5 * x @ jnp.asarray(QT) @ x,
        X0,
        T,
        N_U,
    )


def _lq_optimum():
    """x_k = A^k x0 + Σ_{j<k} A^{k−1−j} B u_j, stacked: X = Φ x0 + Γ U; minimise ½XᵀQ̄X + ½UᵀR̄U."""
    Phi = np.stack([np.linalg.matrix_power(A, k) for k in range(T + 1)])
    Gamma = np.zeros((T + 1, N_X, T, N_U))
    for k in range(T + 1):
        for j in range(k):
            Gamma[k, :, j] = np.linalg.matrix_power(A, k - 1 - j) @ B
    Gamma = Gamma.reshape((T + 1) * N_X, T * N_U)
    Qbar = np.kron(np.diag([1.0] * T + [0.0]), Q) + np.kron(np.diag([0.0] * T + [1.0]), QT)
    Rbar = np.kron(np.eye(T), R)
    free = (Phi @ X0).reshape(-1)
    U = np.linalg.solve(Gamma.T @ Qbar @ Gamma + Rbar, -Gamma.T @ Qbar @ free)
    X = free + Gamma @ U
    return U.reshape(T, N_U), 0.5 * X @ Qbar @ X + 0.5 * U @ Rbar @ U


@pytest.mark.parametrize("method, regularisation", [("ddp", "state"), ("ilqr", "state"), ("ddp", "control")])
def test_linear_quadratic_problem_is_solved_exactly_in_one_step(method, regularisation):
    U, J = _lq_optimum()
    # no regularisation: the exact Newton step
    sol = solve_ddp(_lq_problem(), method=method, mu_init=0.0, regularisation=regularisation)
    assert bool(sol.converged) and int(sol.iterations) == 2  # one step, then the stopping test
    np.testing.assert_allclose(sol.us, U, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(sol.cost, J, rtol=1e-12)


@pytest.mark.parametrize("method", ["ddp", "ilqr"])
def test_infeasible_initial_states_are_closed_in_one_full_step(method):
    """Feasibility-driven start (FDDP): random states that are no rollout; on the LQ problem the linear model is exact,
    so the first full step closes every gap and lands on the optimum, and the expected decrease (with the gap terms)
    equals the actual one, which the line search accepts."""
    U, J = _lq_optimum()
    xs0 = np.random.default_rng(1).normal(size=(T + 1, N_X))
    problem = _lq_problem()
    sol = solve_ddp(problem, method=method, mu_init=0.0, xs0=xs0)
    assert bool(sol.converged) and int(sol.iterations) == 2 and float(sol.step_history[1]) == 1.0
    assert float(sol.cost_history[0]) > 3 * J  # the start was far off
    np.testing.assert_allclose(sol.us, U, rtol=1e-9, atol=1e-12)
    assert float(sol.defect) == 0.0
    np.testing.assert_allclose(sol.xs, problem.rollout(sol.us), rtol=1e-12, atol=1e-12)


def _kkt_violation(grad, us, lower, upper):
    """The largest violation of the KKT conditions of min J(U) over lower ≤ U ≤ upper at U = us: g = 0 on free
    components, g ≥ 0 at a lower bound, g ≤ 0 at an upper bound."""
    at_lower, at_upper = us <= lower + 1e-12, us >= upper - 1e-12
    free = ~at_lower & ~at_upper
    return max(
        float(np.max(np.abs(np.where(free, grad, 0.0)))),
        float(np.max(np.where(at_lower, -grad, 0.0))),
        float(np.max(np.where(at_upper, grad, 0.0))),
    )


def test_box_qp_satisfies_its_kkt_conditions():
    rng = np.random.default_rng(4)
    mixed = 0
    for _ in range(20):
        n = 5
        A_ = rng.normal(size=(n, n))
        H, g = A_ @ A_.T + 0.1 * np.eye(n), 3.0 * rng.normal(size=n)
        lower, upper = -rng.uniform(0.0, 1.0, size=n), rng.uniform(0.0, 1.0, size=n)
        x, free, _ = jax.jit(_box_qp)(H, g, lower, upper, np.zeros(n))
        assert np.all(x >= lower) and np.all(x <= upper)
        assert _kkt_violation(H @ x + g, np.asarray(x), lower, upper) < 1e-9
        mixed += bool(0 < np.sum(free) < n)
    assert mixed >= 5  # the draws exercise partly active bounds


@pytest.mark.parametrize("method", ["ddp", "ilqr"])
def test_bounded_linear_quadratic_problem_meets_kkt(method):
    """Bounds that bind (the unbounded optimum violates them): the solution is feasible, KKT holds to the stopping
    tolerance, and the cost lies above the unbounded optimum."""
    U, J = _lq_optimum()
    lower, upper = np.array([-0.3, -0.5]), np.array([0.5, 0.2])
    assert np.any(U < lower) or np.any(U > upper)
    problem = _lq_problem()
    sol = solve_ddp(problem, method=method, lower=lower, upper=upper, max_iters=50)
    assert bool(sol.converged), sol.message
    us = np.asarray(sol.us)
    assert np.all(us >= lower) and np.all(us <= upper)
    grad = np.asarray(jax.grad(lambda u: problem.cost(problem.rollout(u), u))(sol.us))
    assert _kkt_violation(grad, us, np.broadcast_to(lower, us.shape), np.broadcast_to(upper, us.shape)) < 1e-5
    assert float(sol.cost) > J


DT, T_ARM = 0.02, 25
ARM = rigid.auto_tree(3, seed=2)
STEP = symplectic_euler(rigid_system(ARM), DT)
GOAL = jnp.array([0.5, -0.3, 0.8])


def _arm_running(x, u):
    return DT * (0.5 * jnp.sum((x[:3] - GOAL) ** 2) + 1e-2 * 0.5 * jnp.sum(x[3:] ** 2) + 1e-3 * 0.5 * jnp.sum(u * u))


def _arm_terminal(x):
    return 50.0 * 0.5 * jnp.sum((x[:3] - GOAL) ** 2) + 0.5 * jnp.sum(x[3:] ** 2)


def _arm_problem(x0):
    return DiscreteProblem(STEP, _arm_running, _arm_terminal, x0, T_ARM, 3)


@pytest.fixture(scope="module")
def arm_solutions():
    problem = _arm_problem(jnp.zeros(6))
    hold = rigid.rnea(ARM, jnp.zeros(3), jnp.zeros(3), jnp.zeros(3))
    us0 = jnp.broadcast_to(hold, (T_ARM, 3))  # gravity compensation, as Crocoddyl's examples start
    solve = jax.jit(solve_ddp, static_argnames=("method", "max_iters"))
    return problem, us0, {m: solve(problem, us0, method=m, max_iters=200) for m in ("ddp", "ilqr")}


def test_ddp_and_ilqr_reach_the_same_first_order_optimum(arm_solutions):
    problem, us0, sols = arm_solutions
    plain = lambda us: problem.cost(problem.rollout(us), us)  # J by a plain rollout: an independent gradient
    for method, sol in sols.items():
        assert bool(sol.converged), method
        g = jax.grad(plain)(sol.us)
        assert float(jnp.max(jnp.abs(g))) < 1e-4, (method, float(jnp.max(jnp.abs(g))))
        np.testing.assert_allclose(plain(sol.us), sol.cost, rtol=1e-12)
        assert float(sol.cost) < float(plain(us0))
    np.testing.assert_allclose(sols["ddp"].cost, sols["ilqr"].cost, rtol=1e-6)
    # exact second derivatives: the error in J contracts superlinearly at the end, each ratio smaller than the last
    # (measured: 0.21, 0.077, 0.014)
    h = np.asarray(sols["ddp"].cost_history)
    h = h[np.isfinite(h)]
    e = h[:-1] - h[-1]
    ratios = e[-4:-1] / e[-5:-2]
    assert ratios[2] < ratios[1] < ratios[0] and ratios[2] < 0.05, ratios


def test_infeasible_start_reaches_a_first_order_optimum_of_the_arm(arm_solutions):
    """From states that are no rollout (the initial state perturbed at every knot), the solve closes the gaps and
    converges to a point where the gradient of J through a plain rollout vanishes."""
    problem, us0, _ = arm_solutions
    xs0 = jnp.zeros((T_ARM + 1, 6)) + 0.2 * jnp.asarray(np.random.default_rng(6).normal(size=(T_ARM + 1, 6)))
    sol = jax.jit(lambda xs: solve_ddp(problem, us0, xs0=xs, max_iters=200))(xs0)
    assert bool(sol.converged), sol.message
    assert float(sol.defect) == 0.0
    np.testing.assert_allclose(sol.xs, problem.rollout(sol.us), rtol=1e-10, atol=1e-12)
    g = jax.grad(lambda us: problem.cost(problem.rollout(us), us))(sol.us)
    assert float(jnp.max(jnp.abs(g))) < 1e-4


def test_step_second_derivatives_are_those_of_the_plain_step():
    """symplectic_euler's second derivatives (IDSVA SO through System.acceleration_hessians) equal jax.hessian of
    the same step written with the plain forward dynamics (autodiff through CRBA, RNEA and the solve)."""

    def plain(x, u):
        qd = x[3:] + DT * forward_dynamics_plain(ARM, x[:3], x[3:], u)
        return jnp.concatenate([x[:3] + DT * qd, qd])

    rng = np.random.default_rng(5)
    x, u = jnp.asarray(rng.normal(size=6)), jnp.asarray(rng.normal(size=3))
    ours = jax.jit(STEP.second_derivatives)(x, u)
    (fxx, _), (fux, fuu) = jax.jit(jax.hessian(plain, argnums=(0, 1)))(x, u)
    for a, b in zip(ours, (fxx, fux, fuu)):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12 * max(1.0, float(jnp.max(jnp.abs(b)))))
    np.testing.assert_allclose(STEP(x, u), plain(x, u), rtol=1e-14)


def test_a_vmapped_batch_of_initial_states_equals_single_solves(arm_solutions):
    _, us0, sols = arm_solutions
    x0s = jnp.stack([jnp.zeros(6), jnp.array([0.2, -0.1, 0.3, 0.0, 0.0, 0.0])])
    batch = jax.jit(jax.vmap(lambda x0: solve_ddp(_arm_problem(x0), us0, max_iters=200)))(x0s)
    np.testing.assert_allclose(batch.us[0], sols["ddp"].us, rtol=1e-9, atol=1e-10)
    single = solve_ddp(_arm_problem(x0s[1]), us0, max_iters=200)
    np.testing.assert_allclose(batch.us[1], single.us, rtol=1e-9, atol=1e-10)
    assert bool(jnp.all(batch.converged))


def test_a_solve_that_cannot_proceed_says_why():
    """max_iters reached, and dynamics that turn NaN for any control (no step can decrease the cost): status and
    message say so, and the returned iterate is the last finite one."""
    sol = solve_ddp(_lq_problem(), max_iters=1)
    assert not bool(sol.converged) and int(sol.status) == 1 and "max_iters" in sol.message
    nan_step = lambda x, u: jnp.where(jnp.any(u != 0.0), jnp.nan, 1.0) * (x + u[0])
    problem = DiscreteProblem(nan_step, lambda x, u: x @ x + u @ u, lambda x: x @ x, jnp.ones(1), 4, 1)
    sol = solve_ddp(problem, jnp.zeros((4, 1)) + 0.0, max_iters=50)
    assert int(sol.status) == 2 and "mu_max" in sol.message
    assert bool(jnp.all(jnp.isfinite(sol.us))) and bool(jnp.isfinite(sol.cost))
    assert solve_ddp(_lq_problem(), mu_init=0.0).message.startswith("converged")


def test_bad_problems_are_named():
    step = lambda x, u: x + u[:1]
    with pytest.raises(ValueError, match="the running cost must return a scalar"):
        DiscreteProblem(step, lambda x, u: x, lambda x: x @ x, jnp.zeros(1), 3, 1)
    with pytest.raises(ValueError, match="step must map"):
        DiscreteProblem(lambda x, u: u, lambda x, u: x @ x, lambda x: x @ x, jnp.zeros(1), 3, 2)
    problem = DiscreteProblem(step, lambda x, u: x @ x, lambda x: x @ x, jnp.zeros(1), 3, 1)
    with pytest.raises(ValueError, match=r"us0 must have shape \(3, 1\)"):
        solve_ddp(problem, jnp.zeros((2, 1)))
    with pytest.raises(ValueError, match="method must be 'ddp' or 'ilqr'"):
        solve_ddp(problem, method="fddp")
    with pytest.raises(ValueError, match="regularisation must be one of"):
        solve_ddp(problem, regularisation="both")
    with pytest.raises(ValueError, match=r"xs0 must have shape \(4, 1\)"):
        solve_ddp(problem, xs0=np.zeros((3, 1)))
    with pytest.raises(ValueError, match="lower > upper"):
        solve_ddp(problem, lower=1.0, upper=0.0)
    with pytest.raises(ValueError, match=r"upper must be a scalar, one bound per control \(1,\) or per knot"):
        solve_ddp(problem, upper=np.ones(4))


DT_IMPLICIT = 0.05


def _plain_implicit_euler(x, u):
    """Implicit Euler by 12 Newton updates on the plain forward dynamics (autodiff through all of them)."""
    q, v = x[:3], x[3:]
    residual = lambda w: w - v - DT_IMPLICIT * forward_dynamics_plain(ARM, q + DT_IMPLICIT * w, w, u)
    w = jax.lax.fori_loop(0, 12, lambda _, w: w - jnp.linalg.solve(jax.jacfwd(residual)(w), residual(w)), v)
    return jnp.concatenate([q + DT_IMPLICIT * w, w])


def _plain_symplectic_euler(x, u):
    v = x[3:] + DT_IMPLICIT * forward_dynamics_plain(ARM, x[:3], x[3:], u)
    return jnp.concatenate([x[:3] + DT_IMPLICIT * v, v])


@functools.partial(jax.jit, static_argnums=0)
def _reference(plain, x, u, w):
    """A plain step's value, Jacobians and Hessian of w · f by autodiff (compiled once per step; forward over
    forward: through the unrolled Newton loop it compiles in 15 s, against 39 s for ``jax.hessian``'s reverse pass)."""
    fx, fu = jax.jacfwd(plain, argnums=(0, 1))(x, u)
    (hxx, _), (hux, huu) = jax.jacfwd(jax.jacfwd(lambda x, u: w @ plain(x, u), argnums=(0, 1)), argnums=(0, 1))(x, u)
    return plain(x, u), fx, fu, (hxx, hux, huu)


@pytest.mark.parametrize(
    "scheme, hessians",
    [("implicit", "IDSVA SO"), ("implicit", "autodiff"), ("symplectic", "autodiff")],
)
def test_euler_steps_and_their_weighted_hessians_are_those_of_plain_steps(scheme, hessians):
    """implicit_euler (Newton, derivatives by the implicit function theorem) and the Hessian of w · f that DDP uses
    for steps without full tensors (``weighted_hessians``: from IDSVA SO or from autodiff of the forward dynamics)
    equal autodiff of plain steps (unrolled Newton on the plain forward dynamics) and central differences, at random
    states and at rest."""
    system = rigid_system(ARM)
    if hessians == "autodiff":
        system = dataclasses.replace(system, acceleration_hessians=None)
    step = (implicit_euler if scheme == "implicit" else symplectic_euler)(system, DT_IMPLICIT)
    plain = _plain_implicit_euler if scheme == "implicit" else _plain_symplectic_euler
    assert hasattr(step, "weighted_hessians") and not hasattr(step, "second_derivatives")
    assert hasattr(step, "first_derivatives") == (scheme == "implicit")
    rng = np.random.default_rng(7)

    @jax.jit
    def ours(x, u, w):
        x_next = step(x, u)
        fx, fu = jax.jacfwd(step, argnums=(0, 1))(x, u)
        at_root = step.first_derivatives(x, u, x_next) if scheme == "implicit" else (fx, fu)  # what DDP uses
        return x_next, fx, fu, step.weighted_hessians(x, u, w, x_next, fx, fu), at_root

    for x in (jnp.zeros(6), jnp.asarray(rng.normal(size=6))):
        u, w = jnp.asarray(rng.normal(size=3)), jnp.asarray(rng.normal(size=6))
        got = ours(x, u, w)
        want = _reference(plain, x, u, w)
        for a, b in zip(jax.tree.leaves(got), jax.tree.leaves((*want, want[1:3]))):
            np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12 * max(1.0, float(jnp.max(jnp.abs(b)))))
        # central differences: of the step for its Jacobians, of the gradient w·f_x for H_xx and H_ux
        h, jstep = 1e-6, jax.jit(step)
        fd_fx = np.stack([(jstep(x + h * e, u) - jstep(x - h * e, u)) / (2 * h) for e in jnp.eye(6)], axis=1)
        np.testing.assert_allclose(got[1], fd_fx, atol=1e-7 * max(1.0, float(np.abs(fd_fx).max())))
        grad_x = lambda x, u: w @ ours(x, u, w)[1]
        fd_hxx = np.stack([(grad_x(x + h * e, u) - grad_x(x - h * e, u)) / (2 * h) for e in jnp.eye(6)])
        fd_hux = np.stack([(grad_x(x, u + h * e) - grad_x(x, u - h * e)) / (2 * h) for e in jnp.eye(3)])
        for exact, fd in ((got[3][0], fd_hxx), (got[3][1], fd_hux)):
            np.testing.assert_allclose(exact, fd, atol=1e-6 * max(1.0, float(np.abs(fd).max())))


def test_an_implicit_step_is_linearised_at_the_trajectory_plus_its_gaps():
    """DDP takes an implicit step's f_x, f_u from first_derivatives at f(x̄, ū) = x̄' + gap, without solving the step
    again: equal to jax.jacfwd of the step (Newton, then its implicit-function rule) at states that are no rollout."""
    step = implicit_euler(rigid_system(ARM), DT_IMPLICIT)
    problem = DiscreteProblem(step, _arm_running, _arm_terminal, jnp.zeros(6), 3, 3)
    rng = np.random.default_rng(8)
    xs, us = jnp.asarray(0.3 * rng.normal(size=(4, 6))), jnp.asarray(rng.normal(size=(3, 3)))

    @jax.jit
    def both(xs, us):
        gaps = jnp.concatenate([jnp.zeros((1, 6)), jax.vmap(step)(xs[:-1], us) - xs[1:]])
        (fx, fu, *_), _, _ = _derivatives(problem, xs, us, gaps, None)
        return (fx, fu), jax.vmap(jax.jacfwd(step, argnums=(0, 1)))(xs[:-1], us), gaps

    got, want, gaps = both(xs, us)
    assert float(jnp.min(jnp.max(jnp.abs(gaps[1:]), axis=1))) > 0.1  # the states are far from a rollout
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12 * float(jnp.max(jnp.abs(b))))


def test_ddp_through_implicit_euler_reaches_a_first_order_optimum():
    """Full DDP with the weighted Hessians of implicit_euler, and iLQR, converge on the arm to points where the
    gradient of J through a plain rollout vanishes, at the same cost."""
    step = implicit_euler(rigid_system(ARM), DT_IMPLICIT)
    problem = DiscreteProblem(step, _arm_running, _arm_terminal, jnp.zeros(6), 12, 3)
    hold = rigid.rnea(ARM, jnp.zeros(3), jnp.zeros(3), jnp.zeros(3))
    us0 = jnp.broadcast_to(hold, (12, 3))
    plain = lambda us: problem.cost(problem.rollout(us), us)
    costs = []
    for method in ("ddp", "ilqr"):
        sol = jax.jit(lambda us, m=method: solve_ddp(problem, us, method=m, max_iters=100, th_stop=1e-12))(us0)
        assert bool(sol.converged), (method, sol.message)
        assert float(jnp.max(jnp.abs(jax.grad(plain)(sol.us)))) < 1e-3, method
        costs.append(float(sol.cost))
    np.testing.assert_allclose(costs[0], costs[1], rtol=1e-5)


def test_implicit_euler_rejects_bad_settings_and_a_failed_newton_step_is_nan():
    system = rigid_system(ARM)
    with pytest.raises(ValueError, match="max_iters must be a positive int"):
        implicit_euler(system, 0.01, max_iters=0)
    with pytest.raises(ValueError, match="tol must be positive"):
        implicit_euler(system, 0.01, tol=0.0)
    # one Newton update cannot meet a tolerance of 1e-300 from a moving state: the step says so by NaN
    step = implicit_euler(system, DT_IMPLICIT, tol=1e-300, max_iters=1)
    assert bool(jnp.all(jnp.isnan(step(jnp.ones(6), jnp.ones(3)))))

"""Dynamics drivers: diffrax implicit (analytic / finite-difference Jacobian) and explicit solvers, Newmark-β, inputs,
results round trip — against the exact solution of a linear system and against each other."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.linalg

from jaxse3.sim import SampledInput, Trajectory, simulate
from tests.sim import standin

U = np.array([1.0, -0.5])
T = 2.0


def _exact_linear(system, u, ts):
    """x(t) = e^{At} x0 + A^{-1}(e^{At} − I) b for M q̈ + D q̇ + K q = B u, x0 = 0."""
    p = system.params
    M, K, D, B = (np.asarray(a) for a in (p.M, p.K, p.D, p.B))
    n = M.shape[0]
    A = np.block([[np.zeros((n, n)), np.eye(n)], [-np.linalg.solve(M, K), -np.linalg.solve(M, D)]])
    b = np.concatenate([np.zeros(n), np.linalg.solve(M, B @ u)])
    return np.stack([np.linalg.solve(A, (scipy.linalg.expm(A * t) - np.eye(2 * n)) @ b) for t in ts])


@functools.cache
def _run(solver, jacobian="analytic", g=0.5, **kw):
    return simulate(
        standin.make(g=g),
        jnp.asarray(U),
        t_final=T,
        solver=solver,
        jacobian=jacobian,
        n_save=21,
        **{"rtol": 1e-9, "atol": 1e-11, **dict(kw)},
    )


def test_implicit_solver_matches_exact_linear_solution():
    s = standin.make(g=0.0)
    tr = _run("kvaerno5", g=0.0)
    x = _exact_linear(s, U, np.asarray(tr.t))
    np.testing.assert_allclose(tr.q, x[:, :4], atol=1e-8)
    np.testing.assert_allclose(tr.qd, x[:, 4:], atol=1e-8)
    np.testing.assert_allclose(tr.q[0], 0.0)


def test_implicit_analytic_equals_explicit_and_finite_difference():
    ref = _run("kvaerno5")
    for other in (_run("tsit5"), _run("kvaerno5", "finite-difference")):
        np.testing.assert_allclose(other.q, ref.q, atol=1e-7)
        np.testing.assert_allclose(other.tip, ref.tip, atol=1e-7)
    assert float(jnp.max(jnp.abs(ref.q))) > 0.1  # the motion is not trivial


def test_callable_and_sampled_inputs():
    s = standin.make()
    f = lambda t: jnp.array([jnp.sin(2 * t), 0.5 * jnp.cos(3 * t)])
    ts = jnp.linspace(0.0, T, 401)
    kw = dict(t_final=T, n_save=11, rtol=1e-8, atol=1e-10, solver="tsit5")
    a = simulate(s, f, **kw)
    b = simulate(s, SampledInput(ts, jax.vmap(f)(ts)), **kw)
    np.testing.assert_allclose(b.q, a.q, atol=1e-6)  # cubic interpolation of dt = 5 ms samples
    np.testing.assert_allclose(a.u, jax.vmap(f)(a.t), atol=1e-15)
    # piecewise-linear samples are reproduced exactly (and held constant after the last sample)
    lin = SampledInput(jnp.array([0.0, 1.0]), jnp.array([[0.0, 2.0], [1.0, 0.0]]), kind="linear")
    np.testing.assert_allclose(lin(0.25), [0.25, 1.5])
    np.testing.assert_allclose(lin(3.0), [1.0, 0.0])


def test_trajectory_npz_round_trip(tmp_path):
    tr = _run("kvaerno5")
    tr.save(tmp_path / "traj.npz")
    back = Trajectory.load(tmp_path / "traj.npz")
    for k in ("t", "q", "qd", "u", "points", "tip", "num_steps"):
        np.testing.assert_array_equal(getattr(back, k), getattr(tr, k))
    np.testing.assert_array_equal(tr.tip, tr.points[:, -1])
    np.savez(tmp_path / "bad.npz", t=np.zeros(2))
    with pytest.raises(ValueError, match="lacks the fields"):
        Trajectory.load(tmp_path / "bad.npz")


def test_bad_arguments():
    s = standin.make()
    with pytest.raises(ValueError, match="solver must be one of"):
        simulate(s, t_final=1.0, solver="euler")
    with pytest.raises(ValueError, match=r"q0 must have shape \(4,\)"):
        simulate(s, t_final=1.0, q0=jnp.zeros(3))
    with pytest.raises(ValueError, match=r"u\(t\) must return shape \(2,\)"):
        simulate(s, lambda t: jnp.zeros(3), t_final=1.0)
    with pytest.raises(ValueError, match="t_final must be positive"):
        simulate(s, t_final=0.0)
    with pytest.raises(ValueError, match="values must have shape"):
        SampledInput(jnp.linspace(0, 1, 3), jnp.zeros((4, 2)))


def test_non_finite_or_negative_arguments_are_named():
    s = standin.make()
    with pytest.raises(ValueError, match="q0 has non-finite entries"):
        simulate(s, t_final=1.0, q0=jnp.full(4, jnp.nan))
    with pytest.raises(ValueError, match="qd0 has non-finite entries"):
        simulate(s, t_final=1.0, qd0=jnp.array([0.0, jnp.inf, 0.0, 0.0]))
    for name in ("rtol", "atol", "dt", "dt0"):
        with pytest.raises(ValueError, match=f"{name} must be positive"):
            simulate(s, t_final=1.0, **{name: -1.0})
    with pytest.raises(ValueError, match="n_save must be an int"):
        simulate(s, t_final=1.0, n_save=1)
    # inputs that become NaN after t = 0.5 s: named before the solver runs, with the first bad time
    nan_late = lambda t: jnp.where(t > 0.5, jnp.nan, 1.0) * jnp.ones(2)
    with pytest.raises(ValueError, match=r"inputs are non-finite at t = 0\.5\d* s"):
        simulate(s, nan_late, t_final=1.0, n_save=21)


@pytest.mark.parametrize("solver", ["kvaerno5", "newmark"])
def test_a_failed_run_reports_its_result_and_keeps_what_was_computed(solver):
    """The step limit is hit mid-run: ``throw=True`` raises naming the solver and the time reached; ``throw=False``
    returns the samples computed before the failure, NaN after it, and the result code (Newmark included)."""
    s = standin.make()
    kw = dict(t_final=T, n_save=21, solver=solver, dt=0.01, rtol=1e-10, atol=1e-12, max_steps=40)  # both need > 100
    with pytest.raises(RuntimeError, match=f"{solver} solver failed after t = .* maximum number of solver steps"):
        simulate(s, jnp.asarray(U), **kw)
    tr = simulate(s, jnp.asarray(U), throw=False, **kw)
    assert not tr.ok and "maximum number of solver steps" in tr.message
    reached = np.isfinite(np.asarray(tr.q)).all(axis=1)
    assert reached[0] and reached.sum() >= 2 and not reached[-1]
    assert np.all(reached[: reached.sum()])  # a prefix: everything before the failure is kept
    full = simulate(s, jnp.asarray(U), **{**kw, "max_steps": 100_000})
    assert full.ok and full.message == "successful"
    k = int(reached.sum())
    np.testing.assert_allclose(tr.q[:k], full.q[:k], atol=1e-12)


def test_progress_and_jit_change_neither_the_program_nor_the_numbers():
    """The progress bar is drawn between compiled segments (no host callback, no recompilation); the same segments
    run in a ``lax.scan`` under a caller's ``jit``, with equal results and step counts."""
    from jaxse3._compile import STATS

    s = standin.make()
    kw = dict(t_final=T, n_save=21, rtol=1e-9, atol=1e-11)
    ref = _run("kvaerno5")
    before = STATS.compilations
    shown = simulate(s, jnp.asarray(U), progress=True, **kw)
    assert STATS.compilations == before  # progress=True reuses the compiled programs of _run's progress=False run
    np.testing.assert_array_equal(shown.q, ref.q)
    jitted = jax.jit(lambda u: simulate(s, u, **kw))(jnp.asarray(U))
    np.testing.assert_allclose(jitted.q, ref.q, atol=1e-13)
    assert int(jitted.num_steps) == int(ref.num_steps)


def test_gradient_through_a_simulation_matches_central_differences_and_loose_tolerances_warn():
    """d(tip at T)/du through ``simulate`` (diffrax's checkpointed adjoint over the compiled segments) agrees with
    central differences at tight tolerances; differentiating at the default rtol = 1e-3 warns."""
    s = standin.make()

    def tip(u, **kw):
        return simulate(s, u, t_final=T, n_save=21, **kw).q[-1, 0]

    tight = dict(rtol=1e-10, atol=1e-12)
    g = jax.grad(lambda u: tip(u, **tight))(jnp.asarray(U))
    h = 1e-5
    fd = [(tip(jnp.asarray(U) + h * e, **tight) - tip(jnp.asarray(U) - h * e, **tight)) / (2 * h) for e in np.eye(2)]
    np.testing.assert_allclose(g, fd, rtol=1e-6)
    with pytest.warns(UserWarning, match="differentiating an adaptive solve at rtol=0.001"):
        jax.grad(tip)(jnp.asarray(U))


def test_newmark_is_second_order():
    s = standin.make(g=0.0)
    exact = _exact_linear(s, U, [T])[0]
    errs = []
    for dt in (0.02, 0.01):
        tr = simulate(s, jnp.asarray(U), t_final=T, solver="newmark", dt=dt, n_save=2)
        errs.append(np.abs(np.concatenate([tr.q[-1], tr.qd[-1]]) - exact).max())
    assert errs[1] < 1e-3
    assert 3.6 < errs[0] / errs[1] < 4.4, errs


# ------------------------------------------------------------------------------------------------ the seed 003 CDM


@pytest.mark.slow
def test_cdm_implicit_analytic_equals_explicit():
    """A short CDM run: Kvaerno5 with the rod's analytic Jacobian agrees with the explicit Tsit5 (no Jacobian)."""
    from jaxse3.sim import scenarios

    s, u = scenarios.cdm_system(), scenarios.cdm_tensions(5.0)
    kw = dict(t_final=0.1, n_save=201, rtol=1e-6, atol=1e-8)
    a = simulate(s, u, solver="kvaerno5", **kw)
    b = simulate(s, u, solver="tsit5", **kw)
    np.testing.assert_allclose(a.tip, b.tip, atol=1e-6)
    assert float(jnp.abs(a.tip[-1] - a.tip[0]).max()) > 1e-3  # it moved
    assert np.all(np.isfinite(np.asarray(a.q)))


@pytest.mark.parametrize(
    "dtype, size, tiny, converged",
    [
        ("float64", 5e-4, None, True),
        ("float64", 0.05, None, False),
        ("float32", 0.05, None, True),
        ("float32", 0.2, None, False),
        ("float64", 0.2, 0.5, True),
    ],
)
def test_step_chord_round_off_test_scales_with_the_dtype(dtype, size, tiny, converged):
    """A first stage update below ``tiny_update(dtype)`` × the controller's tolerance (no contraction rate yet)
    converges: 1e−3 in float64, 0.1 in float32, where round-off can keep the updates above 1e−3 (on a GPU a float32
    CDM batch took 3× the steps); an explicit ``tiny`` wins."""
    import optimistix as optx

    from jaxse3.sim.dynamics import StepChord, _ChordState, tiny_update

    assert (tiny_update(jnp.float64), tiny_update(jnp.float32)) == (1e-3, 0.1)
    inf = jnp.asarray(jnp.inf, dtype)
    state = _ChordState(None, None, jnp.asarray(size, dtype), inf, optx.RESULTS.successful, jnp.array(1))
    done, result = StepChord(rtol=1e-3, atol=1e-6, tiny=tiny).terminate(None, None, None, {}, state, frozenset())
    assert bool(done) == converged and result == optx.RESULTS.successful


def _kvaerno5_one_second(field, y0, args, **chord_options):
    """1 s of diffrax's Kvaerno5 from ``y0`` (rtol 1e−8, atol 1e−10), its stages solved by
    ``StepChord(**chord_options)``."""
    import diffrax

    from jaxse3.sim import StepChord

    chord = diffrax.with_stepsize_controller_tols(StepChord)(**chord_options)
    return diffrax.diffeqsolve(
        diffrax.ODETerm(field),
        diffrax.Kvaerno5(root_finder=chord),
        0.0,
        1.0,
        0.01,
        y0,
        args=args,
        stepsize_controller=diffrax.PIDController(rtol=1e-8, atol=1e-10),
    )


def test_step_chord_with_and_without_its_vector_field():
    """StepChord on a user's ODETerm (a damped oscillator ẏ = A y through a custom_jvp, as the rods' rules): with no
    ``vector_field`` it linearises diffrax's stage relation, tracing the rule at every linearisation of every trace
    of a step; with one, the same Jacobian through a jitted function traced once. Both reach the exact solution
    e^{At} y0 with the same steps."""

    A = jnp.array([[0.0, 1.0], [-100.0, -2.0]])
    rule_traces = []

    @jax.custom_jvp
    def linear(A, y):
        return A @ y

    @linear.defjvp
    def _linear_jvp(primals, tangents):
        rule_traces.append(1)  # Python runs only while JAX traces
        (A, y), (dA, dy) = primals, tangents
        return A @ y, A @ dy + dA @ y

    def field(t, y, args):
        return linear(args, y)

    def solve(vector_field):
        rule_traces.clear()
        sol = _kvaerno5_one_second(field, jnp.array([1.0, 0.0]), A, vector_field=vector_field)
        return sol.ys[-1], int(sol.stats["num_steps"]), len(rule_traces)

    plain, steps, plain_traces = solve(None)
    shared, shared_steps, shared_traces = solve(field)
    exact = scipy.linalg.expm(np.asarray(A)) @ np.array([1.0, 0.0])
    np.testing.assert_allclose(plain, exact, rtol=0, atol=1e-6)  # the global error at rtol 1e−8: 2.5e−7
    np.testing.assert_allclose(shared, plain, rtol=0, atol=1e-12)
    assert shared_steps == steps
    assert shared_traces == 1 < plain_traces  # diffrax 0.7.2 here: 3 (simulate's CDM program: 6)


def test_schur_update_solves_the_full_stage_matrix():
    """The update of ``StepChord(second_order=True)`` (:func:`_schur_inverse`): J⁻¹ (r₁, r₂) for the 2n × 2n stage
    matrix J = [[I, −γh I], [−γh a_q, I − γh a_q̇]] of a second-order field, against numpy's dense solve; γh = 0
    gives the identity (the structure's state)."""
    from jaxse3.sim.dynamics import _schur_inverse

    rng = np.random.default_rng(4)
    n = 5
    a_q, a_qd = rng.normal(size=(2, n, n)) * 30.0
    r1, r2 = rng.normal(size=(2, n))
    for gamma_h in (0.0, 1e-3, 0.07):
        J = np.block([[np.eye(n), -gamma_h * np.eye(n)], [-gamma_h * a_q, np.eye(n) - gamma_h * a_qd]])
        S_inv, g_a_q, g = _schur_inverse(jnp.asarray(a_q), jnp.asarray(a_qd), jnp.asarray(gamma_h))
        z = S_inv @ (r2 + g_a_q @ r1)
        np.testing.assert_allclose(
            np.concatenate([r1 + g * z, z]), np.linalg.solve(J, np.concatenate([r1, r2])), rtol=1e-12, atol=1e-13
        )


def test_step_chord_second_order_takes_the_steps_of_the_full_stage_matrix():
    """A damped oscillator q̈ = −100 q − 2 q̇ written as (q, q̇) with 2 coordinates: Kvaerno5 with
    ``StepChord(second_order=True)`` takes the steps of the LU solve of the full stage matrix and reaches the exact
    e^{At} y0; second_order without a vector field is refused."""

    from jaxse3.sim import StepChord

    K = jnp.array([[100.0, 10.0], [10.0, 50.0]])

    def field(t, y, args):
        q, qd = y
        return qd, -K @ q - 2.0 * qd

    def solve(second_order):
        y0 = (jnp.array([1.0, 0.0]), jnp.array([0.0, -1.0]))
        sol = _kvaerno5_one_second(field, y0, None, vector_field=field, second_order=second_order)
        return jnp.concatenate([sol.ys[0][-1], sol.ys[1][-1]]), int(sol.stats["num_steps"])

    full, steps = solve(False)
    schur, schur_steps = solve(True)
    A = np.block([[np.zeros((2, 2)), np.eye(2)], [-np.asarray(K), -2.0 * np.eye(2)]])
    exact = scipy.linalg.expm(A) @ np.array([1.0, 0.0, 0.0, -1.0])
    np.testing.assert_allclose(schur, exact, rtol=0, atol=1e-6)
    np.testing.assert_allclose(schur, full, rtol=0, atol=1e-12)
    assert schur_steps == steps
    with pytest.raises(ValueError, match="second_order=True needs the vector_field"):
        StepChord(rtol=1e-3, atol=1e-6, second_order=True)

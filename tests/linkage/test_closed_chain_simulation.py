"""Closed chains in the simulation drivers (:func:`jaxse3.sim.linkage_system` with ``closures``): the Baumgarte
index-1 form (seed 003 eqs. (46), (48), (49)) under kvaerno5, Newmark-β and statics, and the index-3 form (eq. (52))
under the index-3 Newmark-β.

Oracles independent of the closure algorithms, on the planar four-bar of :mod:`tests.linkage.four_bar`:

* the motion from rest under gravity: the crank angle θ(t) against the one-degree-of-freedom Lagrangian ODE
  m(θ)θ̈ + ½m'(θ)θ̇² + V'(θ) = 0 (m and V from the bodies' planar poses, integrated here by diffrax's Dopri8 at
  tolerances 1e−12), the other coordinates against the closed-form position analysis q(θ(t)), and the total energy
  (kinetic + gravitational, from the planar poses) conserved;
* statics under gravity and a constant crank torque u* = V'(θ*): the equilibrium is q(θ*).
"""

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxse3 import linkage as lk, sim
from jaxse3.sim import dynamics
from jaxse3.sim.trajectory import Trajectory
from tests.linkage.four_bar import FOUR_BAR, PLANAR, energy, four_bar_pose, reduced, reduced_acceleration, wrap

THETA0 = 1.0  # the crank's angle at rest at t = 0: from there gravity swings the crank through 5.7 rad and back
T_FINAL = 1.0
N_SAVE = 51
NEWMARK_DT = 5e-4


@pytest.fixture(scope="module")
def system():
    return sim.linkage_system(FOUR_BAR, closures=PLANAR)


@pytest.fixture(scope="module")
def reference():
    """(t, θ(t), q(θ(t))) of the reduced Lagrangian ODE from rest at THETA0, Dopri8 at tolerances 1e−12."""
    ts = jnp.linspace(0.0, T_FINAL, N_SAVE)
    field = lambda t, y, args: jnp.stack([y[1], reduced_acceleration(y[0], y[1], jnp.zeros(3))])
    sol = diffrax.diffeqsolve(
        diffrax.ODETerm(field),
        diffrax.Dopri8(),
        0.0,
        T_FINAL,
        1e-3,
        jnp.array([THETA0, 0.0]),
        saveat=diffrax.SaveAt(ts=ts),
        stepsize_controller=diffrax.PIDController(rtol=1e-12, atol=1e-12),
        max_steps=100_000,
    )
    theta = sol.ys[:, 0]
    return ts, theta, jax.vmap(lambda t: four_bar_pose(t)[0])(theta)


def _consistent_rest():
    return four_bar_pose(jnp.asarray(THETA0))[0]


def _measure(system, traj, reference):
    """Max errors of θ and of the other coordinates (modulo 2π) against the reference, the drift monitors, and the
    energy change against the kinetic energy's swing."""
    ts, theta, q_ref = reference
    assert traj.ok
    np.testing.assert_allclose(traj.t, ts, atol=1e-14)
    traj = sim.constraint_drift(system, traj)
    E = jax.vmap(energy)(traj.q, traj.qd)
    kinetic = E - jax.vmap(lambda q: energy(q, jnp.zeros(3)))(traj.q)
    return {
        "theta": float(np.abs(traj.q[:, 0] - theta).max()),
        "others": float(np.abs(wrap(traj.q[:, 1:] - q_ref[:, 1:])).max()),
        "e": float(np.max(traj.monitors["closure_error"])),
        "Aqd": float(np.max(traj.monitors["closure_velocity_error"])),
        "energy": float(np.abs(E - E[0]).max()),
        "swing": float(np.ptp(kinetic)),
    }


def test_the_reference_motion_is_large(reference):
    """From rest at θ = 1 rad the crank swings through 5.7 rad (to −4.69 rad) and back within the second: the
    comparisons below cover nearly every crank angle."""
    _, theta, _ = reference
    assert float(theta.min()) < THETA0 - 5.0


def test_kvaerno5_follows_the_reduced_lagrangian_dynamics(system, reference):
    """Kvaerno5 (Jacobian through the constrained forward dynamics' rule), rtol 1e−8, from the consistent
    rest q(θ₀). Observed (float64): |Δθ| 1.4e−7 rad, the coupler's and rocker's coordinates within 1.0e−7 rad of the
    closed form q(θ(t)), ‖e‖ ≤ 7.5e−9, ‖Aq̇‖ ≤ 7.7e−7 /s, energy within 1.0e−6 J of its start while the kinetic energy
    swings by 2.15 J (the undamped chain conserves it; along the exact Baumgarte motion from a consistent state
    e = Aq̇ = 0 and the multipliers do no work, q̇ᵀAᵀλ = 0, so the change is the solver's error, local errors at
    rtol 1e−8 summed over ~450 steps). Bounds ~10× above."""
    traj = sim.simulate(system, t_final=T_FINAL, q0=_consistent_rest(), rtol=1e-8, atol=1e-10, n_save=N_SAVE)
    m = _measure(system, traj, reference)
    assert m["swing"] > 2.0
    assert m["theta"] < 2e-6, m
    assert m["others"] < 1e-6, m
    assert m["e"] < 1e-7, m
    assert m["Aqd"] < 1e-5, m
    assert m["energy"] < 1e-5, m


def test_newmark_follows_the_reduced_lagrangian_dynamics_to_second_order(system, reference):
    """Newmark-β (β = 1/4, γ = 1/2) on the residual τ − ID + Aᵀλ, steps 1 ms and 0.5 ms, Newton tolerance 1e−14 (the
    default 1e−10 bounds βh²‖R‖∞, i.e. ‖R‖∞ ≲ 1.6e−3 N m at 0.5 ms, which here leaves errors larger than the step's).
    Observed at 0.5 ms: |Δθ| 5.8e−4 rad, the other coordinates within 4.2e−4 rad of the closed form, ‖e‖ ≤ 7.8e−7,
    ‖Aq̇‖ ≤ 4.6e−5 /s, energy within 6.7e−5 J of its start for a kinetic swing of 2.15 J (the average-acceleration
    rule conserves energy exactly only for linear systems: an O(h²) error remains); the errors in θ and in the energy
    fall by 4.00 when the step halves (second order). Bounds ~10× above the observed ones."""
    q0 = _consistent_rest()
    runs = [
        _measure(
            system,
            sim.simulate(system, t_final=T_FINAL, q0=q0, solver="newmark", dt=dt, newton_tol=1e-14, n_save=N_SAVE),
            reference,
        )
        for dt in (2 * NEWMARK_DT, NEWMARK_DT)
    ]
    coarse, m = runs
    assert 3.5 < coarse["theta"] / m["theta"] < 4.5, runs
    assert 3.5 < coarse["energy"] / m["energy"] < 4.5, runs
    assert m["theta"] < 6e-3, m
    assert m["others"] < 5e-3, m
    assert m["e"] < 1e-5, m
    assert m["Aqd"] < 5e-4, m
    assert m["energy"] < 7e-4, m


def test_index3_newmark_holds_the_constraints_and_conserves_energy_to_second_order(system, reference):
    """``solver="newmark-index3"`` (unknowns q̈ and λ, e(q) = 0 in every step's Newton system; seed 003 eq. (52)),
    steps 1 ms and 0.5 ms, Newton tolerance 1e−14. Observed at 0.5 ms: ‖e‖ ≤ 2.6e−15 at every sample (the Baumgarte
    Newmark above: 7.8e−7), ‖Aq̇‖ ≤ 4.5e−5 /s (not imposed: O(h²)), energy within 7.2e−5 J of its start for a kinetic
    swing of 2.15 J (undamped: no drift; the O(h²) error of the average-acceleration rule on a nonlinear system), and
    θ, the energy and ‖Aq̇‖ fall by 4 when the step halves. Bounds ~10× above (‖e‖: 1e−12)."""
    q0 = _consistent_rest()
    run = lambda dt: sim.simulate(
        system, t_final=T_FINAL, q0=q0, solver="newmark-index3", dt=dt, newton_tol=1e-14, n_save=N_SAVE
    )
    coarse, m = (_measure(system, run(dt), reference) for dt in (2 * NEWMARK_DT, NEWMARK_DT))
    for key in ("theta", "energy", "Aqd"):
        assert 3.5 < coarse[key] / m[key] < 4.5, (key, coarse, m)
    assert m["swing"] > 2.0
    assert m["theta"] < 6e-3, m
    assert m["others"] < 5e-3, m
    assert m["e"] < 1e-12 and coarse["e"] < 1e-12, m
    assert m["Aqd"] < 5e-4, m
    assert m["energy"] < 7e-4, m


def test_index3_generalized_alpha_holds_the_constraints_at_second_order(system, reference):
    """``solver="generalized-alpha-index3"`` (ρ∞ = 0.8), steps 1 ms and 0.5 ms, Newton tolerance 1e−14: the same
    index-3 system as above with generalised-α's numerical damping. Observed at 0.5 ms: ‖e‖ ≤ 2.7e−15, |Δθ| 1.5e−3
    rad (Newmark-β: 1.4e−3), energy within 7.7e−5 J (7.2e−5; the damping of the resolved motion is O(h²) too), θ
    and the energy falling by 4.0 when the step halves. ``rho_inf`` outside [0, 1] is refused by name. Bounds ~4×
    above (‖e‖: 1e−12). The Baumgarte form under ``"generalized-alpha"`` with ρ∞ = 1 takes Newmark-β's steps."""
    q0 = _consistent_rest()
    kw = dict(t_final=T_FINAL, q0=q0, solver="generalized-alpha-index3", rho_inf=0.8, newton_tol=1e-14, n_save=N_SAVE)
    coarse, m = (_measure(system, sim.simulate(system, dt=dt, **kw), reference) for dt in (2 * NEWMARK_DT, NEWMARK_DT))
    for key in ("theta", "energy"):
        assert 3.5 < coarse[key] / m[key] < 4.5, (key, coarse, m)
    assert m["theta"] < 6e-3, m
    assert m["e"] < 1e-12 and coarse["e"] < 1e-12, m
    assert m["energy"] < 7e-4, m
    with pytest.raises(ValueError, match=r"rho_inf must be a number in \[0, 1\], got 1.5"):
        sim.simulate(system, **{**kw, "rho_inf": 1.5})
    # the Baumgarte form under "generalized-alpha" without damping (ρ∞ = 1: α_m = α_f = ½) takes Newmark-β's steps
    short = dict(t_final=0.05, q0=q0, dt=1e-3, newton_tol=1e-14, n_save=6)
    undamped = sim.simulate(system, solver="generalized-alpha", rho_inf=1.0, **short)
    np.testing.assert_allclose(undamped.q, sim.simulate(system, solver="newmark", **short).q, rtol=0, atol=1e-12)


def test_index3_newmark_batch_equals_single_runs(system):
    """``simulate_batch`` with ``solver="newmark-index3"`` (a stack of chains on one time grid, block Jacobians)
    equals the single runs, from two consistent starts, with the inputs shared (not batched)."""
    q0s = jnp.stack([_consistent_rest(), four_bar_pose(jnp.asarray(2.5))[0]])
    kw = dict(t_final=0.05, solver="newmark-index3", dt=1e-3, newton_tol=1e-14, n_save=6)
    batch = sim.simulate_batch(system, q0=q0s, batch_q0=True, batch_inputs=False, **kw)
    for i in range(2):
        one = sim.simulate(system, q0=q0s[i], **kw)
        np.testing.assert_allclose(batch.q[i], one.q, rtol=0, atol=1e-10)  # observed 4e−12: one Newton test
    np.testing.assert_allclose(jax.jit(jax.vmap(_closure_error))(batch.q[1]), 0.0, atol=1e-13)


def test_index3_newmark_refuses_an_inconsistent_start_and_an_open_chain(system):
    q0 = _consistent_rest()
    with pytest.raises(ValueError, match=r"needs a consistent start.*‖e\(q0\)‖_∞ = 0\.0"):
        sim.simulate(system, t_final=0.1, q0=q0 + 0.01, solver="newmark-index3")
    with pytest.raises(ValueError, match=r"‖ė\(q0, qd0\)‖_∞ = 0\.[1-9]"):
        sim.simulate(system, t_final=0.1, q0=q0, qd0=jnp.array([1.0, 0.0, 0.0]), solver="newmark-index3")
    with pytest.raises(ValueError, match="this system has none: use solver='newmark'"):
        sim.simulate(sim.linkage_system(FOUR_BAR), t_final=0.1, solver="newmark-index3")


AMPLITUDE, PERIOD = 2.0, 1.0  # the prescribed crank: θ(t) = θ₀ + A(1 − cos 2πt/P)/2


def _crank_angle(t):
    return THETA0 + AMPLITUDE * (1.0 - jnp.cos(2.0 * jnp.pi * t / PERIOD)) / 2.0


def _crank_torque(t):
    """The reduced Lagrangian's effort u = m(θ)θ̈ + ½m'(θ)θ̇² + V'(θ) along the prescription."""
    rate = lambda t: jax.jvp(_crank_angle, (t,), (1.0,))
    (th, thd), (_, thdd) = jax.jvp(rate, (t,), (1.0,))
    mass, dmass = jax.jvp(lambda a: reduced(a)[0], (th,), (1.0,))
    return mass * thdd + 0.5 * dmass * thd**2 + jax.grad(lambda a: reduced(a)[1])(th)


# jitted once for the module: eager, these would compile op by op
_crank_torques = jax.jit(jax.vmap(_crank_torque))
_crank_poses = jax.jit(jax.vmap(lambda t: four_bar_pose(_crank_angle(t))[0]))
_pose = jax.jit(lambda theta: four_bar_pose(theta)[0])
_dV = jax.jit(jax.grad(lambda t: reduced(t)[1]))
_d2V = jax.jit(jax.grad(jax.grad(lambda t: reduced(t)[1])))
_closure_error = jax.jit(lambda q: lk.closure_error(FOUR_BAR, PLANAR, q))


@jax.jit
def _static_loads(q, u):
    """τ − ID(q, 0, 0) and the closure Jacobian A(q)."""
    zero = jnp.zeros(3)
    loads = lk.generalized_forces(FOUR_BAR, q, zero, u) - lk.inverse_dynamics(FOUR_BAR, q, zero, zero)
    return loads, lk.closure_jacobian(FOUR_BAR, PLANAR, q)


@pytest.fixture(scope="module")
def crank():
    """The four-bar with its crank prescribed and its inputs (the prescription, no other efforts)."""
    system = sim.linkage_system(FOUR_BAR, prescribed=("crank",), closures=PLANAR)
    return system, sim.prescribed_inputs(system, lambda t: jnp.atleast_1d(_crank_angle(t)), jnp.zeros(2))


def test_index3_newmark_with_a_prescribed_crank_is_the_closed_form_and_its_effort_the_reduced_torque(crank):
    """The four-bar with its crank prescribed, θ(t) = θ₀ + A(1 − cos 2πt/P)/2 (the prescription a constraint
    q₀ − θ(t) = 0 beside the closure, its multiplier the crank's effort): no freedom is left, so every step's
    coordinates are the closed-form assembly q(θ(t)) to round-off, and :func:`~jaxse3.sim.constraint_forces` gives
    the effort of the reduced Lagrangian, u = m(θ)θ̈ + ½m'(θ)θ̇² + V'(θ), at the saved states. Observed (h = 1 ms):
    coordinates within 5e−15 rad, effort within 9.4e−7 N·m of the reduced one (peak 1.55 N·m; O(h²) from the
    Newmark velocities)."""
    system, inputs = crank
    assert system.n_constraints == 3 and system.n_inputs == 5
    q0 = _consistent_rest()
    traj = sim.simulate(
        system, inputs, t_final=1.0, q0=q0, solver="newmark-index3", dt=1e-3, newton_tol=1e-14, n_save=21
    )
    q_ref = _crank_poses(traj.t)
    np.testing.assert_allclose(wrap(traj.q - q_ref), 0.0, atol=1e-12)
    lam = sim.constraint_forces(system, traj, inputs).monitors["multipliers"]
    assert lam.shape == (21, 3)
    np.testing.assert_allclose(lam[:, -1], _crank_torques(traj.t), rtol=0, atol=1e-5)
    with pytest.raises(ValueError, match="needs a consistent start"):
        sim.simulate(system, inputs, t_final=0.1, q0=q0.at[0].add(0.1), solver="newmark-index3")
    with pytest.raises(TypeError, match="constraint_forces: 'system' has no constraints"):
        sim.constraint_forces(sim.linkage_system(FOUR_BAR), traj)


def test_index3_start_uses_the_closed_form_constraint_bias(crank):
    """The index-3 form's ë − (∂e/∂q)q̈ (the start's acceleration-level constraints) from the system's closed form
    (:func:`~jaxse3.linkage.closure_error_bias` and −q̈_k(t)) equals the nested JVPs of the constraint in (t, q) it
    replaces, off the manifold and moving, at a time where the prescription accelerates."""
    system, inputs = crank
    assert system.constraint_bias is not None
    closed = dynamics._constrained_term(system)
    nested = eqx.tree_at(lambda term: term.bias, closed, None, is_leaf=lambda x: x is None)
    key = jax.random.split(jax.random.PRNGKey(7))
    q, qd = (0.5 * jax.random.normal(k, (system.n_dof,)) for k in key)
    args = (system, inputs, system.multiplier_residual)
    bias = eqx.filter_jit(lambda term, q, qd, args: term.constraint_bias(0.3, q, qd, args))
    got, want = (bias(term, q, qd, args) for term in (closed, nested))
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12 * np.abs(want).max())
    assert np.abs(want[-1]) > 1.0  # the crank's −q̈_k(t)
    np.testing.assert_allclose(want[-1], -jax.grad(jax.grad(_crank_angle))(0.3), rtol=1e-12)


@pytest.mark.parametrize("solver", ["kvaerno5", "newmark"])
def test_baumgarte_drivers_with_a_prescribed_crank_follow_the_closed_form(crank, solver):
    """The same prescribed crank under the Baumgarte form (seed 003 eqs. (43) and (48) combined: q_k, q̇_k from the
    inputs, q̈_k(t) a further row of the bordered solve, T_B = 10 ms): kvaerno5 at rtol 1e−8 and Newmark-β at 1 ms
    follow the closed-form assembly q(θ(t)) and keep the closure, and the efforts at the saved states are the
    reduced Lagrangian's. Observed: kvaerno5 within 1.0e−10 rad of q(θ(t)), ‖e‖ ≤ 4.1e−11; Newmark-β (second order,
    the Baumgarte terms stiff at h/T_B = 0.1) within 1.1e−5 rad, ‖e‖ ≤ 4.2e−6. Bounds ~5–10× above."""
    system, inputs = crank
    kw = dict(rtol=1e-8, atol=1e-10) if solver == "kvaerno5" else dict(dt=1e-3, newton_tol=1e-14)
    traj = sim.simulate(system, inputs, t_final=1.0, q0=_consistent_rest(), solver=solver, n_save=21, **kw)
    q_ref = _crank_poses(traj.t)
    err = float(np.abs(wrap(traj.q - q_ref)).max())
    e = float(np.max(sim.constraint_drift(system, traj).monitors["closure_error"]))
    bound = 1e-9 if solver == "kvaerno5" else 1e-4
    assert err < bound and e < bound / 2, (err, e)
    lam = sim.constraint_forces(system, traj, inputs).monitors["multipliers"]
    np.testing.assert_allclose(lam[:, -1], _crank_torques(traj.t), rtol=0, atol=1e-4)


def test_the_prescribed_baumgarte_rule_equals_autodiff_and_central_differences(crank):
    """The Baumgarte form with a prescribed crank solves its affine system (q̈, λ, λ_k) under an implicit-function
    rule: its Jacobian in (q, q̇, u), at a moving state off the manifold, equals autodiff of the plain solve and
    central differences; the residual vanishes at the forward dynamics' q̈ and its ∂/∂q̈ is invertible."""
    from jaxse3.sim import system as systems

    system, inputs = crank
    chain = system.params
    rng = np.random.default_rng(3)
    q = _consistent_rest() + 0.05 * jnp.asarray(rng.normal(size=3))
    qd, u = jnp.asarray(rng.normal(size=3)), inputs(0.3) + 0.1 * jnp.asarray(rng.normal(size=5))
    rule = jax.jit(jax.jacfwd(systems._prescribed_solution, argnums=(1, 2, 3)))(chain, q, qd, u)
    plain = jax.jit(jax.jacfwd(systems._prescribed_solution_plain, argnums=(1, 2, 3)))(chain, q, qd, u)
    for a, b in zip(rule, plain):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-10)
    e, solution = 1e-6, jax.jit(systems._prescribed_solution)
    for j in range(3):
        d = jnp.zeros(3).at[j].set(e)
        fd = (solution(chain, q + d, qd, u) - solution(chain, q - d, qd, u)) / (2 * e)
        np.testing.assert_allclose(rule[0][:, j], fd, rtol=1e-6, atol=1e-6)
    qdd = jax.jit(system.forward_dynamics)(chain, q, qd, u)
    np.testing.assert_allclose(jax.jit(system.residual)(chain, q, qd, qdd, u), 0.0, atol=1e-12)
    assert np.linalg.matrix_rank(np.asarray(jax.jit(jax.jacfwd(system.residual, argnums=3))(chain, q, qd, qdd, u))) == 3


def test_residual_is_tau_minus_id_plus_the_multipliers_work(system):
    """At a state off the manifold, moving: constrained_residual = τ − ID(q, q̇, q̈) + Aᵀλ, with ID by the linkage's
    inverse dynamics (its rules, not the mass matrix of the bordered solve), and it vanishes at q̈ = q̈_B; the system's
    forward dynamics and residual are those functions."""
    key = jax.random.split(jax.random.PRNGKey(0), 4)
    q, qd, qdd, u = (jax.random.normal(k, (3,)) for k in key)

    @jax.jit
    def parts(q, qd, qdd, u):
        qdd_b, lam = lk.constrained_forward_dynamics(FOUR_BAR, PLANAR, q, qd, u, 0.01)
        A = lk.closure_jacobian(FOUR_BAR, PLANAR, q)
        want = lk.generalized_forces(FOUR_BAR, q, qd, u) - lk.inverse_dynamics(FOUR_BAR, q, qd, qdd) + A.T @ lam
        return (
            lk.constrained_residual(FOUR_BAR, PLANAR, q, qd, qdd, u, 0.01),
            want,
            lk.constrained_residual(FOUR_BAR, PLANAR, q, qd, qdd_b, u, 0.01),
            system.dynamics_residual(q, qd, qdd, u),
            system.acceleration(q, qd, u),
            qdd_b,
        )

    r, want, at_b, r_sys, acc, qdd_b = parts(q, qd, qdd, u)
    assert np.abs(lk.closure_error(FOUR_BAR, PLANAR, q)).max() > 0.05
    np.testing.assert_allclose(r, want, rtol=1e-10, atol=1e-12 * np.abs(want).max())
    np.testing.assert_allclose(at_b, 0.0, atol=1e-12 * np.abs(want).max())
    np.testing.assert_allclose(r_sys, r, rtol=1e-14)
    np.testing.assert_allclose(acc, qdd_b, rtol=1e-14)


@pytest.mark.parametrize("theta, offset", [(4.0, 0.3), (0.7, 0.2)])
def test_statics_under_a_crank_torque_is_the_closed_form_equilibrium(system, theta, offset):
    """Gravity and the constant crank torque u* = V'(θ*) hold the four-bar at θ* (closed form). At zero load every
    configuration on the manifold is an equilibrium (Newton's matrix singular), so the continuation is not started
    there: one load step (``load_steps=1``), Newton on (q, λ) from the consistent q(θ* + offset). It converges to q(θ*)
    (modulo 2π), with e = 0 to round-off, and the multipliers balance the loads: Aᵀλ = −(τ − ID(q, 0, 0)) from the
    linkage's public functions. θ* = 4 is a minimum of V − u*θ (V'' > 0, reported stable: the stiffness reduced to
    the one tangent direction), θ* = 0.7 a maximum (V'' < 0, reported unstable); the matrix is regular there."""
    dV, d2V = (float(f(theta)) for f in (_dV, _d2V))
    u = jnp.array([dV, 0.0, 0.0])
    q0 = _pose(jnp.asarray(theta + offset))
    sol = sim.solve_statics(system, u, q0, load_steps=1)
    assert bool(sol.converged)
    np.testing.assert_allclose(wrap(sol.q - _pose(jnp.asarray(theta))), 0.0, atol=1e-12)
    np.testing.assert_allclose(_closure_error(sol.q), 0.0, atol=1e-14)
    assert float(sol.residual_norm) < 1e-10
    assert bool(sol.stable) == (d2V > 0) and not bool(sol.singular)
    # the stiffness on the one tangent direction q'(θ*)/|q'(θ*)|: V''(θ*) / |q'(θ*)|²; a maximum has Morse index 1
    tangent = jax.jit(jax.jacfwd(lambda t: four_bar_pose(t)[0]))(jnp.asarray(theta))
    np.testing.assert_allclose(float(sol.least_stiffness), d2V / float(tangent @ tangent), rtol=1e-8)
    assert int(sol.morse_index) == (0 if d2V > 0 else 1)
    loads, A = _static_loads(sol.q, u)
    np.testing.assert_allclose(A.T @ sol.multipliers, -loads, atol=1e-10)


def test_statics_with_a_prescribed_crank_holds_it_with_the_reduced_torque():
    """The four-bar with its crank prescribed at θ* (an input of the statics, continued from the crank at 0 with the
    load: gravity and the prescription grow together) is held at the closed-form q(θ*), and the prescription's
    multiplier is the crank's holding torque V'(θ*) of the reduced potential; no freedom is left, so the stiffness
    reduced to the (empty) tangent space is trivially stable."""
    system = sim.linkage_system(FOUR_BAR, prescribed=("crank",), closures=PLANAR)
    for theta in (4.0, 0.7):
        u = jnp.array([theta, 0.0, 0.0, 0.0, 0.0])  # (q_k, q̇_k, q̈_k, the coupler's and rocker's efforts)
        sol = sim.solve_statics(system, u, four_bar_pose(jnp.asarray(0.0))[0])
        assert bool(sol.converged) and not bool(sol.singular)
        assert bool(sol.stable) and int(sol.morse_index) == 0 and float(sol.least_stiffness) == np.inf
        np.testing.assert_allclose(wrap(sol.q - _pose(jnp.asarray(theta))), 0.0, atol=1e-11)
        dV = float(_dV(theta))
        np.testing.assert_allclose(sol.multipliers[-1], dV, rtol=1e-9)


def test_constraint_drift_monitors_are_saved(system, tmp_path):
    """The monitors of constraint_drift travel with the trajectory to a file, with their units; leading batch axes
    are kept."""
    q = jnp.stack([_consistent_rest(), _consistent_rest() + 0.01])
    qd = jnp.zeros((2, 3))
    traj = Trajectory(
        t=jnp.array([0.0, 1.0]),
        q=q,
        qd=qd,
        u=jnp.zeros((2, 3)),
        points=jnp.zeros((2, FOUR_BAR.n_points, 3)),
        tip=jnp.zeros((2, 3)),
        num_steps=jnp.array(0),
        result=jnp.array(0),
    )
    out = sim.constraint_drift(system, traj)
    e = out.monitors["closure_error"]
    assert e.shape == (2,) and float(e[0]) < 1e-15 and float(e[1]) > 1e-3
    np.testing.assert_allclose(e[1], np.linalg.norm(lk.closure_error(FOUR_BAR, PLANAR, q[1])), rtol=1e-14)
    back = Trajectory.load(out.save(tmp_path / "four_bar"))
    np.testing.assert_allclose(back.monitors["closure_error"], e)
    assert "closure_velocity_error" in back.monitors
    assert "47c" in Trajectory.metadata(tmp_path / "four_bar")["units"]["monitors/closure_error"]
    batch = jax.tree.map(lambda x: jnp.stack([x, x]) if x.ndim else x, traj)
    assert sim.constraint_drift(system, batch).monitors["closure_velocity_error"].shape == (2, 2)


def test_without_closures_the_system_is_the_open_chain():
    assert isinstance(sim.linkage_system(FOUR_BAR).params, lk.Linkage)
    assert isinstance(sim.linkage_system(FOUR_BAR, closures=(), baumgarte_time=0.5).params, lk.Linkage)


@pytest.mark.parametrize(
    "make, error, match",
    [
        (lambda: sim.linkage_system(FOUR_BAR, closures=[PLANAR, "planar"]), TypeError, r"'closures'.*closures\[1\]"),
        (
            lambda: sim.linkage_system(FOUR_BAR, closures=lk.Closure("paw")),
            ValueError,
            r"linkage_system: 'closures': Closure 'paw–world': link_a 'paw' is not a link",
        ),
        (
            lambda: sim.linkage_system(FOUR_BAR, closures=lk.Closure("rocker", None, "fixed")),
            ValueError,
            r"linkage_system: 'closures' have 6 constraint rows for the linkage's 3 coordinates: they remove all mob",
        ),
        (
            lambda: sim.linkage_system(FOUR_BAR, prescribed=("crank", "coupler"), closures=PLANAR),
            ValueError,
            r"'closures' have 2 constraint rows for the linkage's 3 coordinates and 2 prescribed joint coordinates",
        ),
        (
            lambda: lk.constrained_forward_dynamics(
                FOUR_BAR, [PLANAR, lk.Closure("coupler", None, "planar", axis=(0.0, 0.0, 1.0))], *jnp.zeros((3, 3)), 0.1
            ),
            ValueError,
            r"constrained_forward_dynamics: the closures have 4 constraint rows for the linkage's 3 coordinates",
        ),
        (lambda: sim.linkage_system(FOUR_BAR, closures=PLANAR, baumgarte_time=0.0), ValueError, r"'baumgarte_time'"),
        (lambda: sim.linkage_system(FOUR_BAR, closures=PLANAR, baumgarte_time=-0.1), ValueError, r"'baumgarte_time'"),
        (lambda: sim.linkage_system(FOUR_BAR, closures=PLANAR, baumgarte_time=np.nan), ValueError, r"positive"),
        (lambda: sim.linkage_system(FOUR_BAR, closures=PLANAR, baumgarte_time=(0.1, 0.2)), ValueError, r"scalar"),
        (lambda: sim.linkage_system(FOUR_BAR, closures=PLANAR, baumgarte_time="fast"), ValueError, r"'baumgarte_time'"),
        (
            lambda: lk.constrained_residual(
                FOUR_BAR, PLANAR, jnp.zeros(3), jnp.zeros(3), jnp.zeros(2), jnp.zeros(3), 0.1
            ),
            ValueError,
            r"constrained_residual: qdd must have shape \(nv,\) = \(3,\)",
        ),
        (
            lambda: lk.constrained_residual(
                FOUR_BAR, PLANAR, jnp.zeros(3), jnp.zeros(3), jnp.zeros(3), jnp.zeros(3), 0.0
            ),
            ValueError,
            r"constrained_residual: baumgarte_time must be a positive scalar",
        ),
    ],
)
def test_bad_arguments_are_named(make, error, match):
    with pytest.raises(error, match=match):
        make()


def test_constraint_drift_needs_a_closed_chain(system):
    open_chain = sim.linkage_system(FOUR_BAR)
    traj = Trajectory(
        t=jnp.zeros(1),
        q=jnp.zeros((1, 3)),
        qd=jnp.zeros((1, 3)),
        u=jnp.zeros((1, 3)),
        points=jnp.zeros((1, FOUR_BAR.n_points, 3)),
        tip=jnp.zeros((1, 3)),
        num_steps=jnp.array(0),
        result=jnp.array(0),
    )
    with pytest.raises(TypeError, match=r"constraint_drift: 'system' must be a linkage_system\(\.\.\., closures"):
        sim.constraint_drift(open_chain, traj)
    with pytest.raises(ValueError, match=r"constraint_drift: 'trajectory' must have q \(\.\.\., 3\)"):
        sim.constraint_drift(system, Trajectory(**{**vars(traj), "q": jnp.zeros((1, 2))}))

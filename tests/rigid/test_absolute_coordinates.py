"""Seed 004 (Müller & Terze 2013): absolute-coordinate multibody systems in SE(3) vs SO(3)×R³.

Oracles: autodiff of plain reference curves (matrix exponential of the hat matrices, written here) for the joint
kinematics and
the energy balance; the Euler equations about the pivot for the heavy top; the statics of a hanging pendulum for λ;
the other configuration space for the same physical state; central differences for gradients. The integration tests
assert the paper's testable statements T1–T4 (digest 004 §5); the energy claim T5 is reported, not asserted.
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.scipy.linalg import expm

from jaxse3.integrate.rkmk import RKMK4, LieEuler, RKMKHeun
from jaxse3.rigid.absolute import (
    EXAMPLES,
    SPACES,
    MultibodySystem,
    RigidBody,
    box,
    double_pendulum,
    ground_joint,
    heavy_top,
)
from jaxse3.sim import Trajectory, simulate_multibody


def _skew(w):
    return jnp.array([[0.0, -w[2], w[1]], [w[2], 0.0, -w[0]], [-w[1], w[0], 0.0]])


def _expm0(M):
    """Matrix exponential as its Taylor polynomial to degree 4: exact in value and in the first four derivatives at
    t = 0 for M = O(t), which is all the tests below differentiate (cheaper than ``expm`` under nested autodiff)."""
    M2 = M @ M
    return jnp.eye(M.shape[-1]) + M + M2 / 2 + M2 @ M / 6 + M2 @ M2 / 24


def _curve(space, R0, r0, V, A):
    """Reference motion through (R0, r0) with velocity V and acceleration A (each body's convention), to 2nd order;
    only its derivatives at t = 0 are used."""

    def at(t):
        if space == "se3":
            X = t * V + 0.5 * t * t * A
            Xhat = jnp.zeros((4, 4)).at[:3, :3].set(_skew(X[:3])).at[:3, 3].set(X[3:])
            H0 = jnp.eye(4).at[:3, :3].set(R0).at[:3, 3].set(r0)
            H = H0 @ _expm0(Xhat)
            return H[:3, :3], H[:3, 3]
        R = R0 @ _expm0(_skew(t * V[:3] + 0.5 * t * t * A[:3]))
        return R, r0 + t * V[3:] + 0.5 * t * t * A[3:]

    return at


def _random_rotation(key):
    return expm(_skew(jax.random.normal(key, (3,))))


def _d(f, order):
    for _ in range(order):
        f = jax.jacfwd(f)
    return f(0.0)


# ---- model: kinematics, KKT, consistent initial conditions ---------------------------------------------------------


@pytest.mark.parametrize("space", SPACES)
def test_point_kinematics_match_autodiff_of_reference_curve(space):
    """ṗ = J V and p̈ = J A + b for p = R a + r, at random states and at rest (J, b of eqs. (50), (53), (61), (64))."""
    body = box(1.0, (0.3, 0.2, 0.1), space)

    def residuals(key, scale):
        k1, k2, k3, k4, k5 = jax.random.split(key, 5)
        R0, r0 = _random_rotation(k1), jax.random.normal(k2, (3,))
        V, A, a = scale * jax.random.normal(k3, (6,)), jax.random.normal(k4, (6,)), jax.random.normal(k5, (3,))
        curve = _curve(space, R0, r0, V, A)
        p = lambda t: curve(t)[0] @ a + curve(t)[1]
        J, b = body.point_jacobian(R0, a), body.point_bias(R0, V, a)
        return _d(p, 1) - J @ V, _d(p, 2) - (J @ A + b)

    for key, scale in zip(jax.random.split(jax.random.PRNGKey(0), 4), (1.0, 3.0, 1.0, 0.0)):  # eager (cheaper here)
        first, second = residuals(key, scale)
        assert float(jnp.max(jnp.abs(first))) < 1e-12 and float(jnp.max(jnp.abs(second))) < 1e-10


@pytest.mark.parametrize("name", list(EXAMPLES))
def test_initial_conditions_are_consistent(name):
    """g(q0) = 0 and J V0 = 0 for every example in both spaces, and both spaces describe the same physical state."""
    exs = [EXAMPLES[name](space) for space in SPACES]
    for ex in exs:
        assert float(jnp.max(ex.system.joint_violations(ex.y0))) < 1e-15
        assert float(jnp.max(ex.system.velocity_violations(ex.y0))) < 1e-13
    (R1, r1, V1), (R2, r2, V2) = (ex.system.unpack(ex.y0) for ex in exs)
    np.testing.assert_allclose(R1, R2, atol=1e-15)
    np.testing.assert_allclose(r1, r2, atol=1e-15)
    np.testing.assert_allclose(V1[:, :3], V2[:, :3], atol=1e-15)
    np.testing.assert_allclose(jnp.einsum("nij,nj->ni", R1, V1[:, 3:]), V2[:, 3:], atol=1e-13)
    assert np.isclose(float(exs[0].system.energy(exs[0].y0)), float(exs[1].system.energy(exs[1].y0)), rtol=1e-14)


def test_heavy_top_initial_kinetic_energy():
    """T0 = ½ω0ᵀ(Θ0 + m(‖r0‖²I − r0r0ᵀ))ω0 = 13972.4 J (seed 004 §5.1: 13.97 kJ)."""
    w, r0, m = jnp.array([0.0, 20 * jnp.pi, 10 * jnp.pi]), jnp.array([0.5, 0.0, 0.0]), 21.6
    theta_pivot = jnp.diag(jnp.array([0.36, 0.306, 0.09])) + m * (r0 @ r0 * jnp.eye(3) - jnp.outer(r0, r0))
    for space in SPACES:
        T0 = float(heavy_top(space).system.energy(heavy_top(space).y0))
        assert abs(T0 - 0.5 * w @ theta_pivot @ w) < 1e-9 and round(T0, 1) == 13972.4


@pytest.mark.parametrize("space", SPACES)
def test_heavy_top_accelerations_match_euler_equations_about_pivot(space):
    """KKT ω̇ equals the Euler equations about the fixed point, Θ_p ω̇ = −ω × Θ_p ω, at random orientations/rates;
    the COM acceleration equals the rigid-body point acceleration R(ω̇ × c + ω × (ω × c))."""
    m, theta0, c = 21.6, jnp.diag(jnp.array([0.36, 0.306, 0.09])), jnp.array([0.5, 0.0, 0.0])
    theta_p = theta0 + m * (c @ c * jnp.eye(3) - jnp.outer(c, c))
    system = heavy_top(space).system
    for key in jax.random.split(jax.random.PRNGKey(1), 4):
        k1, k2 = jax.random.split(key)
        R, w = _random_rotation(k1), 30.0 * jax.random.normal(k2, (3,))
        y = system.state(R[None], (R @ c)[None], w[None], (R @ jnp.cross(w, c))[None])
        R_, _, V = system.unpack(y)
        Vdot, _ = system.accelerations(R_, V)
        wdot = jnp.linalg.solve(theta_p, -jnp.cross(w, theta_p @ w))
        np.testing.assert_allclose(Vdot[0, :3], wdot, rtol=1e-11, atol=1e-9)
        rddot = R @ (jnp.cross(wdot, c) + jnp.cross(w, jnp.cross(w, c)))
        body_rddot = R @ (Vdot[0, 3:] + jnp.cross(w, jnp.cross(w, c)))  # r̈ = R(v̇ + ω × v), v = ω × c
        np.testing.assert_allclose(body_rddot if space == "se3" else Vdot[0, 3:], rddot, rtol=1e-11, atol=1e-8)


@pytest.mark.parametrize("space", SPACES)
def test_hanging_double_pendulum_reactions(space):
    """At rest hanging straight down: V̇ = 0 and λ are the joint reaction forces, λ1 = (0, 0, −2mg), λ2 = (0, 0, mg)."""
    ex = double_pendulum(space)
    R = jnp.stack([jnp.array([[0.0, 0.0, 1.0], [0.0, 1.0, 0.0], [-1.0, 0.0, 0.0]])] * 2)  # e_x ↦ −e_z
    r = jnp.array([[0.0, 0.0, -0.1], [0.0, 0.0, -0.3]])
    Vdot, lam = ex.system.accelerations(R, jnp.zeros((2, 6)))
    mg = 2.7 * 9.81
    np.testing.assert_allclose(Vdot, 0.0, atol=1e-12)
    np.testing.assert_allclose(lam, [[0.0, 0.0, -2 * mg], [0.0, 0.0, mg]], atol=1e-12)
    y = ex.system.state(R, r, jnp.zeros((2, 3)), jnp.zeros((2, 3)))
    assert float(jnp.max(ex.system.joint_violations(y))) < 1e-16


@pytest.mark.parametrize("name", list(EXAMPLES))
def test_kkt_accelerations_keep_constraints_and_conserve_energy(name):
    """Along the reference curve with the KKT accelerations: g̈ = 0 (index-1 condition) and Ė = 0 (ideal joints, gravity
    conservative), by autodiff of plain reference formulas; the physical accelerations agree between the two spaces."""

    def check(space):
        ex = EXAMPLES[name](space)
        system = ex.system
        R, r, V = system.unpack(ex.y0)
        Vdot, _ = system.accelerations(R, V)
        curves = [_curve(space, R[i], r[i], V[i], Vdot[i]) for i in range(len(system.bodies))]
        q = lambda t: tuple(jnp.stack(x) for x in zip(*(c(t) for c in curves)))
        gddot = jnp.stack([_d(lambda t: jt.violation(*q(t)), 2) for jt in system.joints])

        def energy(t):  # ½ωᵀΘω + ½m‖ṙ‖² − m gᵀr with ω̃ = RᵀṘ and ṙ from the curve
            Rt, rt = q(t)
            Rdot, rdot = jax.jacfwd(q)(t)
            e = 0.0
            for i, b in enumerate(system.bodies):
                W = Rt[i].T @ Rdot[i]
                w = jnp.array([W[2, 1], W[0, 2], W[1, 0]])
                e += 0.5 * w @ b.inertia @ w + 0.5 * b.mass * rdot[i] @ rdot[i] - b.mass * system.gravity @ rt[i]
            return e

        return gddot, energy(0.0), system.energy(ex.y0), _d(energy, 1), _d(lambda t: q(t)[1], 2)

    rddots = []
    for space in SPACES:
        gddot, e_ref, e, edot, rddot = check(space)  # eager: compiling these nested jacfwd costs more than running them
        assert float(jnp.max(jnp.abs(gddot))) < 1e-9
        np.testing.assert_allclose(e_ref, e, rtol=1e-13)
        assert abs(float(edot)) < 1e-8 * (float(e) + 1.0)
        rddots.append(rddot)
    np.testing.assert_allclose(rddots[0], rddots[1], rtol=1e-10, atol=1e-9)


def test_bad_input_errors():
    with pytest.raises(ValueError, match="space"):
        RigidBody(jnp.asarray(1.0), jnp.eye(3), "se2")
    with pytest.raises(ValueError, match="inertia"):
        RigidBody(jnp.asarray(1.0), jnp.eye(2))
    with pytest.raises(ValueError, match="refers to body 3"):
        MultibodySystem((box(1.0, (1.0, 1.0, 1.0)),), (ground_joint(3, jnp.zeros(3), jnp.zeros(3)),), jnp.zeros(3))
    with pytest.raises(ValueError, match="omega"):
        heavy_top().system.state(jnp.eye(3)[None], jnp.zeros((1, 3)), jnp.zeros(3), jnp.zeros((1, 3)))
    with pytest.raises(ValueError, match="side='body'"):
        simulate_multibody(heavy_top().system, heavy_top().y0, 0.01, 1e-3, RKMK4("exp", "spatial"))
    ht = heavy_top()
    bad = (
        (dict(solver="rk4"), "argument 'solver' must be an RKMK solver"),
        (dict(t_final=-1.0), "argument 't_final' must be a positive"),
        (dict(dt=0.0), "argument 'dt' must be a positive"),
        (dict(n_save=1), "argument 'n_save' must be an integer >= 2"),
        (dict(dt=jnp.asarray(1e-3)), "pass max_steps when dt or t_final is an array"),
        (dict(max_steps=5), "argument 'max_steps' = 5 is below the 10 steps"),
        (dict(max_steps=0), "argument 'max_steps' must be a positive integer"),
    )
    for kwargs, match in bad:
        with pytest.raises(ValueError, match=match):
            simulate_multibody(ht.system, ht.y0, **{"t_final": 0.01, "dt": 1e-3, **kwargs})
    with pytest.raises(ValueError, match=r"argument 'system' must be a jaxse3\.rigid\.absolute\.MultibodySystem"):
        simulate_multibody(ht, ht.y0, 0.01, 1e-3)
    with pytest.raises(ValueError, match=r"argument 'y0'.*body 0 is in so3xr3"):
        simulate_multibody(ht.system.with_spaces("so3xr3"), ht.y0, 0.01, 1e-3)
    with pytest.raises(ValueError, match=r"H must have shape \(1, 4, 4\)"):
        ht.system.state_from_poses(jnp.zeros((2, 4, 4)), jnp.zeros((1, 6)))


# ---- integration: the testable statements T1–T4 ----------------------------------------------------------------------

SOLVERS = {"euler": LieEuler, "heun": RKMKHeun, "rk4": RKMK4}
ORDERS = {"euler": 1, "heun": 2, "rk4": 4}
STEPS = (2e-3, 1e-3)


def _compile(fn, *args):
    return jax.jit(fn).lower(*args).compile()


@functools.cache
def _run(name: str, space: str, tableau: str, t1: float):
    """Max-over-time joint violations ``(dt, joint)`` and max |E − E0| ``(dt,)`` for the step sizes STEPS (one
    compilation, called per dt: cheaper to trace and compile than a vmap over dt, whose loop would be batched)."""
    ex = EXAMPLES[name](space)
    solver = SOLVERS[tableau](coordinates="exp", side="body")
    max_steps = math.ceil(t1 / min(STEPS)) + 1

    def one(dt):
        tr = simulate_multibody(ex.system, ex.y0, t1, dt, solver, n_save=21, max_steps=max_steps)
        viol, energy = tr.monitors["joint_violations"], tr.monitors["energy"]
        return jnp.max(viol, axis=0), jnp.max(jnp.abs(energy - energy[0]))

    run = _compile(one, jnp.asarray(STEPS[0]))
    viol, de = zip(*(run(jnp.asarray(dt)) for dt in STEPS))
    return np.stack(viol), np.stack(de)


@pytest.mark.parametrize("tableau", list(SOLVERS))
def test_T1_T2_heavy_top_pivot(tableau):
    """T1: SE(3) keeps the pivot to round-off (≤ 1e−12 m) for every tableau and step size; T2: SO(3)×R³ drifts, at
    the tableau's order. The energy error converges at the tableau's order in both spaces (T5 is not asserted)."""
    se3_viol, se3_de = _run("heavy_top", "se3", tableau, 0.1)
    so3_viol, so3_de = _run("heavy_top", "so3xr3", tableau, 0.1)
    print(tableau, "pivot SE(3)", se3_viol[:, 0], "SO(3)xR3", so3_viol[:, 0], "|dE| SE(3)", se3_de, "SO(3)xR3", so3_de)
    assert np.all(se3_viol <= 1e-12)
    assert np.all(so3_viol > 1e4 * 1e-12)
    order = math.log2(so3_viol[0, 0] / so3_viol[1, 0])
    assert abs(order - ORDERS[tableau]) < 0.3, order
    for de in (se3_de, so3_de):
        assert math.log2(de[0] / de[1]) > ORDERS[tableau] - 0.5


def test_T1_T3_T4_double_pendulum():
    """T1: SE(3) keeps ground joint 1 at round-off; T3: joint 2 (between the two moving bodies) violates by the same
    order in both spaces and converges at order 4 in both; T4: joint 2 violates more than joint 1 (both spaces)."""
    res = {space: _run("double_pendulum", space, "rk4", 0.2)[0] for space in SPACES}
    print("double pendulum", res)
    assert np.all(res["se3"][:, 0] <= 1e-12)
    ratio = res["se3"][:, 1] / res["so3xr3"][:, 1]
    assert np.all((0.1 < ratio) & (ratio < 10)), ratio
    for space in SPACES:
        assert abs(math.log2(res[space][0, 1] / res[space][1, 1]) - 4) < 0.3
        assert np.all(res[space][:, 1] > 5 * res[space][:, 0])
    assert np.all(res["se3"][:, 1] > 1e6 * res["se3"][:, 0])


@pytest.mark.slow
def test_T1_T3_three_bar_and_floating_pair():
    """3-bar: SE(3) keeps both ground joints (1, 3) at round-off, SO(3)×R³ does not; joint 2 violates by the same order
    in both spaces. Floating pair: same order in both spaces (seed 004 §5.3, §5.4)."""
    tb = {space: _run("three_bar", space, "rk4", 0.2)[0] for space in SPACES}
    fp = {space: _run("floating_pair", space, "rk4", 0.2)[0] for space in SPACES}
    print("three-bar", tb, "floating pair", fp)
    assert np.all(tb["se3"][:, [0, 2]] <= 1e-12) and np.all(tb["so3xr3"][:, [0, 2]] > 1e-12)
    for res in (tb, fp):
        j = 1 if res is tb else 0
        ratio = res["se3"][:, j] / res["so3xr3"][:, j]
        assert np.all((0.1 < ratio) & (ratio < 10)), ratio
        assert np.all(res["se3"][:, j] > 1e3 * 1e-16)


def test_mixed_spaces_vmap_over_initial_conditions():
    """Double pendulum with body 1 in SE(3) and body 2 in SO(3)×R³ (the paper's recommendation, §6), vmapped over the
    initial rate of body 1: ground joint 1 at round-off for every member; each member equals its unbatched run."""
    base = double_pendulum()
    system = base.system.with_spaces(("se3", "so3xr3"))

    def run(s):
        y0 = double_pendulum(omega1=(10.0 * s, 0.0, 0.0)).y0
        R, r, V = base.system.unpack(y0)
        rdot = jnp.einsum("nij,nj->ni", R, V[:, 3:])
        tr = simulate_multibody(system, system.state(R, r, V[:, :3], rdot), 0.02, 1e-3, RKMK4("exp", "body"), n_save=3)
        return tr.monitors["joint_violations"][-1], tr.points[-1, 1]

    scales = jnp.array([0.5, 1.0, 2.0])
    viol, r2 = _compile(jax.vmap(run), scales)(scales)
    assert np.all(np.asarray(viol[:, 0]) <= 1e-13) and np.all(np.asarray(viol[:, 1]) > 0)
    single = _compile(run, scales[2])
    np.testing.assert_allclose(single(scales[2])[1], r2[2], rtol=1e-13, atol=1e-14)


def test_multibody_trajectory_layout_state_round_trip_and_file(tmp_path):
    """sim.simulate_multibody returns a sim.Trajectory: body poses (n, b, 4, 4), velocities (n, b, 6), COM points and
    the monitors; state_from_poses inverts (poses, velocities) bit for bit in both spaces (mixed pendulum), and the
    .npz file keeps every field and monitor with their units."""
    ex = double_pendulum()
    system = ex.system.with_spaces(("se3", "so3xr3"))
    R, r, V = ex.system.unpack(ex.y0)
    y0 = system.state(R, r, V[:, :3], jnp.einsum("nij,nj->ni", R, V[:, 3:]))
    tr = _compile(lambda y: simulate_multibody(system, y, 0.004, 1e-3, n_save=3), y0)(y0)
    assert isinstance(tr, Trajectory) and tr.ok and tr.message == "successful" and int(tr.num_steps) == 4
    shapes = {k: np.shape(getattr(tr, k)) for k in ("t", "q", "qd", "u", "points", "tip")}
    assert shapes == {"t": (3,), "q": (3, 2, 4, 4), "qd": (3, 2, 6), "u": (3, 0), "points": (3, 2, 3), "tip": (3, 3)}
    assert {k: v.shape for k, v in tr.monitors.items()} == {"energy": (3,), "joint_violations": (3, 2)}
    np.testing.assert_array_equal(tr.points, tr.q[:, :, :3, 3])
    np.testing.assert_array_equal(tr.tip, tr.points[:, -1])
    np.testing.assert_allclose(tr.t, [0.0, 0.002, 0.004], rtol=1e-15)
    first = system.state_from_poses(tr.q[0], tr.qd[0])
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=0, atol=1e-15), first, y0)
    last = system.state_from_poses(tr.q[-1], tr.qd[-1])
    np.testing.assert_array_equal(system.poses(last), tr.q[-1])
    np.testing.assert_array_equal(system.unpack(last)[2], tr.qd[-1])
    np.testing.assert_allclose(system.energy(last), tr.monitors["energy"][-1], rtol=1e-14)
    np.testing.assert_allclose(system.joint_violations(last), tr.monitors["joint_violations"][-1], rtol=1e-12)
    path = tr.save(tmp_path / "pendulum", metadata={"example": ex.name})
    back = Trajectory.load(path)
    for k in Trajectory.__dataclass_fields__:
        if k != "monitors":
            np.testing.assert_array_equal(getattr(back, k), getattr(tr, k))
    assert set(back.monitors) == {"energy", "joint_violations"}
    for k, v in tr.monitors.items():
        np.testing.assert_array_equal(back.monitors[k], v)
    meta = Trajectory.metadata(path)
    assert meta["example"] == ex.name
    assert meta["units"]["monitors/energy"].startswith("J") and meta["units"]["monitors/joint_violations"][0] == "m"
    assert np.load(path)["monitors/energy"].shape == (3,)  # plain numpy reads it
    # throw=False: a run that stops early keeps its result code, NaN in the samples it did not reach
    dt = jnp.asarray(1e-3)
    short = _compile(lambda dt: simulate_multibody(system, y0, 0.004, dt, n_save=3, max_steps=2, throw=False), dt)(dt)
    assert not short.ok and "maximum number of solver steps" in short.message
    assert np.all(np.isfinite(short.q[0])) and np.all(np.isnan(short.q[-1])) and np.isnan(short.monitors["energy"][-1])


def test_gradient_of_final_state_wrt_initial_rate_matches_central_differences():
    """d/ds of a final-state loss (COM position of the heavy top, SE(3), Heun) through diffeqsolve, vs central FD."""

    def loss(s):
        ex = heavy_top("se3", omega0=(0.0, 20 * jnp.pi * s, 10 * jnp.pi))
        tr = simulate_multibody(ex.system, ex.y0, 0.01, 1e-3, RKMKHeun("exp", "body"), n_save=2)
        H = tr.q[-1, 0]
        return jnp.sum(H[:3, 3] * jnp.array([1.0, -2.0, 3.0])) + tr.monitors["energy"][-1] * 1e-4

    s0, eps = jnp.asarray(1.1), 1e-5
    value_and_grad = _compile(jax.value_and_grad(loss), s0)  # one compilation serves the differences too
    grad = value_and_grad(s0)[1]
    fd = (value_and_grad(s0 + eps)[0] - value_and_grad(s0 - eps)[0]) / (2 * eps)
    assert np.isfinite(grad)
    np.testing.assert_allclose(grad, fd, rtol=1e-6)

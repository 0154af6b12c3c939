"""Physical checks of the rod model: exact circle under a tip moment, Euler–Bernoulli sag, tendons shorten their side,
contact keeps the rod inside the cylinder, energy conservation without damping and actuation."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxse3 import rod as R
from tests.rod.conftest import random_state, small_rod

E, RHO, RADIUS, L = 1e6, 1000.0, 0.01, 0.5


def _uniform_rod(orders, gravity=(0.0, 0.0, 0.0), tendons=(), base_pose=None, E=E):
    return R.Rod(
        L,
        R.CircularSection(RADIUS),
        R.Material(E, RHO, nu=0.5),
        R.LegendreBasis(orders),
        n_gauss=4,
        tendons=tendons,
        gravity=gravity,
        base_pose=base_pose,
    )


_fk = jax.jit(R.forward_kinematics)


@functools.partial(jax.jit, static_argnames="iters")
def _statics(rod, u, loads, q0, iters=30):
    """Newton on τ(q, 0, u) − ID(q, 0, 0) = 0 with the analytical Jacobian (seed 003 eq. (13))."""
    z = jnp.zeros_like(q0)

    def step(q, _):
        r = R.generalized_forces(rod, q, z, u, loads) - R.inverse_dynamics(rod, q, z, z)
        Tq, _ = R.generalized_forces_derivatives(rod, q, z, u, loads)
        Iq, _, _ = R.inverse_dynamics_derivatives(rod, q, z, z)
        return q - jnp.linalg.solve(Tq - Iq, r), jnp.linalg.norm(r)

    q, res = jax.lax.scan(step, q0, None, length=iters)
    return q, res


@pytest.mark.parametrize("frame", ["local"])  # the world-frame wrench is covered in test_forces
def test_pure_tip_moment_bends_an_inextensible_rod_into_the_exact_circle(frame):
    rod = _uniform_rod((1, 2, 2, None, None, None))
    Iy = np.pi * RADIUS**4 / 4
    kappa = 1.5 / L  # 1.5 rad of bending
    loads = R.Loads.at_tip(rod, jnp.array([0.0, E * Iy * kappa, 0, 0, 0, 0]), frame=frame)
    q, res = _statics(rod, None, loads, jnp.zeros(rod.n_dof))
    assert float(res[-1]) < 1e-12 * E * Iy
    np.testing.assert_allclose(q, jnp.zeros(rod.n_dof).at[2].set(kappa), atol=1e-12)  # constant bend_y only
    X = rod.X
    want = np.stack([np.sin(kappa * X) / kappa, 0 * X, -(1 - np.cos(kappa * X)) / kappa], -1)
    np.testing.assert_allclose(_fk(rod, q)[:, :3, 3], want, atol=1e-13)


def test_straight_rod_sags_under_gravity_like_euler_bernoulli():
    rod = _uniform_rod((1, 2, 2, 1, 1, 1), gravity=(0.0, 0.0, -9.81), E=1e8)
    q, res = _statics(rod, None, None, jnp.zeros(rod.n_dof))
    g = _fk(rod, q)
    assert float(res[-1]) < 1e-9
    assert bool(jnp.all(g[1:, 2, 3] < 0))  # every point below the base
    w = RHO * np.pi * RADIUS**2 * 9.81
    EI = 1e8 * np.pi * RADIUS**4 / 4
    tip = -float(g[-1, 2, 3])
    np.testing.assert_allclose(tip, w * L**4 / (8 * EI), rtol=0.02)  # small-deflection cantilever


def test_tendon_shortens_its_side_and_bends_the_rod_towards_it():
    r_t = 0.6 * RADIUS
    rod = _uniform_rod((0, 1, 1, 0, 0, 0), tendons=(R.Tendon(lambda X, _: jnp.stack([0.0 * X, r_t + 0.0 * X])),))
    u = jnp.array([1.0])
    q, res = _statics(rod, u, None, jnp.zeros(rod.n_dof))
    assert float(res[-1]) < 1e-10
    # exact: constant κ_y = −u r_t/(E I_y), elongation strain −u/(E A)
    Iy, A = np.pi * RADIUS**4 / 4, np.pi * RADIUS**2
    xi = rod.Phi @ q
    np.testing.assert_allclose(xi[:, 1], -u[0] * r_t / (E * Iy), rtol=1e-9)
    np.testing.assert_allclose(xi[:, 3], -u[0] / (E * A), rtol=1e-9)
    tip = R.tip_position(rod, q)
    assert float(tip[2]) > 0.05  # bends towards the tendon (local +z)
    T = R.forces.tendon_tangents(rod, q)[0]
    assert float(jnp.sum(rod.weights * jnp.linalg.norm(T, axis=-1))) < L  # the tendon's path got shorter


def test_contact_keeps_the_rod_inside_the_cylinder():
    down = jnp.eye(4).at[:3, :3].set(jnp.array([[0.0, 0, 1], [0, 1, 0], [-1, 0, 0]]))  # hanging along −z
    r_t = 0.6 * RADIUS
    rod = _uniform_rod(
        (1, 2, 2, 1, 1, 1),
        gravity=(0.0, 0.0, -9.81),
        base_pose=down,
        tendons=(R.Tendon(lambda X, _: jnp.stack([0.0 * X, r_t + 0.0 * X])),),
    )
    u = jnp.array([0.8])
    q_free, res_free = _statics(rod, u, None, jnp.zeros(rod.n_dof))
    reach_free = jnp.linalg.norm(_fk(rod, q_free)[:, :2, 3], axis=1) + rod.contact_radius
    rc = 0.6 * float(jnp.max(reach_free))
    q, res = _statics(rod, u, R.Loads(contact=R.CylinderContact(rc, 1e3, 1.5)), q_free, iters=40)
    reach = jnp.linalg.norm(_fk(rod, q)[:, :2, 3], axis=1) + rod.contact_radius
    assert float(res_free[-1]) < 1e-9 and float(res[-1]) < 1e-8
    assert float(jnp.max(reach)) < rc + 0.1 * (float(jnp.max(reach_free)) - rc)  # pushed back inside
    assert float(jnp.max(reach)) > rc  # penalty: small residual penetration


def _energy(rod, q, qd):
    M = R.mass_matrix(rod, q)
    r = R.forward_kinematics(rod, q)[:, :3, 3]
    m = rod.inertia[:, 3]
    return 0.5 * qd @ M @ qd + 0.5 * q @ rod.stiffness @ q - jnp.sum(m * (r @ rod.gravity))


@jax.jit
def _power(rod, q, qd):
    qdd = R.forward_dynamics(rod, q, qd)
    _, dE = jax.jvp(lambda a, b: _energy(rod, a, b), (q, qd), (qd, qdd))
    return dE, jnp.abs(qd @ R.mass_matrix(rod, q) @ qdd)


def test_power_balance_without_damping_and_actuation():
    """dE/dt = 0 along q̈ = FD(q, q̇, 0) when D = 0 (exact identity: checks Coriolis, gravity and M together)."""
    rod = small_rod(damping=0.0)
    for seed in (0, 1):
        q, qd, _, _ = random_state(rod, seed)
        dE, scale = _power(rod, q, qd)
        assert abs(float(dE)) < 1e-10 * scale, (float(dE), scale)


@pytest.mark.slow
def test_energy_conserved_in_a_short_dopri8_run():
    diffrax = pytest.importorskip("diffrax")
    rod = small_rod(damping=0.0)
    q0, qd0, _, _ = random_state(rod, 2, scale=0.2)
    n = rod.n_dof

    def f(t, y, args):
        return jnp.concatenate([y[n:], R.forward_dynamics(rod, y[:n], y[n:])])

    sol = diffrax.diffeqsolve(
        diffrax.ODETerm(f),
        diffrax.Dopri8(),
        0.0,
        0.05,
        1e-4,
        jnp.concatenate([q0, qd0]),
        stepsize_controller=diffrax.PIDController(rtol=1e-11, atol=1e-12),
        saveat=diffrax.SaveAt(ts=jnp.linspace(0, 0.05, 6)),
        max_steps=200000,
    )
    energy = jax.jit(_energy)
    Es = jnp.array([energy(rod, y[:n], y[n:]) for y in sol.ys])
    kinetic = 0.5 * qd0 @ jax.jit(R.mass_matrix)(rod, q0) @ qd0
    assert float(jnp.max(jnp.abs(Es - Es[0]))) < 1e-7 * float(kinetic)
    assert float(jnp.max(jnp.abs(sol.ys[-1, :n] - q0))) > 1e-3  # it moved

"""The rod's mechanical energy (:func:`jaxse3.rod.energy`) against independent evaluations: the gradient of its
potential part against the static forces of the RNEA (−Kq − ID(q, 0, 0)), its kinetic part against ½ Σ ηᵀ𝓜η from
the body Jacobians, conservation along an undamped motion, and the damping's dissipation ∫ q̇ᵀDq̇ dt along a damped
one (the power balance dE/dt = −q̇ᵀDq̇), planar and spatial, at random states and at the straight rest state."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxse3 import rod as R
from jaxse3.rod.basis import LegendreBasis
from jaxse3.rod.geometry import CircularSection, Material
from jaxse3.sim import rod_system, simulate

TILT = jnp.array([[0.0, 0.0, 1.0], [0.0, 1.0, 0.0], [-1.0, 0.0, 0.0]]) @ jnp.array(
    [[1.0, 0.0, 0.0], [0.0, 0.8, -0.6], [0.0, 0.6, 0.8]]
)


def _rod(orders, damping: float, gravity=(0.0, 0.0, -9.81)) -> R.Rod:
    base = jnp.eye(4).at[:3, :3].set(TILT).at[:3, 3].set(jnp.array([0.1, -0.2, 0.3]))
    return R.Rod(
        length=0.4,
        section=CircularSection(0.02, 0.012),
        material=Material(E=2e5, rho=1000.0, nu=0.45, damping=damping),
        basis=LegendreBasis(orders),
        n_gauss=4,
        base_pose=base,
        gravity=gravity,
    )


SPATIAL = (1, 1, 1, 0, 0, 0)
PLANAR = (None, None, 1, 0, 0, None)


@pytest.mark.parametrize("orders", [SPATIAL, PLANAR], ids=["spatial", "planar"])
def test_the_potential_energy_s_gradient_is_the_static_force(orders):
    rod = _rod(orders, damping=0.0, gravity=(0.3, -2.0, -9.81))
    potential = lambda q: (lambda e: e.elastic + e.gravitational)(R.energy(rod, q, jnp.zeros_like(q)))
    rest_force = lambda q: R.generalized_forces(rod, q, jnp.zeros_like(q)) - R.inverse_dynamics_at_rest(rod, q)
    gradient, rest_force = jax.jit(jax.grad(potential)), jax.jit(rest_force)
    rng = np.random.default_rng(0)
    for q in (jnp.zeros(rod.n_dof), jnp.asarray(rng.normal(size=rod.n_dof)) * 2.0):
        np.testing.assert_allclose(gradient(q), -rest_force(q), rtol=1e-10, atol=1e-12)
    straight = jax.jit(R.energy)(rod, jnp.zeros(rod.n_dof), jnp.zeros(rod.n_dof))
    assert straight.kinetic == 0 and straight.elastic == 0
    # the straight rod's weight: its mass at its centre of mass (the taper puts it nearer the base)
    s = np.linspace(0.0, 0.4, 20001)
    area = np.pi * (0.02 + (0.012 - 0.02) * s / 0.4) ** 2
    centre = np.trapezoid(area * s, s) / np.trapezoid(area, s)
    mass = 1000.0 * np.trapezoid(area, s)
    axis = np.asarray(TILT[:, 0])
    expected = -mass * centre * axis @ np.array([0.3, -2.0, -9.81])
    np.testing.assert_allclose(straight.gravitational, expected, rtol=1e-6)  # 4 Gauss points: exact for a cubic


def test_the_kinetic_energy_is_half_the_sum_of_the_points_twists_through_their_inertias():
    rod = _rod(SPATIAL, damping=0.0)
    rng = np.random.default_rng(1)
    q, qd = (jnp.asarray(rng.normal(size=rod.n_dof)) for _ in range(2))
    J = R.body_jacobians(rod, q)  # (n_p, 6, n): the points' body twists η_k = J_k q̇
    eta = J @ qd
    expected = 0.5 * jnp.sum(rod.inertia * eta**2)  # 𝓜_k diagonal, quadrature weights included
    np.testing.assert_allclose(R.energy(rod, q, qd).kinetic, expected, rtol=1e-12)
    total = R.energy(rod, q, qd)
    assert total.total == total.kinetic + total.elastic + total.gravitational


def _energies(rod, traj) -> R.Energy:
    return jax.jit(jax.vmap(lambda q, qd: R.energy(rod, q, qd)))(traj.q, traj.qd)


def test_an_undamped_motion_conserves_the_energy_and_a_damped_one_dissipates_q_dot_D_q_dot():
    q0 = jnp.asarray(np.random.default_rng(2).normal(size=9)) * 1.5  # 9 DoF: linear angular, constant linear
    kw = dict(t_final=0.3, n_save=301, solver="tsit5", rtol=1e-11, atol=1e-12, progress=False)
    free = _rod(SPATIAL, damping=0.0)
    traj = simulate(rod_system(free), None, q0=q0, **kw)
    parts = _energies(free, traj)
    E, swing = np.asarray(parts.total), np.ptp(np.asarray(parts.kinetic))
    assert swing > 1e-3  # the energy moves between its parts
    assert np.ptp(E) < 1e-8 * swing
    damped = _rod(SPATIAL, damping=50.0)
    traj = simulate(rod_system(damped), None, q0=q0, **{**kw, "n_save": 3001})  # 0.1 ms: the trapezoid's samples
    E = np.asarray(_energies(damped, traj).total)
    power = np.einsum("ti,ij,tj->t", traj.qd, damped.damping, traj.qd)  # q̇ᵀDq̇ ≥ 0
    dissipated = np.concatenate([[0.0], np.cumsum(0.5 * (power[1:] + power[:-1]) * np.diff(traj.t))])
    assert dissipated[-1] > 0.1 * swing  # the damping takes a good share of the motion's energy
    assert np.all(np.diff(E) <= 1e-12)  # never gains
    np.testing.assert_allclose(E[0] - E, dissipated, atol=1e-4 * dissipated[-1])  # trapezoid error O(Δt²)

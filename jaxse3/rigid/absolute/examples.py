"""The four systems of seed 004 §5 (Müller & Terze 2013), with their data and consistent initial conditions.

The paper leaves much unstated (digest 004 §4, P6); every assumption is documented where it is made:

- §5.1 heavy top *without* gravity (the paper's title says "in gravity field", its run has F = M = 0): aluminium box
  0.1 × 0.2 × 0.4 m, m = 21.6 kg, Θ = diag(0.36, 0.306, 0.09) kg m², COM at r0 = (0.5, 0, 0) m from the pivot (body
  frame), pivot at the origin, R(0) = I, ω(0) = (0, 20π, 10π) rad/s. The consistent COM velocity ṙ(0) = ω0 × r0 =
  (0, 5π, −10π) m/s is derived in digest 004 §4.1; the kinetic energy is T0 = 13972.4 J (paper: 13.97 kJ).
- §5.2 spherical double pendulum in gravity: two boxes a × b × c = 0.2 × 0.1 × 0.05 m; mass and inertia are not given,
  aluminium is assumed (m = 2.7 kg); g = 9.81 m/s² (not given). Joint 1 fixes body 1's end (−a/2, 0, 0) to the origin,
  joint 2 joins (a/2, 0, 0) of body 1 to (−a/2, 0, 0) of body 2; both bodies start along the x axis, R(0) = I,
  ω1 = (10, 0, 0), ω2 = (10π, 10π, 20π) rad/s, consistent ṙ1 = 0, ṙ2 = (0, 2π, −π) m/s (digest 004 §4.2).
- §5.3 the same two bodies floating without gravity, joined by joint 2 only: ω1 = (0, 0, −10), ω2 = (1, −1, 2π) rad/s,
  ṙ1 = 0 (a choice), ṙ2 = (0, −1 + 0.2π, 0.1) m/s (digest 004 §4.3).
- §5.4 closed-loop spherical 3-bar linkage (no data in the paper; this geometry is ours, the one of digest 004 §7):
  the two boxes of §5.2 in gravity, ground points A = 0 and B = (0.3, 0, 0) m; body 1 spans A → apex P, body 2 spans
  B → P, with P = (0.15, 0, √(0.2² − 0.15²)) = (0.15, 0, 0.1323) m, so the bars form an isosceles triangle in the
  vertical x–z plane with the apex up. Joint 1: body 1 (−a/2, 0, 0) at A; joint 2: body 1 (a/2, 0, 0) to body 2
  (a/2, 0, 0) at P; joint 3: body 2 (−a/2, 0, 0) at B. Each body's x axis runs along its bar. The loop has 3 degrees of
  freedom (the triangle turns about AB, each bar spins about its own axis); the initial velocity is consistent
  by construction: spatial angular velocities ω_i = Ω e_x + s_i u_i (u_i the bar directions) with Ω = 4 rad/s,
  s1 = 10 rad/s, s2 = −6 rad/s, and COM velocities ṙ_i = ω_i × (c_i − base_i); the apex velocity Ω e_x × (P − A)
  is then the same from both bars because B − A ∥ e_x.

Each function returns an :class:`Example` whose ``system`` uses the requested configuration space for every body.
Angular velocities are arguments so that the examples can be batched (``vmap``) and differentiated.
"""

from __future__ import annotations

from typing import NamedTuple

import jax.numpy as jnp
from jaxtyping import ArrayLike

from jaxse3.lie import so3
from jaxse3.rigid.absolute.bodies import RigidBody, Space, box
from jaxse3.rigid.absolute.joints import body_joint, ground_joint
from jaxse3.rigid.absolute.system import MultibodySystem, State

G = 9.81  # [m/s²], not given in the paper
ALUMINIUM = 2700.0  # [kg/m³]
PLATE = (0.2, 0.1, 0.05)  # the "flat boxes" of §5.2–§5.4 [m]
PLATE_MASS = ALUMINIUM * PLATE[0] * PLATE[1] * PLATE[2]  # 2.7 kg (assumed material)


class Example(NamedTuple):
    """A system with consistent initial state and the paper's step size.

    Attributes:
        name: short name.
        system: the :class:`MultibodySystem`.
        y0: consistent initial state pytree.
        dt: step size [s] (seed 004: Δt = 1e-3 s for §5.1, §5.2; assumed for §5.3, §5.4).
        t1: simulated time [s] (not given in the paper; our choice).
        ground_joints: indices of the joints to ground (the ones T1 says SE(3) keeps exactly).
    """

    name: str
    system: MultibodySystem
    y0: State
    dt: float
    t1: float
    ground_joints: tuple[int, ...]


def _initial(system, R, r, omega, rdot) -> State:
    return system.state(jnp.stack(R), jnp.stack(r), jnp.stack(omega), jnp.stack(rdot))


def heavy_top(space: Space = "se3", omega0: ArrayLike = (0.0, 20 * jnp.pi, 10 * jnp.pi)) -> Example:
    """Seed 004 §5.1: the heavy top without gravity; ``omega0`` the body angular velocity at R = I [rad/s]."""
    top = RigidBody(jnp.asarray(21.6), jnp.diag(jnp.array([0.36, 0.306, 0.09])), space)
    r0 = jnp.array([0.5, 0.0, 0.0])  # COM seen from the pivot, body frame (eq. (38))
    system = MultibodySystem((top,), (ground_joint(0, -r0, jnp.zeros(3)),), jnp.zeros(3))
    w = jnp.asarray(omega0, float)
    return Example("heavy top", system, _initial(system, [jnp.eye(3)], [r0], [w], [jnp.cross(w, r0)]), 1e-3, 1.0, (0,))


def _plates(space: Space) -> tuple[RigidBody, RigidBody]:
    return box(PLATE_MASS, PLATE, space), box(PLATE_MASS, PLATE, space)


def double_pendulum(
    space: Space = "se3",
    omega1: ArrayLike = (10.0, 0.0, 0.0),
    omega2: ArrayLike = (10 * jnp.pi, 10 * jnp.pi, 20 * jnp.pi),
    gravity: float = G,
) -> Example:
    """Seed 004 §5.2: spherical double pendulum in gravity, both plates along the x axis at t = 0."""
    a = PLATE[0]
    end = jnp.array([a / 2, 0.0, 0.0])
    joints = (ground_joint(0, -end, jnp.zeros(3)), body_joint(0, end, 1, -end))
    system = MultibodySystem(_plates(space), joints, jnp.array([0.0, 0.0, -gravity]))
    w1, w2 = jnp.asarray(omega1, float), jnp.asarray(omega2, float)
    rdot1 = jnp.cross(w1, end)  # ground point fixed (R = I)
    rdot2 = rdot1 + jnp.cross(w1, end) + jnp.cross(w2, end)  # joint-2 points move together
    y0 = _initial(system, [jnp.eye(3)] * 2, [end, 3 * end], [w1, w2], [rdot1, rdot2])
    return Example("double pendulum", system, y0, 1e-3, 2.0, (0,))


def floating_pair(
    space: Space = "se3", omega1: ArrayLike = (0.0, 0.0, -10.0), omega2: ArrayLike = (1.0, -1.0, 2 * jnp.pi)
) -> Example:
    """Seed 004 §5.3: the two plates joined by one spherical joint, floating without gravity."""
    a = PLATE[0]
    end = jnp.array([a / 2, 0.0, 0.0])
    system = MultibodySystem(_plates(space), (body_joint(0, end, 1, -end),), jnp.zeros(3))
    w1, w2 = jnp.asarray(omega1, float), jnp.asarray(omega2, float)
    rdot2 = jnp.cross(w1, end) + jnp.cross(w2, end)  # with ṙ1 = 0
    y0 = _initial(system, [jnp.eye(3)] * 2, [end, 3 * end], [w1, w2], [jnp.zeros(3), rdot2])
    return Example("floating pair", system, y0, 1e-3, 2.0, ())


def three_bar(
    space: Space = "se3", turn_rate: ArrayLike = 4.0, spins: ArrayLike = (10.0, -6.0), gravity: float = G
) -> Example:
    """Closed-loop spherical 3-bar linkage (seed 004 §5.4; geometry and data ours, see the module docstring).

    ``turn_rate`` Ω: rate of the triangle about the base axis AB [rad/s]; ``spins`` (s1, s2): spin of each bar about
    its own axis [rad/s].
    """
    a = PLATE[0]
    A, B = jnp.zeros(3), jnp.array([0.3, 0.0, 0.0])
    P = jnp.array([0.15, 0.0, jnp.sqrt(a**2 - 0.15**2)])
    end = jnp.array([a / 2, 0.0, 0.0])
    joints = (ground_joint(0, -end, A), body_joint(0, end, 1, end), ground_joint(1, -end, B))
    system = MultibodySystem(_plates(space), joints, jnp.array([0.0, 0.0, -gravity]))
    spins = jnp.asarray(spins, float)
    R, r, omega, rdot = [], [], [], []
    for base, s in ((A, spins[0]), (B, spins[1])):
        u = (P - base) / a
        Ri = so3.exp(jnp.array([0.0, -jnp.arctan2(u[2], u[0]), 0.0]))  # rotation about y taking e_x to u
        w_spatial = turn_rate * jnp.array([1.0, 0.0, 0.0]) + s * u
        R.append(Ri)
        r.append(base + u * a / 2)
        omega.append(Ri.T @ w_spatial)
        rdot.append(jnp.cross(w_spatial, u * a / 2))
    return Example("three-bar linkage", system, _initial(system, R, r, omega, rdot), 1e-3, 2.0, (0, 2))


EXAMPLES = {
    "heavy_top": heavy_top,
    "double_pendulum": double_pendulum,
    "floating_pair": floating_pair,
    "three_bar": three_bar,
}

"""A planar four-bar for the closed-chain tests, with its closed-form position analysis and its one-degree-of-freedom
Lagrangian dynamics written here from the bodies' planar poses (independent of the linkage's algorithms).

Crank, coupler and rocker turn about parallel z axes in the vertical xy plane; the rocker's tip is closed to the
ground pivot O₄ = (d, 0) by a ``"planar"`` closure. The crank angle θ = q₀ is the one degree of freedom: the closed
form (a two-circle intersection) gives the consistent coordinates q(θ), and Lagrange's equation of the reduced system
is m(θ)θ̈ + ½m'(θ)θ̇² + V'(θ) = q'(θ)ᵀu.
"""

import jax
import jax.numpy as jnp
import numpy as np

from jaxse3 import linkage as lk, rigid, se3

Z = (0.0, 0.0, 1.0)
#: link lengths: crank a, coupler b, rocker c, ground d. Grashof: s + l = a + d = 0.5 ≤ p + q = b + c = 0.65, and the
#: shortest link (the crank) is next to the ground: a crank–rocker (the crank turns fully, the rocker oscillates)
A_, B_, C_, D_ = 0.1, 0.35, 0.3, 0.4
#: masses and centres of mass (link frame, the frame's x axis along the link) and rotational inertias about the centre
#: of mass of crank, coupler and rocker
MASSES = (0.5, 1.0, 0.8)
COMS = ((0.05, 0.01, 0.0), (0.17, -0.02, 0.0), (0.15, 0.015, 0.0))
IZZ = (3e-4, 1.1e-2, 6.5e-3)
GRAVITY_Y = -9.81  # the mechanism moves in the vertical xy plane
PSI0 = -1.0  # the orientation of the ground frame B: the rocker's direction swings in about (−1.4, −0.7)


def pose(p=(0.0, 0.0, 0.0), angle=0.0, axis=Z):
    R = se3.exp(jnp.concatenate([angle * jnp.asarray(axis, float), jnp.zeros(3)]))[:3, :3]
    return se3.from_rotation_translation(R, jnp.asarray(p, float))


def four_bar() -> tuple[lk.Linkage, lk.Closure]:
    """The linkage (three revolute links in a chain) and its planar closure of the rocker's tip to the ground."""
    body = lambda k: rigid.spatial_inertia(MASSES[k], COMS[k], np.diag([1e-4, 2e-4, IZZ[k]]))
    axis = (*Z, 0.0, 0.0, 0.0)
    links = [
        lk.Link.rigid("crank", None, "revolute", body(0), axis=axis),
        lk.Link.rigid("coupler", "crank", "revolute", body(1), pose((A_, 0, 0)), axis),
        lk.Link.rigid("rocker", "coupler", "revolute", body(2), pose((B_, 0, 0)), axis),
    ]
    closure = lk.Closure(
        "rocker", None, "planar", axis=Z, placement_a=pose((C_, 0, 0)), placement_b=pose((D_, 0, 0), PSI0)
    )
    return lk.Linkage(links, gravity=(0.0, GRAVITY_Y, 0.0)), closure


FOUR_BAR, PLANAR = four_bar()


def angle(v):
    return jnp.arctan2(v[1], v[0])


def wrap(x):
    return jnp.arctan2(jnp.sin(x), jnp.cos(x))


def four_bar_pose(theta):
    """Closed-form position analysis: the coupler–rocker pin B is the intersection of the circle of radius b about the
    crank pin A and the circle of radius c about the ground pivot O₄ = (d, 0), on the branch left of A→O₄ (the open
    assembly). Returns the joint coordinates q and the absolute angles and origins of the three links."""
    pin_a = A_ * jnp.array([jnp.cos(theta), jnp.sin(theta)])
    o4 = jnp.array([D_, 0.0])
    r = jnp.linalg.norm(o4 - pin_a)
    u = (o4 - pin_a) / r
    x = (B_**2 - C_**2 + r**2) / (2 * r)
    pin_b = pin_a + x * u + jnp.sqrt(B_**2 - x**2) * jnp.array([-u[1], u[0]])
    phi = jnp.stack([theta, angle(pin_b - pin_a), angle(o4 - pin_b)])
    q = jnp.stack([theta, wrap(phi[1] - phi[0]), wrap(phi[2] - phi[1])])
    return q, phi, jnp.stack([jnp.zeros(2), pin_a, pin_b])


def _rot(f, c):
    return jnp.array([jnp.cos(f) * c[0] - jnp.sin(f) * c[1], jnp.sin(f) * c[0] + jnp.cos(f) * c[1]])


def reduced(theta):
    """m(θ) and V(θ) of the bodies' planar poses: T = ½ Σ (m_k |ċ_k|² + I_zz,k φ̇_k²) = ½ m(θ) θ̇², V = −Σ m_k a_g·c_k."""

    def coms(theta):
        _, phi, origins = four_bar_pose(theta)
        return jnp.stack([origins[k] + _rot(phi[k], COMS[k]) for k in range(3)]), phi

    (c, _), (dc, dphi) = jax.jvp(coms, (theta,), (jnp.ones_like(theta),))
    m = jnp.asarray(MASSES)
    mass = jnp.sum(m * jnp.sum(dc**2, axis=1)) + jnp.sum(jnp.asarray(IZZ) * dphi**2)
    return mass, -jnp.sum(m * GRAVITY_Y * c[:, 1])


def reduced_acceleration(theta, theta_d, u):
    """θ̈ = (q'ᵀu − ½ m'(θ) θ̇² − V'(θ)) / m(θ), Lagrange's equation of the one-degree-of-freedom chain."""
    mass, dmass = jax.jvp(lambda t: reduced(t)[0], (theta,), (1.0,))
    dV = jax.grad(lambda t: reduced(t)[1])(theta)
    dq = jax.jacfwd(lambda t: four_bar_pose(t)[0])(theta)
    return (dq @ u - 0.5 * dmass * theta_d**2 - dV) / mass


def energy(q, qd):
    """Kinetic + gravitational energy of the three bodies at joint coordinates q (any, on the manifold or not) and
    velocities q̇, from their planar poses: absolute angles φ = cumsum(q), origins at the previous links' ends."""

    def coms(q):
        phi = jnp.cumsum(q)
        o1 = A_ * jnp.array([jnp.cos(phi[0]), jnp.sin(phi[0])])
        o2 = o1 + B_ * jnp.array([jnp.cos(phi[1]), jnp.sin(phi[1])])
        origins = (jnp.zeros(2), o1, o2)
        return jnp.stack([origins[k] + _rot(phi[k], COMS[k]) for k in range(3)]), phi

    (c, _), (dc, dphi) = jax.jvp(coms, (q,), (qd,))
    m = jnp.asarray(MASSES)
    kinetic = 0.5 * (jnp.sum(m * jnp.sum(dc**2, axis=1)) + jnp.sum(jnp.asarray(IZZ) * dphi**2))
    return kinetic - jnp.sum(m * GRAVITY_Y * c[:, 1])

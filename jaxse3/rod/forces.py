"""Internal, actuation and external forces of a GVS rod and their q-derivatives (seed 003 §4.4, §6; App. D).

Internal forces (eq. (35)): ``τ_int = B(q) u − K q − D q̇`` with constant K (D64) and D (D65) assembled by the rod.

Tendon (cable) actuation (D60–D63). Tendon j runs at d_j(X) = (0, y_j(X), z_j(X)) in the cross-section. With
ξ = (k, p) (angular, linear) its local tangent is 𝒯 = k × d + p + d′ (the working form of the garbled D62), t = 𝒯/‖𝒯‖,
and a tension u_j ≥ 0 contributes the generalised force

    (B u)_j = − Σ_k w_k Φ_kᵀ [d̃ t; t] u_j                                                          (D60)

Sign: the paper prints D60 with "+"; with that sign a positive u would stretch the rod. We define u as the physical
tension (u ≥ 0 pulls, as the CDM's tensions in [0, 100] N), which shortens the rod on the tendon's side — the section
carries the reaction −u t of the cable (tested). The derivative is D63 with the same sign:

    ∂(B u)/∂q = − Σ_k w_k Φ_kᵀ Σ_j (u_j/‖𝒯‖) [[d̃t̃²d̃, −d̃t̃²], [t̃²d̃, −t̃²]] Φ_k                    (D63)

External point wrenches (:class:`Loads`), physical wrenches (moment, force) applied at the computational points:

* ``local``: follower wrenches in the local frame, ∂𝓕/∂q = 0;
* ``world``: world-aligned components applied at the point, 𝓕_k = Ad^{−*}_{g_θk} 𝓕_g (eq. (53)), with
  ∂𝓕_k/∂q = ad_{𝓕_k} I_θ J_k (eq. (59); the printed eq. (54) with ad* is a misprint, digest §8);
* ``contact``: a hollow cylinder of radius r_c around the world z axis (:class:`CylinderContact`), Hertz-type penalty
  (eqs. (57)–(61)) on spheres of the section's radius at every point: penetration δ = ‖C₁r‖ + r_k − r_c, world force
  f = −k_c δ^p u_⊥ for δ > 0 — the wall pushes the rod **inward** (the paper's +k_c δ^p u_⊥ is the term added to the
  RNEA wrench, i.e. minus the physical load; digest §4) — with ∂f/∂r = −k* C₁, k* of eq. (61).

Quadrature weights are not applied to point wrenches (they are point loads); multiply by ``rod.weights`` for a
distributed load.
"""

from __future__ import annotations

from collections.abc import Callable

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float

import jaxse3  # the annotations name jaxse3.rod.model.Rod: that module imports this one (Tendon), not vice versa
from jaxse3 import se3, so3
from jaxse3.rod.geometry import screw_damping, screw_stiffness

__all__ = [
    "Tendon",
    "cdm_tendons",
    "tendon_tangents",
    "actuation_matrix",
    "actuation_derivative",
    "internal_forces",
    "internal_forces_derivatives",
    "internal_wrench",
    "Loads",
    "CylinderContact",
    "external_wrenches",
]


# ---------------------------------------------------------------------------------------------------------- tendons


class Tendon(eqx.Module):
    """A tendon routed at local cross-section coordinates ``route(X, length) -> (y, z)`` (any pure JAX function).

    d′(X) is obtained by forward-mode differentiation of ``route``, so tapered and helical routes need nothing else.
    """

    route: Callable = eqx.field(static=True)

    def offsets(
        self, X: Float[Array, "..."], length: Float[Array, ""]
    ) -> tuple[Float[Array, "... 3"], Float[Array, "... 3"]]:
        """d(X) and d′(X) as 3-vectors (0, y, z), shapes ``X.shape + (3,)``."""

        def d(x):
            yz = jnp.asarray(self.route(x, length))
            if yz.shape != (2,):
                raise ValueError(f"Tendon: route(X, length) must return (y, z) of shape (2,), got {yz.shape}")
            return jnp.concatenate([jnp.zeros(1, yz.dtype), yz])

        flat = jnp.reshape(X, (-1,))
        dv, dd = jax.vmap(lambda x: jax.jvp(d, (x,), (jnp.ones_like(x),)))(flat)
        return dv.reshape(jnp.shape(X) + (3,)), dd.reshape(jnp.shape(X) + (3,))


def cdm_tendons(radius_base: float, radius_tip: float, length: float) -> tuple[Tendon, ...]:
    """The five cable routes of seed 003 Table 2 (CDM): three tapered straight cables at 120°, two helices.

    r(X) = r_b + (r_t − r_b) X/L. Cable 1: (0, r); 2: (−√3/2 r, −r/2); 3: (√3/2 r, −r/2);
    4: (r_t sin(4πX/L), r_t cos(4πX/L)); 5: (r_t sin(4πX/L), −r_t cos(4πX/L)) (two turns, opposite handedness).
    """
    rb, rt, L = float(radius_base), float(radius_tip), float(length)

    def r(X):
        return rb + (rt - rb) * X / L

    s3 = 3**0.5 / 2
    return (
        Tendon(lambda X, _: jnp.stack([0.0 * X, r(X)])),
        Tendon(lambda X, _: jnp.stack([-s3 * r(X), -0.5 * r(X)])),
        Tendon(lambda X, _: jnp.stack([s3 * r(X), -0.5 * r(X)])),
        Tendon(lambda X, _: jnp.stack([rt * jnp.sin(4 * jnp.pi * X / L), rt * jnp.cos(4 * jnp.pi * X / L)])),
        Tendon(lambda X, _: jnp.stack([rt * jnp.sin(4 * jnp.pi * X / L), -rt * jnp.cos(4 * jnp.pi * X / L)])),
    )


def _strains(rod, q):
    return rod.Phi @ q + rod.xi_star  # (n_p, 6)


def tendon_tangents(rod: jaxse3.rod.model.Rod, q: Float[Array, " n_dof"]) -> Float[Array, "n_a n_p 3"]:
    """𝒯 = k × d + p + d′ of every tendon at every point, (n_a, n_p, 3) (D62, corrected)."""
    xi = _strains(rod, q)
    return jnp.cross(xi[:, :3], rod.tendon_d) + xi[:, 3:] + rod.tendon_dd


def actuation_matrix(rod: jaxse3.rod.model.Rod, q: Float[Array, " n_dof"]) -> Float[Array, "n_dof n_a"]:
    """B(q), (n_dof, n_tendons): τ_act = B(q) u for tensions u ≥ 0 (D60, physical sign; see module docstring)."""
    Tg = tendon_tangents(rod, q)
    t = Tg / jnp.linalg.norm(Tg, axis=-1, keepdims=True)
    wrench = jnp.concatenate([jnp.cross(rod.tendon_d, t), t], axis=-1)  # (n_a, n_p, 6): [d̃ t; t]
    return -jnp.einsum("k,kin,aki->na", rod.weights, rod.Phi, wrench)


def actuation_derivative(
    rod: jaxse3.rod.model.Rod, q: Float[Array, " n_dof"], u: Float[Array, " n_a"]
) -> Float[Array, "n_dof n_dof"]:
    """∂(B(q) u)/∂q at fixed u, (n_dof, n_dof) (D63, physical sign)."""
    Tg = tendon_tangents(rod, q)
    nrm = jnp.linalg.norm(Tg, axis=-1)
    t = Tg / nrm[..., None]

    def block(d, t, c):  # c = u_j/‖𝒯‖
        dt, tt = so3.hat(d), so3.hat(t)
        t2 = tt @ tt
        return c * jnp.block([[dt @ t2 @ dt, -dt @ t2], [t2 @ dt, -t2]])

    blocks = jax.vmap(jax.vmap(block))(rod.tendon_d, t, u[:, None] / nrm)  # (n_a, n_p, 6, 6)
    G = jnp.sum(blocks, axis=0) * rod.weights[:, None, None]  # (n_p, 6, 6)
    return -jnp.einsum("kin,kij,kjm->nm", rod.Phi, G, rod.Phi)


def internal_forces(
    rod: jaxse3.rod.model.Rod,
    q: Float[Array, " n_dof"],
    qd: Float[Array, " n_dof"],
    u: Float[Array, " n_a"] | None = None,
) -> Float[Array, " n_dof"]:
    """τ_int = B(q) u − K q − D q̇ (eq. (35)), (n_dof,). ``u``: tendon tensions (n_tendons,), or None for none."""
    tau = -rod.stiffness @ q - rod.damping @ qd
    if u is not None and rod.n_tendons:
        tau = tau + actuation_matrix(rod, q) @ u
    return tau


def internal_forces_derivatives(
    rod: jaxse3.rod.model.Rod,
    q: Float[Array, " n_dof"],
    qd: Float[Array, " n_dof"],
    u: Float[Array, " n_a"] | None = None,
) -> tuple[Float[Array, "n_dof n_dof"], Float[Array, "n_dof n_dof"]]:
    """(∂τ_int/∂q, ∂τ_int/∂q̇) = (∂(Bu)/∂q − K, −D) (eq. (36))."""
    dq = -rod.stiffness
    if u is not None and rod.n_tendons:
        dq = dq + actuation_derivative(rod, q, u)
    return dq, -rod.damping


def internal_wrench(
    rod: jaxse3.rod.model.Rod,
    q: Float[Array, " n_dof"],
    s: Float[ArrayLike, "..."],
    qd: Float[Array, " n_dof"] | None = None,
) -> Float[Array, "... 6"]:
    """The internal wrench (moment, force) at arc lengths s ∈ [0, L] of any shape, in the section's frame, ``s.shape
    + (6,)``: the constitutive law of seed 003 §4.4, 𝓕(s) = Σ(s)(ξ(s) − ξ*(s)) + Υ(s) ξ̇(s) with ξ − ξ* = Φ(s) q and
    ξ̇ = Φ(s) q̇ (``qd`` None: the elastic part alone), Σ, Υ of (D64), (D65) with the rod's shear factor.

    It is the wrench the part beyond s exerts on the part before it (at equilibrium with a tip wrench 𝓕_L and no
    distributed load, 𝓕(s) = Ad*_{g(s)⁻¹g(L)} 𝓕_L); like every strain-based quantity of a Ritz discretisation it
    converges with the basis. A tendon's tension is carried beside it (the section's total wrench adds the tendons'
    pull), as in the actuation term B(q) u of (35)."""
    if jnp.shape(q) != (rod.n_dof,) or (qd is not None and jnp.shape(qd) != (rod.n_dof,)):
        raise ValueError(f"internal_wrench: 'q' and 'qd' must have shape ({rod.n_dof},) for this rod")
    s = rod.arc_lengths(s, "internal_wrench")
    Phi = rod.basis(s, rod.length)
    k = rod.shear_factor
    F = jnp.einsum("...ij,...j->...i", screw_stiffness(rod.section, rod.material, s, rod.length, k), Phi @ q)
    if qd is not None:
        Y = screw_damping(rod.section, rod.material, s, rod.length, k)
        F = F + jnp.einsum("...ij,...j->...i", Y, Phi @ qd)
    return F


# ----------------------------------------------------------------------------------------------------- point loads


class CylinderContact(eqx.Module):
    """A hollow cylinder whose axis is parallel to the world z axis through ``center`` = (x, y) (seed 003 §6.2).

    Args:
        radius: inner radius r_c (m). stiffness: k_c. exponent: p (Hertz-type; p = 1.5 in the paper; p > 1 gives a C¹
            force). center: (2,) axis position, default the origin.
    """

    radius: jax.Array
    stiffness: jax.Array
    exponent: jax.Array
    center: jax.Array

    def __init__(
        self,
        radius: Float[ArrayLike, ""],
        stiffness: Float[ArrayLike, ""],
        exponent: Float[ArrayLike, ""] = 1.5,
        center: Float[ArrayLike, "2"] = (0.0, 0.0),
    ):
        f = jnp.result_type(float)
        self.radius, self.stiffness = jnp.asarray(radius, f), jnp.asarray(stiffness, f)
        self.exponent, self.center = jnp.asarray(exponent, f), jnp.asarray(center, f)
        if self.center.shape != (2,):
            raise ValueError(f"CylinderContact: 'center' must have shape (2,), got {self.center.shape}")

    def force(
        self, r: Float[Array, "3"], sphere_radius: Float[Array, ""]
    ) -> tuple[Float[Array, "3"], Float[Array, "3 3"]]:
        """World force on a sphere at r and its Jacobian ∂f/∂r (3,), (3, 3) (eqs. (57), (58), (61)).

        Finite everywhere, including on the axis (where δ < 0) and at δ = 0.
        """
        n = jnp.concatenate([r[:2] - self.center, jnp.zeros(1, r.dtype)])  # n_⊥ = C₁ r
        n2 = jnp.dot(n, n)
        on_axis = n2 < 1e-30
        nn = jnp.sqrt(jnp.where(on_axis, 1.0, n2))
        u = jnp.where(on_axis, 0.0, n / nn)
        delta = nn + sphere_radius - self.radius
        active = (delta > 0) & ~on_axis
        ds = jnp.where(active, delta, 1.0)
        kc, p = self.stiffness, self.exponent
        mag = kc * ds**p
        C1 = jnp.diag(jnp.array([1.0, 1.0, 0.0], r.dtype))
        uu = jnp.outer(u, u)
        kstar = kc * p * ds ** (p - 1) * uu + mag / nn * (jnp.eye(3, dtype=r.dtype) - uu)  # (61)
        f = jnp.where(active, -mag * u, 0.0)
        df = jnp.where(active, -kstar @ C1, 0.0)
        return f, df


class Loads(eqx.Module):
    """External loads on a rod: physical wrenches (moment, force) at the computational points, and contact.

    Attributes:
        local: (n_p, 6) follower wrenches in the local frames, or None.
        world: (n_p, 6) wrenches with world-aligned components, applied at the points (eq. (53)), or None.
        contact: a :class:`CylinderContact`, or None.
    """

    local: jax.Array | None = None
    world: jax.Array | None = None
    contact: CylinderContact | None = None

    @staticmethod
    def at_tip(rod: jaxse3.rod.model.Rod, wrench: Float[ArrayLike, "6"], frame: str = "world") -> Loads:
        """A single wrench (moment, force) at the tip, in the ``"world"`` or ``"local"`` frame."""
        wrench = jnp.asarray(wrench, dtype=jnp.result_type(float))
        if wrench.shape != (6,):
            raise ValueError(f"Loads.at_tip: 'wrench' must have shape (6,), got {wrench.shape}")
        W = jnp.zeros((rod.n_points, 6), wrench.dtype).at[-1].set(wrench)
        if frame == "world":
            return Loads(world=W)
        if frame == "local":
            return Loads(local=W)
        raise ValueError(f"Loads.at_tip: 'frame' must be 'world' or 'local', got {frame!r}")


def _block_rot(R):
    z = jnp.zeros_like(R)
    return jnp.block([[R, z], [z, R]])


def external_wrenches(
    rod: jaxse3.rod.model.Rod, loads: Loads | None, g: Float[Array, "n_p 4 4"], J: Float[Array, "n_p 6 n_dof"]
) -> tuple[Float[Array, "n_p 6"], Float[Array, "n_p 6 n_dof"]] | None:
    """Physical external wrenches in the local frames and their q-derivatives, (n_p, 6), (n_p, 6, n_dof).

    ``g``, ``J``: poses and body Jacobians of the points. Returns None when there are no loads.
    """
    if loads is None or (loads.local is None and loads.world is None and loads.contact is None):
        return None
    n_p = rod.n_points
    for name in ("local", "world"):
        W = getattr(loads, name)
        if W is not None and jnp.shape(W) != (n_p, 6):
            raise ValueError(f"Loads: '{name}' must have shape ({n_p}, 6), got {jnp.shape(W)}")
    F = jnp.zeros((n_p, 6), g.dtype) if loads.local is None else jnp.asarray(loads.local, g.dtype)
    dF = jnp.zeros((n_p, 6, rod.n_dof), g.dtype)
    world = loads.world
    if loads.contact is not None:
        f, df = jax.vmap(loads.contact.force)(g[:, :3, 3], rod.contact_radius)
        dr = jnp.einsum("kij,kjn->kin", g[:, :3, :3], J[:, 3:])  # ∂r_k/∂q = R J_v (D88)
        Rt = jnp.swapaxes(g[:, :3, :3], -1, -2)
        dF = dF.at[:, 3:].add(jnp.einsum("kij,kjl,kln->kin", Rt, df, dr))  # Ad⁻¹_{g_θ} ∂𝓕_g/∂q (59, 60)
        fw = jnp.concatenate([jnp.zeros_like(f), f], axis=-1)
        world = fw if world is None else world + fw
    if world is not None:
        Fw = jnp.einsum("kij,kj->ki", jax.vmap(_block_rot)(jnp.swapaxes(g[:, :3, :3], -1, -2)), world)  # (53)
        dF = dF + jnp.einsum("kij,kjn->kin", se3.ad(Fw)[:, :, :3], J[:, :3])  # ad_𝓕 I_θ J (59)
        F = F + Fw
    return F, dF

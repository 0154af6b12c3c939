"""The GVS rod model: one Cosserat rod with a fixed base, discretised for the recursive algorithms (seed 003 §2).

A :class:`Rod` holds everything the algorithms need, evaluated once at construction: the computational points and
weights (base, Gauss points, tip; eq. (3)), the strain basis Φ and reference strain ξ* at the points and at the Magnus
collocation points of every interval, the weighted screw inertias 𝓜_k = w_k 𝓜̄(X_k) (eq. (16)), the generalised
stiffness K (D64) and damping D (D65), tendon routes d, d′ at the points, contact radii, gravity and the base pose.
Arrays are leaves and sizes/orders are static, so one ``jit`` serves every rod of the same topology and a batch of
rods (different materials, geometries, tendon routes of the same count) is one pytree with leading axes for ``vmap``.
The arrays are computed by one compiled program per topology (a second rod of the same sizes, orders and callables
costs no compilation). Construction is traceable (``jax.vmap`` of a function building a rod from, e.g., E works):
nonsense models (a non-positive length, section size or modulus, too few Gauss points for the strain basis,
non-finite gravity) are rejected with a ValueError naming the argument wherever the values are concrete; traced values
are not checked.

:func:`cdm_rod` builds the cable-driven manipulator of seed 003 §4.5 (digest §5.1).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import ArrayLike, Float

from jaxse3.lie import se2
from jaxse3.rod.basis import LegendreBasis, PiecewiseConstantBasis, StrainBasis
from jaxse3.rod.forces import Tendon, cdm_tendons
from jaxse3.rod.geometry import (
    CircularSection,
    Material,
    RectangularSection,
    check_values,
    screw_damping,
    screw_inertia,
    screw_stiffness,
    segment_gauss_points,
)
from jaxse3.rod.magnus import collocation_nodes

__all__ = ["Rod", "cdm_rod"]

_STRAIGHT = (0.0, 0.0, 0.0, 1.0, 0.0, 0.0)


class Rod(eqx.Module):
    """One Cosserat rod with a fixed base in the GVS discretisation (seed 003 §2, App. C).

    Args:
        length: L (m), > 0.
        section: a :class:`~jaxse3.rod.geometry.CircularSection` or :class:`~jaxse3.rod.geometry.RectangularSection`;
            its area must be positive at every computational point.
        material: a :class:`~jaxse3.rod.geometry.Material`.
        basis: a :class:`~jaxse3.rod.basis.StrainBasis` (e.g. ``LegendreBasis((4, 4, 4, 2, 2, 2))``).
        n_gauss: number of Gauss points (per segment); with one segment the rod has ``n_points = n_gauss + 2``
            computational points. The stiffness K = Σ_k w_k Φ_kᵀ Σ_k Φ_k (D64) has rank at most the number of
            Gauss points per strain component, so a polynomial basis needs ``n_segments n_gauss >= p + 1`` (p: its
            highest order; the p + 1 modes must be independent on the Gauss points; ``n_gauss >= p + 1`` with one
            segment), and any other basis (:class:`~jaxse3.rod.basis.UserBasis`,
            :class:`~jaxse3.rod.basis.PiecewiseConstantBasis`) must have full column rank on them (checked
            numerically). With n_gauss = p + 1, Gauss quadrature (exact to degree 2 n_gauss − 1) still integrates
            Φᵢ Φⱼ exactly for a uniform section.
        magnus_order: 4 (Zanna, C1–C14; default) or 2 (midpoint). Both are exact for a strain that is constant on
            each interval between computational points (a PCS rod with ``n_segments`` equal to its basis's), where
            the cheaper 2 is the natural choice.
        tendons: a sequence of :class:`~jaxse3.rod.forces.Tendon`.
        gravity: world gravitational acceleration a_g (3,), finite, default (0, 0, −9.81).
        base_pose: world pose of the base frame (4, 4); the rod runs along the base frame's x axis. Default identity.
        xi_star: reference strain ξ*(X): a (6,) constant or a callable ``(X, length) -> (6,)``; default the straight,
            unstretched rod (0, 0, 0, 1, 0, 0).
        n_segments: per-segment quadrature (default 1: one segment, the computational points of seed 003 eq. (3)).
            With s segments the rod is cut into s equal segments ``[i L/s, (i + 1) L/s]`` and the computational points
            are, in increasing X, the base, the ``n_gauss`` Gauss–Legendre points of each segment (with their
            weights), the s − 1 interior segment ends (weight 0) and the tip
            (:func:`~jaxse3.rod.geometry.segment_gauss_points`): ``n_points = s (n_gauss + 1) + 1``. Every Magnus
            interval then lies inside one segment, so a :class:`~jaxse3.rod.basis.PiecewiseConstantBasis` with the
            same number of segments is integrated exactly (its strain is constant on every interval), and each
            segment's mass, stiffness and damping use ``n_gauss`` points, as in SoRoMoX's PCS. With a
            PiecewiseConstantBasis, ``n_segments`` must be a multiple of the basis's segments.
        shear_factor: Timoshenko's shear-correction factor k > 0 on the shear stiffness k G A and damping k υ A
            (default 1, the paper; :func:`~jaxse3.rod.geometry.cowper_shear_factor` gives Cowper's values).
        rotary_inertia: False drops the rotary inertia of the sections about their bending axes (ρJ_y = ρJ_z = 0),
            the Euler–Bernoulli/Rayleigh limit; the polar ρJ_x stays (torsion has no other inertia). Default True.

    Attributes (arrays): ``length``, ``X`` (n_p,), ``weights`` (n_p,), ``h`` (n_p − 1,), ``Phi`` (n_p, 6, n),
    ``xi_star`` (n_p, 6), ``Phi_c`` (n_p − 1, n_c, 6, n), ``xi_star_c`` (n_p − 1, n_c, 6), ``inertia`` (n_p, 6): the
    diagonals of 𝓜_k (diagonal in the section's principal axes, which are the rod's local axes), ``stiffness`` (n, n),
    ``damping`` (n, n), ``contact_radius`` (n_p,), ``gravity`` (3,), ``base_pose`` (4, 4),
    ``tendon_d``, ``tendon_dd`` (n_a, n_p, 3). Static: ``n_dof``, ``n_points``, ``n_tendons``, ``magnus_order``, and
    ``strain_run``: the number of consecutive Magnus intervals on which the strain is constant — ``n_gauss + 1`` (one
    quadrature segment) for a PiecewiseConstantBasis with a constant ``xi_star``, else 1. On such a run Ω_α = h_α ξ for
    one ξ, so the kinematics forms the powers of ad_ξ once per run (:func:`jaxse3.lie.se3.dexp_rates`). ``planar``: the
    basis and the reference strain have no out-of-plane component (ω_x, ω_y, v_z zero at every point), so the rod
    moves in its base frame's xy-plane and its recursions (ID, M, FD and their derivatives, without external loads) run
    on SE(2) (:mod:`jaxse3.lie.se2`); checked on concrete values (False for a rod built from traced ones).

    The rod keeps what it was built from: ``section``, ``material``, ``shear_factor`` (leaves), ``basis``,
    ``rotary_inertia`` (static) and the reference strain, so that queries at any arc length
    (:func:`~jaxse3.rod.kinematics.pose_at`, :func:`~jaxse3.rod.kinematics.strain_at`,
    :func:`~jaxse3.rod.forces.internal_wrench`) evaluate the same model between the computational points. A basis,
    section profile or reference strain given as a callable is static structure: ``jit`` caches compile per callable,
    so define it once (at module level), not anew for every rod.
    """

    length: jax.Array
    X: jax.Array
    weights: jax.Array
    h: jax.Array
    Phi: jax.Array
    xi_star: jax.Array
    Phi_c: jax.Array
    xi_star_c: jax.Array
    inertia: jax.Array
    stiffness: jax.Array
    damping: jax.Array
    contact_radius: jax.Array
    gravity: jax.Array
    base_pose: jax.Array
    tendon_d: jax.Array
    tendon_dd: jax.Array
    section: CircularSection | RectangularSection
    material: Material
    shear_factor: jax.Array
    xi_star_constant: jax.Array
    basis: StrainBasis = eqx.field(static=True)
    xi_star_function: Callable | None = eqx.field(static=True)
    rotary_inertia: bool = eqx.field(static=True)
    n_dof: int = eqx.field(static=True)
    n_points: int = eqx.field(static=True)
    n_tendons: int = eqx.field(static=True)
    magnus_order: int = eqx.field(static=True)
    strain_run: int = eqx.field(static=True)
    planar: bool = eqx.field(static=True)

    def __init__(
        self,
        length: Float[ArrayLike, ""],
        section: CircularSection | RectangularSection,
        material: Material,
        basis: StrainBasis,
        n_gauss: int = 5,
        magnus_order: int = 4,
        tendons: Sequence[Tendon] = (),
        gravity: Float[ArrayLike, "3"] = (0.0, 0.0, -9.81),
        base_pose: Float[ArrayLike, "4 4"] | None = None,
        xi_star: Callable | Sequence[float] | jax.Array = _STRAIGHT,
        n_segments: int = 1,
        shear_factor: Float[ArrayLike, ""] = 1.0,
        rotary_inertia: bool = True,
    ):
        f = jnp.result_type(float)
        if not isinstance(basis, StrainBasis):
            raise TypeError(f"Rod: 'basis' must be a StrainBasis (e.g. LegendreBasis), got {type(basis).__name__}")
        collocation_nodes(magnus_order)  # validates the order
        L = jnp.asarray(length, f)
        if L.shape != ():
            raise ValueError(f"Rod: 'length' must be a scalar, got shape {L.shape}")
        check_values("Rod", "length", length, lambda v: v > 0, "positive")
        if isinstance(n_segments, bool) or not isinstance(n_segments, int) or n_segments < 1:
            raise ValueError(f"Rod: 'n_segments' must be a positive int, got {n_segments!r}")
        if isinstance(n_gauss, bool) or not isinstance(n_gauss, int) or n_gauss < 1:
            raise ValueError(f"Rod: 'n_gauss' must be a positive int, got {n_gauss!r}")
        if isinstance(basis, PiecewiseConstantBasis) and n_segments % basis.n_segments:
            raise ValueError(
                f"Rod: 'n_segments' must be a multiple of the {basis.n_segments} segments of the "
                f"PiecewiseConstantBasis, got {n_segments}: otherwise Gauss quadrature and Magnus intervals straddle "
                "its strain jumps"
            )
        orders = [o for o in getattr(basis, "orders", ()) if o is not None]  # a polynomial basis
        if orders and n_segments * n_gauss < max(orders) + 1:
            need = -(-(max(orders) + 1) // n_segments)
            over = "" if n_segments == 1 else f" Gauss points in all, over {n_segments} segments"
            raise ValueError(
                f"Rod: 'n_gauss' must be at least {need} (highest order + 1{over}) for "
                f"{type(basis).__name__}{basis.orders}, got {n_gauss}: with fewer Gauss points the "
                "stiffness matrix is singular"
            )
        check_values("Rod", "shear_factor", shear_factor, lambda v: v > 0, "positive")
        if not isinstance(rotary_inertia, bool):
            raise ValueError(f"Rod: 'rotary_inertia' must be True or False, got {rotary_inertia!r}")
        if callable(xi_star):
            self.xi_star_function, self.xi_star_constant = xi_star, jnp.zeros(6, f)
        else:
            self.xi_star_function, self.xi_star_constant = None, jnp.asarray(xi_star, f)
            if self.xi_star_constant.shape != (6,):
                raise ValueError(f"Rod: 'xi_star' must be a callable or have shape (6,), got {jnp.shape(xi_star)}")
        self.section, self.material, self.basis = section, material, basis
        self.shear_factor, self.rotary_inertia = jnp.asarray(shear_factor, f), rotary_inertia
        tendons = tuple(tendons)
        a = _discretise(
            L, section, material, basis, self.xi_star_function, self.xi_star_constant, tendons,
            n_segments, n_gauss, magnus_order, self.shear_factor, rotary_inertia,
        )  # fmt: skip
        X, w = a["X"], a["weights"]
        if not orders and not isinstance(a["Phi"], jax.core.Tracer) and not isinstance(w, jax.core.Tracer):
            # any basis but a polynomial one: rank of Φ on the Gauss points (the points of positive weight)
            rank = np.linalg.matrix_rank(np.asarray(a["Phi"])[np.asarray(w) > 0].reshape(-1, basis.n_dof))
            if rank < basis.n_dof:
                where = f"n_gauss = {n_gauss} Gauss points"
                if n_segments > 1:
                    where = f"{n_segments} × {n_gauss} Gauss points (n_segments × n_gauss)"
                raise ValueError(
                    f"Rod: the {type(basis).__name__} sampled at the {where} has rank {rank} "
                    f"< n_dof = {basis.n_dof}, so the stiffness matrix is singular: increase 'n_gauss' "
                    "or use independent basis functions"
                )
        area = a.pop("area")
        if not isinstance(area, jax.core.Tracer) and not bool(np.all(np.asarray(area) > 0)):
            raise ValueError(
                f"Rod: 'section' must have a positive area at every computational point, got A = "
                f"{np.asarray(area)} at X = {np.asarray(X)}"
            )
        self.length = L
        for name, value in a.items():
            setattr(self, name, value)
        self.gravity = jnp.asarray(gravity, f)
        if self.gravity.shape != (3,):
            raise ValueError(f"Rod: 'gravity' must have shape (3,), got {self.gravity.shape}")
        check_values("Rod", "gravity", gravity, np.isfinite, "finite")
        self.base_pose = jnp.eye(4, dtype=f) if base_pose is None else jnp.asarray(base_pose, f)
        if self.base_pose.shape != (4, 4):
            raise ValueError(f"Rod: 'base_pose' must have shape (4, 4), got {self.base_pose.shape}")
        if base_pose is not None:
            check_values("Rod", "base_pose", base_pose, np.isfinite, "finite")
        self.n_dof, self.n_points, self.n_tendons = basis.n_dof, int(X.shape[0]), len(tendons)
        self.magnus_order = int(magnus_order)
        self.strain_run = n_gauss + 1 if isinstance(basis, PiecewiseConstantBasis) and not callable(xi_star) else 1
        self.planar = _in_plane((self.Phi, -2), (self.Phi_c, -2), (self.xi_star, -1), (self.xi_star_c, -1))

    def reference_strain(self, X: Float[ArrayLike, "..."]) -> Float[jax.Array, "... 6"]:
        """ξ*(X) at any abscissae X (shape ``X.shape + (6,)``)."""
        return _reference_strain(self.xi_star_function, self.xi_star_constant, self.length, X)

    def arc_lengths(self, s: Float[ArrayLike, "..."], who: str = "Rod") -> jax.Array:
        """``s`` as an array of the rod's dtype, checked (where concrete) to lie on the rod, 0 ≤ s ≤ L; ``who`` names
        the caller in the error."""
        s = jnp.asarray(s, self.length.dtype)
        if not isinstance(s, jax.core.Tracer) and not isinstance(self.length, jax.core.Tracer):
            L = float(self.length)
            check_values(who, "s", s, lambda v: (v >= 0) & (v <= L), f"an arc length in [0, L = {L:g}]")
        return s

    @property
    def expansion_order(self) -> int:
        """The Magnus order the kinematics evaluates: 2 on runs of constant strain (``strain_run`` > 1), where the
        commutator terms of the 4th-order expansion vanish identically (ξ₁ = ξ₂ in (C1), 𝓩 = hΦ in (C5), 𝓩̇ = 0 in
        (C8)) and the 2nd-order formulas at any collocation node are exact; else ``magnus_order``."""
        return 2 if self.strain_run > 1 else self.magnus_order


def _reference_strain(function: Callable | None, constant: jax.Array, length: jax.Array, X: ArrayLike) -> jax.Array:
    """ξ*(X): ``function(X, length)`` (a callable reference strain) or ``constant`` (6,), shape ``X.shape + (6,)``."""
    X = jnp.asarray(X, length.dtype)
    if function is None:
        return jnp.broadcast_to(constant, X.shape + (6,))
    fn = lambda x: jnp.asarray(function(x, length), length.dtype)
    return jnp.vectorize(fn, signature="()->(6)")(X)


@eqx.filter_jit
def _discretise(
    L, section, material, basis, xi_star_function, xi_star_constant, tendons, n_segments, n_gauss, magnus_order, k,
    rotary_inertia,
) -> dict[str, jax.Array]:  # fmt: skip
    """The arrays of a :class:`Rod` (see its attributes) and the section's area at the points, as one compiled
    program per topology (sizes, orders, basis, profile callables): built op by op, a rod compiled about a hundred
    small programs, 1–2 s before its first use."""
    f = L.dtype
    X, w = segment_gauss_points(n_segments, n_gauss, L)
    h = jnp.diff(X)
    Xc = X[:-1, None] + h[:, None] * jnp.asarray(collocation_nodes(magnus_order), f)  # (n_p − 1, n_c)
    Phi = basis(X, L)
    wPhi = w[:, None, None] * Phi
    inertia = screw_inertia(section, material, X, L, rotary_inertia)
    if tendons:
        d, dd = zip(*(t.offsets(X, L) for t in tendons))
        tendon_d, tendon_dd = jnp.stack(d), jnp.stack(dd)
    else:
        tendon_d = tendon_dd = jnp.zeros((0, X.shape[0], 3), f)
    return dict(
        X=X,
        weights=w,
        h=h,
        Phi=Phi,
        Phi_c=basis(Xc, L),
        xi_star=_reference_strain(xi_star_function, xi_star_constant, L, X),
        xi_star_c=_reference_strain(xi_star_function, xi_star_constant, L, Xc),
        inertia=w[:, None] * jnp.diagonal(inertia, axis1=-2, axis2=-1),
        stiffness=jnp.einsum("kin,kij,kjm->nm", wPhi, screw_stiffness(section, material, X, L, k), Phi),
        damping=jnp.einsum("kin,kij,kjm->nm", wPhi, screw_damping(section, material, X, L, k), Phi),
        contact_radius=section.contact_radius(X, L),
        tendon_d=tendon_d,
        tendon_dd=tendon_dd,
        area=section.moments(X, L)[0],
    )


def _in_plane(*strains: tuple[jax.Array, int]) -> bool:
    """True when the strain arrays (each with the axis of its 6 strain components) are concrete and vanish out of
    the plane (ω_x, ω_y, v_z)."""
    if any(isinstance(a, jax.core.Tracer) for a, _ in strains):
        return False
    out = np.setdiff1d(np.arange(6), se2.PLANE)
    return all(not np.any(np.take(np.asarray(a), out, axis=axis)) for a, axis in strains)


def cdm_rod(
    n_gauss: int = 5,
    orders: Sequence[int | None] = (4, 4, 4, 2, 2, 2),
    magnus_order: int = 4,
    hanging: bool = True,
    material: Material | None = None,
) -> Rod:
    """The cable-driven manipulator (CDM) of seed 003 §4.5 (digest §5.1), with its five cables (Table 2).

    L = 0.5 m; circular section, radius 3 cm → 1.5 cm (linear taper); E = 1 MPa, ν = 0.5, ρ = 1000 kg/m³,
    υ = 10⁴ Pa·s; Legendre order 4 angular / 2 linear (24 DoF); 5 Gauss points (n_p = 7); gravity −9.81 along world z.

    The paper does not state the base orientation. ``hanging=True`` (default) points the rod down the world −z axis
    (local x = −z, local y = world y), which is also the axis of the contact cylinder of §6.2; ``hanging=False`` lays it
    along world x (a cantilever). ``material`` replaces the paper's (above), e.g. in a parameter sweep.
    """
    L, rb, rt = 0.5, 0.03, 0.015
    base = jnp.eye(4)
    if hanging:  # rotation by +π/2 about y: x → −z, z → x
        base = base.at[:3, :3].set(jnp.array([[0.0, 0.0, 1.0], [0.0, 1.0, 0.0], [-1.0, 0.0, 0.0]]))
    return Rod(
        length=L,
        section=CircularSection(rb, rt),
        material=Material(E=1e6, rho=1000.0, nu=0.5, damping=1e4) if material is None else material,
        basis=LegendreBasis(orders),
        n_gauss=n_gauss,
        magnus_order=magnus_order,
        tendons=cdm_tendons(rb, rt, L),
        base_pose=base,
    )

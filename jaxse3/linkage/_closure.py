"""Loop-closure constraints: closed chains of rigid and soft links (seed 003 §5.2, eqs. (46)–(49); App. D (D77)–(D80)).

A :class:`Closure` joins frame A, fixed on a computational point of one link, to frame B, fixed on a point of another
link or on the world. Its relative pose g_BA = g_B⁻¹ g_A is constrained along the columns of Φ⊥ (6, k), directions of
se(3) in frame B (angular first): the k directions a joint of its kind does not let move (:func:`closure_basis`).
With n_c = Σ k the rows of all closures stacked (∥, in the order given):

* the error e(q) = ∥ Φ⊥ᵀ ε, ε = (log g_BA)^∨ (eq. (47c); :func:`closure_error`);
* the Pfaffian constraint matrix A(q) = ∥ Φ⊥ᵀ(Ad_{g_BA} J_A − J_B) (eq. (47a); :func:`closure_jacobian`), J_A and J_B
  the body Jacobians of the two frames: Ad_{g_BA} J_A q̇ − J_B q̇ = (ġ_BA g_BA⁻¹)^∨ is the relative velocity in frame B;
* its rate along the motion Ȧq̇ (eq. (47b) applied to q̇; :func:`closure_bias`);
* ∂e/∂q = ∥ Φ⊥ᵀ dexp_ε⁻¹(Ad_{g_BA} J_A − J_B) (D80 with Φ⊥ᵀ for Φ⊥; :func:`closure_error_jacobian`);
* the forward dynamics of the closed chain with Baumgarte stabilisation (eqs. (46), (48), (49);
  :func:`constrained_forward_dynamics`), which also returns the multipliers λ, and the residual
  τ − ID(q, q̇, q̈) + Aᵀλ of the same Baumgarte motion for Newmark-β and statics (:func:`constrained_residual`);
* the residual τ − ID(q, q̇, q̈) + A(q)ᵀλ with the multipliers λ as independent variables (eq. (52a);
  :func:`index3_residual`), which the index-3 Newmark-β integrates together with e(q) = 0.

Frames on a link: ``point`` indexes the link's computational points (:meth:`~jaxse3.linkage.Linkage.points_of`; −1,
the default, is its end: a rigid link's frame, a rod's tip) and ``placement`` (4, 4) is the frame's pose in that
point's frame, so g_A = g_point · P_A and J_A = Ad⁻¹_{P_A} J_point (likewise η_A, η̇_A).

Conventions of the multipliers (eq. (46a): M q̈ = τ + F + Aᵀλ): Φ⊥λ is the wrench (moment, force) the closure applies
to the body of frame A, in frame B's coordinates (about B's origin); the body of frame B feels −Φ⊥λ. In generalised
forces, J_Aᵀ Ad_{g_BA}ᵀ Φ⊥λ − J_Bᵀ Φ⊥λ = Aᵀλ (the local wrenches Ad^{−*}_{g_BA}Φ⊥λ at A and −Φ⊥λ at B of digest §2.5).

A equals ∂e/∂q where g_BA = 1 (ε = 0; a satisfied fixed or spherical closure, or any closure whose frames coincide).
Where e = 0 with ε ≠ 0 (a satisfied revolute, prismatic or planar closure whose free coordinate is not zero), the
rows differ by an invertible factor, Φ⊥ᵀ dexp_ε⁻¹ = G Φ⊥ᵀ with G = Φ⊥ᵀ dexp_ε⁻¹ Φ⊥ on the constraint manifold (for the
kinds of :func:`closure_basis`, a ``"planar"`` one in a planar mechanism: dexp_ε⁻¹ keeps the free directions), so A
and ∂e/∂q have the same null space (the admissible velocities), which is all eq. (46b) needs. Off the manifold only
∂e/∂q is the derivative.

Derivatives with respect to q are tangent vectors δ (nv,) of :func:`~jaxse3.linkage.integrate` (the right
perturbation; q ⊕ δ = q + δ where nq = nv). e(q) has a ``custom_jvp`` rule with ∂e/∂q in closed form ((D77)–(D80));
the index-3 residual's rule takes ∂(Aᵀλ)/∂q from the tree's derivative pass with the multipliers as point wrenches
((D68), (D69); :func:`index3_residual`); the Baumgarte forward dynamics and residual have ``custom_jvp`` rules (seed
003 eqs. (50), (51), re-derived) built on the same pass, whose frames also give the closures' own terms ∂(Aq̈ + Ȧq̇)/∂q,
∂(Aq̇)/∂q and Ȧ in closed form ((D70)–(D83); :func:`constrained_forward_dynamics`,
:func:`constrained_forward_dynamics_jacobians`). Along the state, no closure term goes through autodiff.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Float

from jaxse3 import se3
from jaxse3.lie.tangents import accumulate, custom_rule, is_zero, jvp_of_rest
from jaxse3.linkage._derivatives import (
    IDDerivatives,
    PointWrench,
    covered,
    tree_derivatives_with_wrenches,
)
from jaxse3.linkage._dynamics import (
    PointStates,
    check_state,
    dynamics_of_states,
    generalized_forces,
    point_states,
    side_by_side,
)
from jaxse3.linkage._model import Linkage, _concrete, checked_pose, plane_frame, round_off
from jaxse3.linkage._rules import generalized_forces_derivatives

__all__ = [
    "CLOSURE_KINDS",
    "Closure",
    "closure_basis",
    "check_closures",
    "closure_error",
    "closure_jacobian",
    "closure_error_jacobian",
    "closure_bias",
    "constrained_forward_dynamics",
    "constrained_forward_dynamics_jacobians",
    "constrained_residual",
    "index3_residual",
    "index3_residual_at_rest",
    "baumgarte_residual",
]

#: the joint kinds a :class:`Closure` can close a loop with (:func:`closure_basis`)
CLOSURE_KINDS = ("fixed", "spherical", "revolute", "prismatic", "planar")
_AXIS_KINDS = ("revolute", "prismatic", "planar")


def _unit_axis(owner: str, axis) -> Float[Array, " 3"]:
    a = jnp.asarray(axis, dtype=float)
    c = _concrete(a)
    if a.shape != (3,) or (c is not None and (not np.isfinite(c).all() or abs(np.linalg.norm(c) - 1.0) > round_off(a))):
        raise ValueError(f"{owner}: 'axis' must be a unit 3-vector, got {axis!r}")
    return a


def closure_basis(kind: str, axis: Float[ArrayLike, " 3"] | None = None) -> Float[Array, "6 k"]:
    """Φ⊥ (6, k) of a closure joint (seed 003 eq. (47)): orthonormal columns spanning the directions of se(3), angular
    first, in which the joint does not let frame A move relative to frame B.

    * ``"fixed"``: I₆ (k = 6);
    * ``"spherical"``: the three linear directions (k = 3);
    * ``"revolute"`` about the unit ``axis`` a: all but the rotation (a, 0) (k = 5);
    * ``"prismatic"`` along the unit ``axis`` a: all but the translation (0, a) (k = 5);
    * ``"planar"``: a revolute closure of a planar mechanism moving in the plane normal to ``axis``: the two in-plane
      linear directions only (k = 2). The out-of-plane rows of a revolute closure vanish identically in a planar
      mechanism, and would make the bordered matrix of eq. (48) singular.

    Columns: angular ones first, then linear ones; the in-plane ones are (t₁, t₂) with (t₁, t₂, a) right-handed.
    """
    owner = f"closure_basis({kind!r})"
    if kind not in CLOSURE_KINDS:
        raise ValueError(f"{owner}: unknown kind; the kinds are {CLOSURE_KINDS}")
    if kind not in _AXIS_KINDS:
        if axis is not None:
            raise ValueError(f"{owner}: a {kind} closure takes no 'axis'")
        eye = jnp.eye(6)
        return eye if kind == "fixed" else eye[:, 3:]
    if axis is None:
        raise ValueError(f"{owner}: a {kind} closure needs its 'axis', a unit 3-vector")
    a = _unit_axis(owner, axis)
    t1, t2 = plane_frame(a)
    z = jnp.zeros(3, a.dtype)
    ang = lambda v: jnp.concatenate([v, z])
    lin = lambda v: jnp.concatenate([z, v])
    columns = {
        "revolute": [ang(t1), ang(t2), lin(t1), lin(t2), lin(a)],
        "prismatic": [ang(t1), ang(t2), ang(a), lin(t1), lin(t2)],
        "planar": [lin(t1), lin(t2)],
    }[kind]
    return jnp.stack(columns, axis=1)


def _index(owner: str, field: str, point) -> int:
    if isinstance(point, bool) or not isinstance(point, int | np.integer):
        raise ValueError(f"{owner}: {field!r} must be an integer index of a computational point, got {point!r}")
    return int(point)


class Closure(eqx.Module):
    """A loop-closure joint between frame A and frame B (module docstring; seed 003 eqs. (47a)–(47c)).

    Args:
        link_a: the link frame A is fixed on.
        link_b: the link frame B is fixed on, or None for the world.
        kind: one of :data:`CLOSURE_KINDS` (Φ⊥ from :func:`closure_basis`); ``"fixed"`` when neither ``kind`` nor
            ``constrained`` is given.
        axis: the unit 3-vector of a revolute, prismatic or planar closure, in frame B.
        constrained: an explicit Φ⊥ (6, k), 1 ≤ k ≤ 6, of full column rank, instead of ``kind``.
        point_a, point_b: indices of the points among their links' (default −1: the link's end); ``point_b`` is
            ignored for the world.
        placement_a, placement_b: poses (4, 4) of the frames in their points' frames (in the world for B on the
            world); default identity.
        name: used in messages; default ``"link_a–link_b"``.

    Attributes:
        constrained: Φ⊥ (6, k), in frame B.
        kind: the kind, or ``"custom"`` for an explicit Φ⊥.
    """

    placement_a: Float[Array, "4 4"]
    placement_b: Float[Array, "4 4"]
    constrained: Float[Array, "6 k"]
    link_a: str = eqx.field(static=True)
    link_b: str | None = eqx.field(static=True)
    point_a: int = eqx.field(static=True)
    point_b: int = eqx.field(static=True)
    kind: str = eqx.field(static=True)
    name: str = eqx.field(static=True)

    def __init__(
        self,
        link_a: str,
        link_b: str | None = None,
        kind: str | None = None,
        axis: Float[ArrayLike, " 3"] | None = None,
        constrained: Float[ArrayLike, "6 k"] | None = None,
        point_a: int = -1,
        point_b: int = -1,
        placement_a: Float[ArrayLike, "4 4"] | None = None,
        placement_b: Float[ArrayLike, "4 4"] | None = None,
        name: str | None = None,
    ):
        self.name = f"{link_a}–{'world' if link_b is None else link_b}" if name is None else str(name)
        owner = f"Closure {self.name!r}"
        if not isinstance(link_a, str) or not (link_b is None or isinstance(link_b, str)):
            raise ValueError(f"{owner}: 'link_a' must be a link's name and 'link_b' a link's name or None")
        self.link_a, self.link_b = link_a, link_b
        self.point_a, self.point_b = _index(owner, "point_a", point_a), _index(owner, "point_b", point_b)
        self.placement_a = checked_pose(owner, "placement_a", placement_a)
        self.placement_b = checked_pose(owner, "placement_b", placement_b)
        if constrained is not None:
            if kind is not None or axis is not None:
                raise ValueError(f"{owner}: give either 'constrained' or a 'kind' (with its 'axis'), not both")
            Phi = jnp.asarray(constrained, dtype=float)
            c = _concrete(Phi)
            if (
                Phi.ndim != 2
                or Phi.shape[0] != 6
                or not 1 <= Phi.shape[1] <= 6
                or (c is not None and (not np.isfinite(c).all() or np.linalg.matrix_rank(c) < c.shape[1]))
            ):
                raise ValueError(
                    f"{owner}: 'constrained' must be a (6, k) matrix with 1 ≤ k ≤ 6 and full column rank, got shape "
                    f"{Phi.shape}"
                )
            self.constrained, self.kind = Phi, "custom"
            return
        kind = "fixed" if kind is None else kind
        if kind not in CLOSURE_KINDS:
            raise ValueError(f"{owner}: unknown 'kind' {kind!r}; the kinds are {CLOSURE_KINDS}")
        if kind in _AXIS_KINDS and axis is None:
            raise ValueError(f"{owner}: a {kind} closure needs its 'axis', a unit 3-vector")
        if kind not in _AXIS_KINDS and axis is not None:
            raise ValueError(f"{owner}: a {kind} closure takes no 'axis'")
        if axis is not None:
            _unit_axis(owner, axis)
        self.constrained, self.kind = closure_basis(kind, axis), kind

    @property
    def k(self) -> int:
        """The number of constrained directions (rows of e, A and λ)."""
        return self.constrained.shape[1]


def check_closures(linkage: Linkage, closures: Closure | Sequence[Closure]) -> tuple[Closure, ...]:
    """The closures as a tuple, checked against ``linkage`` (at trace time): every link exists, every point index is in
    range, and no closure has both frames on one body (one rigid link, or one point of a rod)."""
    if isinstance(closures, Closure):
        closures = (closures,)
    closures = tuple(closures)
    for i, c in enumerate(closures):
        if not isinstance(c, Closure):
            raise TypeError(f"closures[{i}] must be a Closure, got {type(c).__name__}")
        owner = f"Closure {c.name!r}"
        sides = [("link_a", "point_a", c.link_a, c.point_a)]
        if c.link_b is not None:
            sides.append(("link_b", "point_b", c.link_b, c.point_b))
        points = []
        for field, pfield, name, point in sides:
            if name not in linkage.names:
                raise ValueError(f"{owner}: {field} {name!r} is not a link; the links are {linkage.names}")
            n = linkage.links[linkage.index(name)].n_points
            if not -n <= point < n:
                raise ValueError(f"{owner}: {pfield} = {point} is out of range; link {name!r} has {n} points")
            points.append(point % n)
        if c.link_b == c.link_a and (linkage.links[linkage.index(c.link_a)].joint != "soft" or points[0] == points[1]):
            raise ValueError(
                f"{owner}: both frames are on the same rigid body ({c.link_a!r}): the constraint is constant"
            )
    return closures


class _Relative(NamedTuple):
    """One closure's relative motion: g_BA, Ad_{g_BA} J_A − J_B, its velocity Ad_{g_BA} η_A − η_B and
    Ad_{g_BA} η̇_A − η̇_B − ad_{η_B} Ad_{g_BA} η_A."""

    g: Float[Array, "4 4"]
    V: Float[Array, "6 nv"]
    rate: Float[Array, " 6"]
    acc: Float[Array, " 6"]


def _placed(point: tuple[Array, ...], P: Array) -> tuple[Array, ...]:
    """A point's (g, twist-like quantities …) carried to the frame at pose P in the point's frame: g P and Ad⁻¹_P x
    (None stays None)."""
    g, *twists = point
    P = P.astype(g.dtype)
    Pi = se3.Ad_inv(P)
    return (g @ P, *(None if x is None else Pi @ x for x in twists))


def _point(linkage: Linkage, s: PointStates, link: str, point: int) -> tuple[Array, ...]:
    """(g, η, η̇, J) of a link's computational point."""
    sl = linkage.points_of(link)
    k = sl.start + point % (sl.stop - sl.start)
    return s.g[k], s.eta[k], s.etad[k], s.J[k]


def _relative(A: tuple[Array, ...], place_a: Array, B: tuple[Array, ...] | None, place_b: Array) -> _Relative:
    """Rates of g_BA from the points' (g, η, η̇, J) at q̈ = 0 (B None: frame B on the world) and the frames' placements
    in them: with V q̇ = (ġ_BA g_BA⁻¹)^∨ = Ad_{g_BA} η_A − η_B, d/dt(Ad_{g_BA} J_A q̇ − J_B q̇) at fixed
    q̇ = ad_V Ad_{g_BA} η_A + Ad_{g_BA} J̇_A q̇ − J̇_B q̇ = Ad_{g_BA} η̇_A − η̇_B − ad_{η_B} Ad_{g_BA} η_A, with η̇ = J̇q̇
    at q̈ = 0 (eq. (47b))."""
    gA, etaA, etadA, JA = _placed(A, place_a)
    if B is None:
        g = se3.inv(place_b.astype(gA.dtype)) @ gA
        Ad = se3.Ad(g)
        return _Relative(g, Ad @ JA, Ad @ etaA, Ad @ etadA)
    gB, etaB, etadB, JB = _placed(B, place_b)
    g = se3.inv(gB) @ gA
    Ad = se3.Ad(g)
    y = Ad @ etaA
    return _Relative(g, Ad @ JA - JB, y - etaB, Ad @ etadA - etadB - se3.ad(etaB) @ y)


class _Rows(NamedTuple):
    """The closures' stacked rows: e (47c), A (47a), Ȧq̇ (47b; zero without q̇) and, when asked for, ∂e/∂q (D80)
    and ë − (∂e/∂q)q̈ (:func:`closure_error_bias`)."""

    e: Float[Array, " n_c"]
    A: Float[Array, "n_c nv"]
    bias: Float[Array, " n_c"]
    de_dq: Float[Array, "n_c nv"] | None
    e_bias: Float[Array, " n_c"] | None = None


def _rows(
    fname: str, linkage: Linkage, closures, q, qd=None, error_jacobian: bool = False
) -> tuple[tuple[Closure, ...], _Rows]:
    """The checked closures and their rows at (q, q̇) from one forward pass (:func:`point_states` at q̈ = 0)."""
    closures = check_closures(linkage, closures)
    args = check_state(fname, linkage, q=q, qd=qd)
    return closures, _rows_of_states(linkage, closures, point_states(linkage, args["q"], args["qd"]), error_jacobian)


def _rows_of_states(
    linkage: Linkage, closures, s: PointStates, error_jacobian: bool = False, error_bias: bool = False
) -> _Rows:
    """The closures' rows from the point states ``s`` at (q, q̇, q̈ = 0)."""
    dtype = s.J.dtype
    if not closures:
        none, empty = jnp.zeros(0, dtype), jnp.zeros((0, linkage.nv), dtype)
        return _Rows(none, empty, none, empty if error_jacobian else None, none if error_bias else None)

    def one(Phi, place_a, place_b, A, B):  # a closure's rows
        r = _relative(A, place_a, B, place_b)
        Pt = Phi.astype(dtype).T
        eps = se3.log(r.g)
        de = Pt @ se3.dexp_inv(eps) @ r.V if error_jacobian else None
        e_bias = None
        if error_bias:  # d/dt (dexp⁻¹_ε V q̇) at fixed q̇, with ε̇ = dexp⁻¹_ε V q̇
            epsd = se3.dexp_inv_apply(eps, r.rate)
            e_bias = Pt @ (se3.d_dexp_inv_apply(eps, epsd, r.rate) + se3.dexp_inv_apply(eps, r.acc))
        return Pt @ eps, Pt @ r.V, Pt @ r.acc, de, e_bias

    point = lambda link, k: None if link is None else _point(linkage, s, link, k)
    args = [
        (c.constrained, c.placement_a, c.placement_b, point(c.link_a, c.point_a), point(c.link_b, c.point_b))
        for c in closures
    ]
    parts = side_by_side(one, args, [(c.link_b is None, c.k) for c in closures])  # closures of one shape together
    cat = lambda x: None if x[0] is None else jnp.concatenate(x)
    return _Rows(*(cat(x) for x in zip(*parts)))


def closure_error(
    linkage: Linkage, closures: Closure | Sequence[Closure], q: Float[Array, " nq"]
) -> Float[Array, " n_c"]:
    """e(q) = ∥ Φ⊥ᵀ (log g_BA)^∨, g_BA = g_B⁻¹ g_A (seed 003 eq. (47c)), the closures' rows stacked in order (n_c,).

    log is the principal logarithm (rotation angle in [0, π]): a closure whose free rotation reaches π jumps there
    (choose placement_b so that its free rotation stays inside (−π, π)).

    Derivative (a ``custom_jvp`` rule, counted as "linkage.closure_error"): ∂e/∂q of :func:`closure_error_jacobian`
    ((D77)–(D80)) from the same forward pass; tangents along the model's parameters and linkages with quaternion joints
    (:func:`~jaxse3.linkage._derivatives.covered`): plain autodiff."""
    closures = check_closures(linkage, closures)
    q = check_state("closure_error", linkage, q=q)["q"]
    return (_error if covered(linkage) else _error_plain)(linkage, closures, q)


def _error_plain(linkage, closures, q):
    return _rows_of_states(linkage, closures, point_states(linkage, q)).e


def _error_jvp(primals, tangents):
    linkage, closures, q = primals
    rest = jvp_of_rest(_error_plain, primals, tangents, analytic=(2,))
    rows = _rows_of_states(linkage, closures, point_states(linkage, q), error_jacobian=True)
    return rows.e, accumulate(rows.e, [(rows.de_dq, tangents[2])], rest)


_error = custom_rule("linkage.closure_error", _error_plain, _error_jvp)


def closure_jacobian(
    linkage: Linkage, closures: Closure | Sequence[Closure], q: Float[Array, " nq"]
) -> Float[Array, "n_c nv"]:
    """The Pfaffian constraint matrix A(q) = ∥ Φ⊥ᵀ(Ad_{g_BA} J_A − J_B) (seed 003 eq. (47a)), (n_c, nv): A q̇ = 0 is
    the closures' velocity constraint. It is ∂e/∂q where g_BA = 1 only (module docstring;
    :func:`closure_error_jacobian`)."""
    return _rows("closure_jacobian", linkage, closures, q)[1].A


def closure_error_jacobian(
    linkage: Linkage, closures: Closure | Sequence[Closure], q: Float[Array, " nq"]
) -> Float[Array, "n_c nv"]:
    """∂e/∂q = ∥ Φ⊥ᵀ dexp_ε⁻¹ (Ad_{g_BA} J_A − J_B), ε = (log g_BA)^∨ (seed 003 (D77)–(D80), with the digest's
    erratum Φ⊥ → Φ⊥ᵀ), (n_c, nv), valid off the constraint manifold too.

    dexp is right-trivialised (``se3.dexp_inv(+ε)``): δg_BA g_BA⁻¹ = ((Ad_{g_BA} J_A − J_B)δq)^ is the spatial
    (frame-B) variation of g_BA = exp(ε̂), and that of exp is dexp_ε δε. (The body-side form
    dexp_{−ε}⁻¹(J_A − Ad⁻¹_{g_BA} J_B) is equal.) Columns are tangent directions of
    :func:`~jaxse3.linkage.integrate` (∂/∂q itself where nq = nv)."""
    return _rows("closure_error_jacobian", linkage, closures, q, error_jacobian=True)[1].de_dq


def closure_bias(
    linkage: Linkage, closures: Closure | Sequence[Closure], q: Float[Array, " nq"], qd: Float[Array, " nv"]
) -> Float[Array, " n_c"]:
    """Ȧq̇ (seed 003 eq. (47b) applied to q̇), (n_c,), from one forward pass at q̈ = 0 (where η̇ = J̇q̇):

        Ȧq̇ = ∥ Φ⊥ᵀ(Ad_{g_BA}(ad_{η_BA} η_A + η̇_A) − η̇_B) = ∥ Φ⊥ᵀ(Ad_{g_BA} η̇_A − η̇_B − ad_{η_B} Ad_{g_BA} η_A),

    with η_BA = η_A − Ad⁻¹_{g_BA} η_B the body twist of g_BA (the ad-term of (47b) is Ad_{g_BA} ad_{η_BA} J_A q̇, and
    Ad_{g_BA} ad_{η_BA} η_A = −ad_{η_B} Ad_{g_BA} η_A). η_B = η̇_B = 0 for a frame on the world."""
    return _rows("closure_bias", linkage, closures, q, qd)[1].bias


def closure_error_bias(
    linkage: Linkage, closures: Closure | Sequence[Closure], q: Float[Array, " nq"], qd: Float[Array, " nv"]
) -> Float[Array, " n_c"]:
    """ë − (∂e/∂q) q̈ = d²/ds² e(q + s q̇) at s = 0, (n_c,): what the closures' errors e (:func:`closure_error`)
    accelerate by at q̈ = 0, off the constraint manifold too (the index-3 form's acceleration-level constraint,
    ë = (∂e/∂q) q̈ + this = 0), from one forward pass at q̈ = 0. With ė = Φ⊥ᵀ dexp⁻¹_ε w, w = V q̇ =
    Ad_{g_BA} η_A − η_B and ε̇ = dexp⁻¹_ε w:

        ë − (∂e/∂q) q̈ = ∥ Φ⊥ᵀ((D_ε dexp⁻¹_ε)(ε̇) w + dexp⁻¹_ε (Ad_{g_BA} η̇_A − η̇_B − ad_{η_B} Ad_{g_BA} η_A)),

    the second term's bracket that of :func:`closure_bias` (η̇ = J̇q̇ at q̈ = 0). Where g_BA = 1 (ε = 0) it equals
    :func:`closure_bias` (dexp⁻¹_0 = 1, and (D_ε dexp⁻¹_ε)(w) w = −½ ad_w w = 0). Linkages whose coordinates are
    tangents (:func:`~jaxse3.linkage._derivatives.covered`; q + s q̇ is a path in coordinates)."""
    closures = check_closures(linkage, closures)
    args = check_state("closure_error_bias", linkage, q=q, qd=qd)
    if not covered(linkage):
        raise ValueError(
            "closure_error_bias: the linkage has spherical or free joints in quaternion coordinates (nq != nv), "
            "where q + s q̇ is not a path; build it with coordinates='exponential'"
        )
    s = point_states(linkage, args["q"], args["qd"])
    return _rows_of_states(linkage, closures, s, error_bias=True).e_bias


def _check_baumgarte_time(fname: str, baumgarte_time) -> Array:
    T = jnp.asarray(baumgarte_time)
    c = _concrete(T)
    if T.shape != () or (c is not None and not (np.isfinite(c) and c > 0)):
        raise ValueError(f"{fname}: baumgarte_time must be a positive scalar (the time constant T_B), got {T!r}")
    return T.astype(jnp.result_type(float, T))


def _checked(fname: str, linkage: Linkage, closures, baumgarte_time, mobile: bool = True, **state) -> tuple:
    """The checked closures, state arrays (in the order given) and T_B of a dynamics function (at trace time); with
    ``mobile``, the closures must leave the linkage mobile (fewer rows than coordinates: the bordered solve needs
    independent rows)."""
    closures = check_closures(linkage, closures)
    n_c = sum(c.k for c in closures)
    if mobile and n_c >= linkage.nv:
        raise ValueError(
            f"{fname}: the closures have {n_c} constraint rows for the linkage's {linkage.nv} coordinates: they remove "
            "all mobility (a structure, not a mechanism), or some rows are dependent, which the bordered solve does "
            "not support; choose closure kinds that constrain only independent directions (e.g. 'planar' for a loop "
            "in a plane) or add joints"
        )
    args = check_state(fname, linkage, **state)
    return closures, [args[k] for k in state], _check_baumgarte_time(fname, baumgarte_time)


class _Factors(NamedTuple):
    """The factorisations of the bordered matrix [[M, −Aᵀ], [A, 0]] of eq. (48): M = LLᵀ, W = L⁻¹Aᵀ and the lower
    Cholesky factor of the Schur complement A M⁻¹ Aᵀ = WᵀW (W and it None without closures)."""

    L: Float[Array, "nv nv"]
    W: Float[Array, "nv n_c"] | None
    schur: Float[Array, "n_c n_c"] | None


def _factor(M: Array, A: Array) -> _Factors:
    L = jnp.linalg.cholesky(M)
    if A.shape[0] == 0:
        return _Factors(L, None, None)
    W = jax.scipy.linalg.solve_triangular(L, A.T, lower=True)
    return _Factors(L, W, jnp.linalg.cholesky(W.T @ W))


def _solve(fac: _Factors, r1: Array, r2: Array) -> tuple[Array, Array]:
    """(x, y) with [[M, −Aᵀ], [A, 0]] [x; y] = [r1; r2], by the Schur complement: z = L⁻¹r1, y = (WᵀW)⁻¹(r2 − Wᵀz),
    x = L⁻ᵀ(z + Wy). r1 (nv,) or (nv, m), r2 (n_c,) or (n_c, m): the value's solve and the derivatives' share it."""
    tri = jax.scipy.linalg.solve_triangular
    z = tri(fac.L, r1, lower=True)
    if fac.W is None:
        return tri(fac.L.T, z, lower=False), r2
    y = jax.scipy.linalg.cho_solve((fac.schur, True), r2 - fac.W.T @ z)
    return tri(fac.L.T, z + fac.W @ y, lower=False), y


class _Bordered(NamedTuple):
    """The Baumgarte solve at (q, q̇, u): q̈_B, λ, M, the closures' rows and the factorisations."""

    qdd: Float[Array, " nv"]
    lam: Float[Array, " n_c"]
    M: Float[Array, "nv nv"]
    rows: _Rows
    fac: _Factors


def _bordered(linkage: Linkage, closures, q, qd, u, T) -> _Bordered:
    """The bordered system of eqs. (48), (49) solved by the Schur complement (:func:`constrained_forward_dynamics`),
    at checked arguments."""
    s = point_states(linkage, q, qd)  # one forward pass for the closures' rows, ID(q, q̇, 0) and M
    rows = _rows_of_states(linkage, closures, s)
    bias, M = dynamics_of_states(linkage, s)
    f = generalized_forces(linkage, q, qd, u) - bias
    T = T.astype(f.dtype)
    fac = _factor(M, rows.A)
    qdd, lam = _solve(fac, f, -rows.bias - (2.0 / T) * (rows.A @ qd) - rows.e / T**2)
    return _Bordered(qdd, lam, M, rows, fac)


def _fd_plain(linkage, closures, q, qd, u, T):
    out = _bordered(linkage, closures, q, qd, u, T)
    return out.qdd, out.lam


def _residual_plain(linkage, closures, q, qd, qdd, u, T):
    out = _bordered(linkage, closures, q, qd, u, T)
    return out.M @ (out.qdd - qdd)


class _Linearised(NamedTuple):
    """The pieces of the derivatives of the bordered solve at (q, q̇, u, T_B) (:func:`_linearised`)."""

    out: _Bordered
    tau: tuple[Array, Array, Array]  # (∂τ/∂q, ∂τ/∂q̇, ∂τ/∂u)
    id_b: IDDerivatives  # the derivatives of ID − Aᵀλ (λ fixed) at q̈ = q̈_B
    id_at: IDDerivatives | None  # … and at a given q̈ (the residual's)
    r2_q: Float[Array, "n_c nv"]  # ∂c/∂q − ∂(Aq̈_B)/∂q at fixed q̈_B
    r2_qd: Float[Array, "n_c nv"]  # ∂c/∂q̇
    r2_T: Float[Array, " n_c"]  # ∂c/∂T_B


def _linearised(linkage: Linkage, closures, q, qd, u, T, qdd=None) -> _Linearised:
    """The bordered solve (:func:`_bordered`) and the right-hand sides of its derivative (eqs. (50), (51) re-derived;
    :func:`constrained_forward_dynamics`), from one derivative pass of the tree at q̈_B with the multipliers applied
    as point wrenches and the closures' rows differentiated from its frames (:func:`_closure_pass`); with ``qdd``,
    the derivatives at that acceleration too (the residual's), the pass vectorised over the two accelerations."""
    out = _bordered(linkage, closures, q, qd, u, T)
    tau = generalized_forces_derivatives(linkage, q, qd, u)
    T = T.astype(out.qdd.dtype)
    if qdd is None:
        id_b, rows = _closed_pass(linkage, closures, q, qd, out.qdd, out.lam)
        id_at = None
    else:
        both, rows = jax.vmap(lambda a: _closed_pass(linkage, closures, q, qd, a, out.lam))(jnp.stack([out.qdd, qdd]))
        first = lambda tree: jax.tree.map(lambda x: x[0], tree)
        id_b, id_at, rows = first(both), jax.tree.map(lambda x: x[1], both), first(rows)
    # the right-hand side −Ȧq̇ − (2/T)Aq̇ − e/T² (at fixed q̈_B: A q̈_B's derivative is in the pass's acc_q)
    c_q, c_qd, c_T = _stabilised_derivatives(rows, qd, T)
    return _Linearised(out, tau, id_b, id_at, -c_q, -c_qd, -c_T)


def _stabilised_derivatives(rows: _PassRows, qd: Array, T: Array) -> tuple[Array, Array, Array]:
    """(∂/∂q, ∂/∂q̇, ∂/∂T_B) of the stabilised rows c = A q̈ + Ȧq̇ + (2/T_B)Aq̇ + e/T_B² at fixed q̈, from the rows of
    a derivative pass at that q̈ (:func:`_closure_pass`); Ȧq̇ is quadratic in q̇: ∂(Ȧq̇)/∂q̇ = ∂(Aq̇)/∂q + Ȧ."""
    c_q = rows.acc_q + (2.0 / T) * rows.Aqd_q + rows.de_dq / T**2
    c_qd = (2.0 / T) * rows.A + rows.Aqd_q + rows.Adot
    c_T = -(2.0 / T**2) * (rows.A @ qd) - (2.0 / T**3) * rows.e
    return c_q, c_qd, c_T


def _rhs1(p: _Linearised, d: IDDerivatives) -> tuple[Array, Array, Array]:
    """(∂/∂q, ∂/∂q̇, ∂/∂u) of τ − ID(q, q̇, q̈) + Aᵀλ at fixed q̈ and λ, the derivatives ``d`` of ID − Aᵀλ taken at
    that q̈."""
    tau_q, tau_qd, tau_u = p.tau
    return tau_q - d.dq, tau_qd - d.dqd, tau_u


def _tangent(p: _Linearised, dq, dqd, du, dT) -> tuple[Array, Array]:
    """(dq̈_B, dλ) along state tangents (symbolic zeros skipped): the bordered solve of the linearised right-hand side
    [dτ − dID|_{q̈_B} + (dA)ᵀλ; dc − (dA)q̈_B]."""
    r1_q, r1_qd, r1_u = _rhs1(p, p.id_b)
    r1 = accumulate(p.out.qdd, [(r1_q, dq), (r1_qd, dqd), (r1_u, du)])
    r2 = accumulate(p.out.lam, [(p.r2_q, dq), (p.r2_qd, dqd), (lambda t: p.r2_T * t, dT)])
    return _solve(p.out.fac, r1, r2)


def _fd_jvp(primals, tangents):
    linkage, closures, q, qd, u, T = primals
    _, _, dq, dqd, du, dT = tangents
    rest = jvp_of_rest(_fd_plain, primals, tangents, analytic=(2, 3, 4, 5))
    if all(is_zero(t) for t in (dq, dqd, du, dT)):  # along the model's parameters only
        out = _bordered(linkage, closures, q, qd, u, T)
        zero = (jnp.zeros_like(out.qdd), jnp.zeros_like(out.lam))
        return (out.qdd, out.lam), zero if rest is None else rest
    p = _linearised(linkage, closures, q, qd, u, T)
    dqdd, dlam = _tangent(p, dq, dqd, du, dT)
    if rest is not None:
        dqdd, dlam = dqdd + rest[0], dlam + rest[1]
    return (p.out.qdd, p.out.lam), (dqdd, dlam)


def _residual_jvp(primals, tangents):
    linkage, closures, q, qd, qdd, u, T = primals
    _, _, dq, dqd, dqdd, du, dT = tangents
    rest = jvp_of_rest(_residual_plain, primals, tangents, analytic=(2, 3, 4, 5, 6))
    if all(is_zero(t) for t in (dq, dqd, du, dT)):  # λ does not move: dr = −M dq̈ (+ the parameters')
        out = _bordered(linkage, closures, q, qd, u, T)
        r = out.M @ (out.qdd - qdd)
        return r, accumulate(r, [(-out.M, dqdd)], rest)
    p = _linearised(linkage, closures, q, qd, u, T, qdd)
    _, dlam = _tangent(p, dq, dqd, du, dT)
    r = p.out.M @ (p.out.qdd - qdd)
    r_q, r_qd, r_u = _rhs1(p, p.id_at)
    dr = accumulate(r, [(r_q, dq), (r_qd, dqd), (r_u, du), (-p.out.M, dqdd)], rest) + p.out.rows.A.T @ dlam
    return r, dr


_fd = custom_rule("linkage.constrained_forward_dynamics", _fd_plain, _fd_jvp)
_residual = custom_rule("linkage.constrained_residual", _residual_plain, _residual_jvp)


def constrained_forward_dynamics(
    linkage: Linkage,
    closures: Closure | Sequence[Closure],
    q: Float[Array, " nq"],
    qd: Float[Array, " nv"],
    u: Float[Array, " n_inputs"],
    baumgarte_time: Float[ArrayLike, ""],
) -> tuple[Float[Array, " nv"], Float[Array, " n_c"]]:
    """(q̈, λ) of a closed chain (seed 003 eqs. (46a), (46b), (48), (49)): the bordered system

        [[M, −Aᵀ], [A, 0]] [q̈; λ] = [τ(q, q̇, u) − ID(q, q̇, 0); −Ȧq̇ − (2/T_B) A q̇ − (1/T_B²) e],

    with Baumgarte stabilisation of time constant T_B = ``baumgarte_time`` (> 0, a scalar) and M, ID(q, q̇, 0) from
    :func:`~jaxse3.linkage._dynamics.inverse_dynamics_and_mass` (one forward pass with the closures' rows), τ from
    :func:`~jaxse3.linkage.generalized_forces`.
    Solved by the Schur complement: M = LLᵀ (Cholesky), W = L⁻¹Aᵀ, y = L⁻¹(τ − ID), the n_c × n_c symmetric positive
    definite A M⁻¹ Aᵀ = WᵀW (Cholesky again) gives λ = (WᵀW)⁻¹(rhs₂ − Wᵀy), then q̈ = L⁻ᵀ(y + Wλ). A must have full
    row rank (independent closures; a planar mechanism needs ``"planar"`` closures). λ's convention is eq. (46a)'s
    M q̈ = τ − ID(q, q̇, 0) + Aᵀλ: Φ⊥λ is the wrench on frame A's body in frame B's coordinates (module docstring).
    Without closures, λ is empty and q̈ the open chain's forward dynamics.

    Derivatives (a ``custom_jvp`` rule on (q̈, λ), counted as "linkage.constrained_forward_dynamics"; seed 003
    eqs. (50), (51), re-derived: the paper's (D82) is misprinted): differentiating both block rows at the solution,
    with ID(q, q̇, q̈) = ID(q, q̇, 0) + M q̈,

        [[M, −Aᵀ], [A, 0]] [dq̈; dλ] = [dτ − (∂ID/∂q dq + ∂ID/∂q̇ dq̇)|_{q̈} + (dA)ᵀλ; dc − (dA)q̈],
        c = −Ȧq̇ − (2/T_B)Aq̇ − e/T_B²,

    solved with the value's factorisations. All analytic, from one derivative pass of the tree at the solution q̈
    (eqs. (21), (27), (39)–(42)) in which the multipliers are point wrenches, so that it returns the derivatives of
    ID − Aᵀλ at fixed λ ((D68), (D69)), and whose frames give ∂(Aq̈ + Ȧq̇)/∂q, ∂(Aq̇)/∂q, Ȧ and ∂e/∂q
    ((D70)–(D83) re-derived; :func:`_closure_pass`), with ∂(Ȧq̇ + (2/T_B)Aq̇)/∂q̇ = ∂(Aq̇)/∂q + Ȧ + (2/T_B)A (Ȧq̇ is
    quadratic in q̇); ∂τ/∂(q, q̇, u) (:func:`~jaxse3.linkage.generalized_forces_derivatives`) and
    ∂c/∂T_B = (2/T_B²)Aq̇ + (2/T_B³)e. Tangents along the model's parameters (the linkage's and the closures'
    arrays) are the plain autodiff JVP; linkages with quaternion joints (:func:`~jaxse3.linkage._derivatives.covered`)
    are differentiated by plain autodiff through the forward passes and both factorisations. The Jacobians
    themselves: :func:`constrained_forward_dynamics_jacobians`.
    """
    closures, (q, qd, u), T = _checked(
        "constrained_forward_dynamics", linkage, closures, baumgarte_time, q=q, qd=qd, u=u
    )
    return (_fd if covered(linkage) else _fd_plain)(linkage, closures, q, qd, u, T)


def constrained_forward_dynamics_jacobians(
    linkage: Linkage,
    closures: Closure | Sequence[Closure],
    q: Float[Array, " nq"],
    qd: Float[Array, " nv"],
    u: Float[Array, " n_inputs"],
    baumgarte_time: Float[ArrayLike, ""],
) -> tuple[Float[Array, "nv nv"], Float[Array, "nv nv"], Float[Array, "nv n_inputs"]]:
    """(∂q̈/∂q, ∂q̈/∂q̇, ∂q̈/∂u) of :func:`constrained_forward_dynamics` (seed 003 eqs. (50), (51), re-derived; its
    docstring): one Baumgarte solve, one derivative pass of ID at q̈, the closures' terms, and one bordered solve of
    nv + nv + n_inputs right-hand sides with the value's factorisations."""
    fname = "constrained_forward_dynamics_jacobians"
    closures, (q, qd, u), T = _checked(fname, linkage, closures, baumgarte_time, q=q, qd=qd, u=u)
    if not covered(linkage):
        raise ValueError(
            f"{fname}: the analytical derivatives do not cover spherical or free joints in quaternion coordinates; "
            "differentiate jaxse3.linkage.constrained_forward_dynamics with jax.jacfwd"
        )
    p = _linearised(linkage, closures, q, qd, u, T)
    r1 = jnp.concatenate(_rhs1(p, p.id_b), axis=1)
    r2 = jnp.concatenate([p.r2_q, p.r2_qd, jnp.zeros((p.r2_q.shape[0], linkage.n_inputs), r1.dtype)], axis=1)
    X = _solve(p.out.fac, r1, r2)[0]
    nv = linkage.nv
    return X[:, :nv], X[:, nv : 2 * nv], X[:, 2 * nv :]


def constrained_residual(
    linkage: Linkage,
    closures: Closure | Sequence[Closure],
    q: Float[Array, " nq"],
    qd: Float[Array, " nv"],
    qdd: Float[Array, " nv"],
    u: Float[Array, " n_inputs"],
    baumgarte_time: Float[ArrayLike, ""],
) -> Float[Array, " nv"]:
    """The residual of a closed chain's Baumgarte-stabilised dynamics (seed 003 eq. (46a) with the multipliers of
    eqs. (48), (49)), for Newmark-β and statics:

        r(q, q̇, q̈, u) = τ(q, q̇, u) − ID(q, q̇, q̈) + A(q)ᵀ λ(q, q̇, u),

    λ from the same bordered solve as :func:`constrained_forward_dynamics` (T_B = ``baumgarte_time``). ID is affine in
    q̈, ID(q, q̇, q̈) = ID(q, q̇, 0) + M(q) q̈, so with that solve's M q̈_B = τ − ID(q, q̇, 0) + Aᵀλ

        r = M(q) (q̈_B(q, q̇, u) − q̈),

    which is how it is computed (one forward pass, as the forward dynamics). Hence:

    * r = 0 exactly when q̈ is the Baumgarte acceleration q̈_B: it is zero along the motions of
      :func:`constrained_forward_dynamics`, and Newmark-β on r integrates them (∂r/∂q̈ = −M);
    * at rest, r(q, 0, 0, u) = M(q) q̈_B(q, 0, u) is zero iff q̈_B = 0, i.e. (the bordered matrix being invertible)
      iff τ(q, 0, u) − ID(q, 0, 0) + Aᵀλ = 0 (first block row) **and** e(q) = 0 (second block row, at q̇ = 0:
      A·0 = −e/T_B²): its zeros at rest are exactly the constrained equilibria, so statics needs no unknowns
      beside q. An equilibrium is a regular zero (invertible ∂r/∂q) iff the stiffness projected on the constraint
      manifold's tangent space is invertible; where the loads vanish every configuration on the manifold is an
      equilibrium and ∂r/∂q is singular.

    This is the index-1 (Baumgarte) form; :func:`index3_residual` is the residual of eq. (52a) with λ as unknowns.
    Without closures, r = τ − ID(q, q̇, q̈).

    Derivatives (a ``custom_jvp`` rule, counted as "linkage.constrained_residual"): differentiating the first form,

        dr = dτ − (∂ID/∂q dq + ∂ID/∂q̇ dq̇)|_{q̈} − M dq̈ + (dA)ᵀλ + Aᵀ dλ,

    with ID's derivatives at the given q̈ and dλ from the derivative of the bordered solve
    (:func:`constrained_forward_dynamics`), which needs them at q̈_B: one analytical derivative pass vectorised over
    the two accelerations, the closures' terms from its frames as there. Parameters' tangents and linkages with
    quaternion joints: plain autodiff, as the forward dynamics.
    """
    closures, (q, qd, qdd, u), T = _checked(
        "constrained_residual", linkage, closures, baumgarte_time, q=q, qd=qd, qdd=qdd, u=u
    )
    return (_residual if covered(linkage) else _residual_plain)(linkage, closures, q, qd, qdd, u, T)


def _index3_parts(linkage, closures, q, qd, qdd, lam, u) -> tuple[Array, _Rows, Array]:
    """(r, the closures' rows, M) from one forward pass (the closures' rows, ID(q, q̇, 0) and M)."""
    s = point_states(linkage, q, qd)
    rows = _rows_of_states(linkage, closures, s)
    bias, M = dynamics_of_states(linkage, s)
    return generalized_forces(linkage, q, qd, u) - bias - M @ qdd + rows.A.T @ lam, rows, M


def _index3_plain(linkage, closures, q, qd, qdd, lam, u):
    return _index3_parts(linkage, closures, q, qd, qdd, lam, u)[0]


class _PassRows(NamedTuple):
    """The closures' rows and their derivatives from the frames of a derivative pass at (q, q̇, q̈)
    (:func:`_closure_pass`)."""

    e: Float[Array, " n_c"]  # (47c)
    A: Float[Array, "n_c nv"]  # (47a)
    de_dq: Float[Array, "n_c nv"]  # ∂e/∂q (D80)
    Aqd_q: Float[Array, "n_c nv"]  # ∂(Aq̇)/∂q at fixed q̇
    Adot: Float[Array, "n_c nv"]  # Ȧ (47b)
    acc_q: Float[Array, "n_c nv"]  # ∂(Aq̈ + Ȧq̇)/∂q at fixed (q̇, q̈)


def _closed_pass(linkage: Linkage, closures, q, qd, qdd, lam) -> tuple[IDDerivatives, _PassRows]:
    """ID − Aᵀλ with its derivatives and the closures' rows with theirs, from one derivative pass of the tree with the
    multipliers applied as point wrenches (:func:`_closure_pass`); ``qd = qdd = None``: the pass at rest. Each link
    carries the columns of its path and subtree and, where a closure's frame A lies in its subtree, those of frame B's
    path: w_A turns with g_BA, so ∂w_A/∂q reaches into both branches ((D68); w_B is constant)."""
    index = lambda name: None if name is None else linkage.index(name)
    couplings = tuple((linkage.index(c.link_a), index(c.link_b)) for c in closures)
    return tree_derivatives_with_wrenches(linkage, q, qd, qdd, _closure_pass(linkage, closures, lam), couplings)


def _closure_pass(linkage: Linkage, closures, lam: Array):
    """The ``applied`` of :func:`~jaxse3.linkage._derivatives.tree_derivatives_with_wrenches` for a closed chain: the
    multipliers as point wrenches, and the closures' rows with their q-derivatives from the pass's frames
    (:class:`_PassRows`; seed 003 App. D (D68)–(D83), re-derived), e (47c) with them.

    Wrenches: Aᵀλ = Σ J_Aᵀ w_A + J_Bᵀ w_B with w_A = Ad_{g_BA}ᵀ Φ⊥λ at frame A and w_B = −Φ⊥λ at frame B (digest
    §2.5), carried to their points' frames by Ad⁻ᵀ of the placements. w_B is constant in frame B; w_A turns with
    g_BA, whose body-side variation is ξ = (J_A − Ad⁻¹_{g_BA} J_B)δq, so ∂w_A/∂q = ad_ξᵀ w_A =
    \bar{ad}_{w_A}(J_A − Ad⁻¹_{g_BA} J_B) ((D68), (D69); ``se3.adbar(w) @ x = ad_xᵀ w``).

    Rows, with V = Ad_{g_BA} J_A − J_B (A = Φ⊥ᵀV) and the spatial variation ζ = Vδq of g_BA, so that
    ∂(Ad_{g_BA} x)/∂q = Ad_{g_BA} ∂x/∂q − ad_{Ad_{g_BA} x} V (D70–D76): a point's ∂η/∂q = R^B (D73) and
    ∂η̇/∂q = Q^B − ad_η R^B (D74; the pass's Q^B has no gravity term) and the rate of the body Jacobian
    J̇ = Y^B − R^B − ad_η J, all carried to the frames by Ad⁻¹ of the placements. (The paper's J̇ = Y^B − R^B, after
    eq. (28), holds applied to q̇ only, where ad_η J q̇ = ad_η η = 0; Ȧ as a matrix needs the whole rate.)

    * ∂e/∂q = Φ⊥ᵀ dexp_ε⁻¹ V (D80, Φ⊥ᵀ for Φ⊥);
    * ∂(Aq̇)/∂q = Φ⊥ᵀ(Ad R^B_A − ad_{Ad η_A} V − R^B_B), from Aq̇ = Φ⊥ᵀ(Ad η_A − η_B);
    * Ȧ = Φ⊥ᵀ(Ad ad_{η_BA} J_A + Ad J̇_A − J̇_B) (47b), η_BA = η_A − Ad⁻¹ η_B;
    * ∂(Aq̈ + Ȧq̇)/∂q from Aq̈ + Ȧq̇ = Φ⊥ᵀ(Ad η̇_A − η̇_B − ad_{η_B} Ad η_A) (:func:`closure_bias` at q̈):
      Φ⊥ᵀ(Ad ∂η̇_A − ad_{Ad η̇_A} V − ∂η̇_B + ad_{Ad η_A} R^B_B − ad_{η_B}(Ad R^B_A − ad_{Ad η_A} V)).

    Together with the pass at q̈ = q̈_B they are the right-hand sides of eqs. (50), (51) without autodiff; the paper's
    (D82) as printed misses the transpose and the A side's transport (digest §2.5). From a pass at rest (frames with
    poses and Jacobians only): the wrenches, e, A and ∂e/∂q, the other rows None."""
    ad = se3.ad

    def one(Phi, place_a, place_b, lam_c, A, B):  # a closure's wrenches (at B, at A) and rows; B None: on the world
        gA, etaA, etadA, JA, RA, QA, YA = _placed(A, place_a)
        dtype = JA.dtype
        Phi = Phi.astype(dtype)
        mu = Phi @ lam_c
        if B is None:  # frame B on the world: at rest
            zero6, zero = jnp.zeros(6, dtype), jnp.zeros_like(JA)
            gB, etaB, JB, RB, QB, YB = place_b.astype(dtype), zero6, zero, zero, zero, zero
            wB = None
        else:
            gB, etaB, _, JB, RB, QB, YB = _placed(B, place_b)
            wB = -se3.Ad_inv(place_b.astype(dtype)).T @ mu
        g = se3.inv(gB) @ gA
        Ad, Ai = se3.Ad(g), se3.Ad_inv(g)
        wA = Ad.T @ mu
        to_a = se3.Ad_inv(place_a.astype(dtype)).T
        V = Ad @ JA - JB
        Pt = Phi.T
        eps = se3.log(g)
        rows = (Pt @ eps, Pt @ V, Pt @ se3.dexp_inv(eps) @ V)
        wrenches = (wB, to_a @ wA, to_a @ se3.adbar(wA) @ (JA - Ai @ JB))
        if etaA is None:  # a pass at rest
            return wrenches, (*rows, None, None, None)
        y = Ad @ etaA
        d_etad = lambda Q, R, eta: Q - ad(eta) @ R  # (D74)
        acc_q = (
            Ad @ d_etad(QA, RA, etaA)
            - ad(Ad @ etadA) @ V
            - d_etad(QB, RB, etaB)
            + ad(y) @ RB
            - ad(etaB) @ (Ad @ RA - ad(y) @ V)
        )
        J_rate = lambda Y, R, eta, J: Y - R - ad(eta) @ J  # J̇ as a matrix (docstring)
        Adot = Ad @ ad(etaA - Ai @ etaB) @ JA + Ad @ J_rate(YA, RA, etaA, JA) - J_rate(YB, RB, etaB, JB)
        Aqd_q = Ad @ RA - ad(y) @ V - RB
        return wrenches, (*rows, Pt @ Aqd_q, Pt @ Adot, Pt @ acc_q)

    def applied(frame):
        if not closures:
            empty = jnp.zeros((0, linkage.nv), lam.dtype)
            return [], _PassRows(jnp.zeros(0, lam.dtype), *(empty for _ in _PassRows._fields[1:]))
        starts = np.cumsum([0, *(c.k for c in closures)])
        args = []
        for c, start in zip(closures, starts):
            A = tuple(frame(linkage.index(c.link_a), c.point_a))
            B = None if c.link_b is None else tuple(frame(linkage.index(c.link_b), c.point_b))
            args.append((c.constrained, c.placement_a, c.placement_b, lam[start : start + c.k], A, B))
        out = side_by_side(one, args, [(c.link_b is None, c.k) for c in closures])  # closures of one shape together
        wrenches = []
        for c, ((wB, wA, dwA), _) in zip(closures, out):
            if wB is not None:
                wrenches.append(PointWrench(linkage.index(c.link_b), c.point_b, wB, jnp.zeros_like(dwA)))
            wrenches.append(PointWrench(linkage.index(c.link_a), c.point_a, wA, dwA))
        parts = [rows for _, rows in out]
        return wrenches, _PassRows(*(None if x[0] is None else jnp.concatenate(x) for x in zip(*parts)))

    return applied


def _index3_jvp(primals, tangents):
    linkage, closures, q, qd, qdd, lam, u = primals
    _, _, dq, dqd, dqdd, dlam, du = tangents
    rest = jvp_of_rest(_index3_plain, primals, tangents, analytic=(2, 3, 4, 5, 6))
    if all(is_zero(t) for t in (dq, dqd, du)):  # along (q̈, λ) (and the parameters): dr = −M dq̈ + Aᵀ dλ
        r, rows, M = _index3_parts(linkage, closures, q, qd, qdd, lam, u)
        return r, accumulate(r, [(-M, dqdd), (rows.A.T, dlam)], rest)
    tau_q, tau_qd, tau_u = generalized_forces_derivatives(linkage, q, qd, u)
    # ID − Aᵀλ and its derivatives in one pass, the multipliers applied as point wrenches ((D68), (D69))
    d, rows = _closed_pass(linkage, closures, q, qd, qdd, lam)
    r = generalized_forces(linkage, q, qd, u) - d.tau
    terms = [(tau_q - d.dq, dq), (tau_qd - d.dqd, dqd), (-d.M, dqdd), (rows.A.T, dlam), (tau_u, du)]
    return r, accumulate(r, terms, rest)


_index3 = custom_rule("linkage.index3_residual", _index3_plain, _index3_jvp)


def _index3_rest_plain(linkage, closures, q, lam, u):
    zero = jnp.zeros(linkage.nv, lam.dtype)
    return _index3_plain(linkage, closures, q, zero, zero, lam, u)


def _index3_rest_jvp(primals, tangents):
    linkage, closures, q, lam, u = primals
    _, _, dq, dlam, du = tangents
    rest = jvp_of_rest(_index3_rest_plain, primals, tangents, analytic=(2, 3, 4))
    zero = jnp.zeros(linkage.nv, lam.dtype)
    tau_q, _, tau_u = generalized_forces_derivatives(linkage, q, zero, u)
    d, rows = _closed_pass(linkage, closures, q, None, None, lam)
    r = generalized_forces(linkage, q, zero, u) - d.tau
    return r, accumulate(r, [(tau_q - d.dq, dq), (rows.A.T, dlam), (tau_u, du)], rest)


_index3_rest = custom_rule("linkage.index3_residual_at_rest", _index3_rest_plain, _index3_rest_jvp)


def index3_residual(
    linkage: Linkage,
    closures: Closure | Sequence[Closure],
    q: Float[Array, " nq"],
    qd: Float[Array, " nv"],
    qdd: Float[Array, " nv"],
    lam: Float[Array, " n_c"],
    u: Float[Array, " n_inputs"],
) -> Float[Array, " nv"]:
    """The residual of a closed chain's dynamics with the multipliers λ as independent variables (seed 003
    eq. (52a), the index-3 form): with the closures' e(q) = 0 (:func:`closure_error`) it is the system

        r(q, q̇, q̈, λ, u) = τ(q, q̇, u) − ID(q, q̇, q̈) + A(q)ᵀλ = 0,    e(q) = 0,

    which the index-3 Newmark-β integrates (:class:`~jaxse3.integrate.ConstrainedNewmark`; ``solver="newmark-index3"``
    of :func:`jaxse3.sim.simulate`). λ's convention is that of :func:`constrained_forward_dynamics` (Φ⊥λ: the wrench
    on frame A's body in frame B's coordinates); ``lam`` has the closures' n_c rows. Computed as
    τ − ID(q, q̇, 0) − M q̈ + Aᵀλ from one forward pass (the closures' rows, ID at rest acceleration and M).

    Derivatives (a ``custom_jvp`` rule, counted as "linkage.index3_residual"; eq. (52b) without the Newmark factors):
    ∂r/∂q = ∂τ/∂q − ∂ID/∂q + ∂(Aᵀλ)/∂q, ∂r/∂q̇ = ∂τ/∂q̇ − ∂ID/∂q̇, ∂r/∂q̈ = −M, ∂r/∂λ = Aᵀ, ∂r/∂u = ∂τ/∂u, all
    analytic: τ's from :func:`~jaxse3.linkage.generalized_forces_derivatives`, and ID − Aᵀλ with its derivatives from
    one derivative pass of the tree (:func:`~jaxse3.linkage._derivatives.tree_derivatives_with_wrenches`) in which the
    multipliers are the point wrenches Ad_{g_BA}ᵀΦ⊥λ at frame A and −Φ⊥λ at frame B, with the explicit derivative of
    the first, \bar{ad}_{w_A}(J_A − Ad⁻¹_{g_BA} J_B) (seed 003 (D68), (D69); digest §2.5). Tangents along the
    model's parameters, and linkages with quaternion joints: plain autodiff.
    """
    closures = check_closures(linkage, closures)
    args = check_state("index3_residual", linkage, q=q, qd=qd, qdd=qdd, u=u)
    lam = _checked_multipliers("index3_residual", closures, lam, args["q"])
    q, qd, qdd, u = (args[k] for k in ("q", "qd", "qdd", "u"))
    return (_index3 if covered(linkage) else _index3_plain)(linkage, closures, q, qd, qdd, lam, u)


def _checked_multipliers(fname: str, closures: tuple[Closure, ...], lam, q: Array) -> Array:
    """λ as an array of the closures' n_c rows (a clear error otherwise), in the state's floating dtype."""
    n_c = sum(c.k for c in closures)
    lam = jnp.asarray(lam)
    if lam.shape != (n_c,):
        raise ValueError(f"{fname}: lam must have the closures' {n_c} rows, shape ({n_c},), got {lam.shape}")
    return lam.astype(jnp.result_type(q.dtype, lam.dtype, float))


def index3_residual_at_rest(
    linkage: Linkage,
    closures: Closure | Sequence[Closure],
    q: Float[Array, " nq"],
    lam: Float[Array, " n_c"],
    u: Float[Array, " n_inputs"],
) -> Float[Array, " nv"]:
    """:func:`index3_residual` at rest, r(q, 0, 0, λ, u) = τ(q, 0, u) − ID(q, 0, 0) + A(q)ᵀλ: the residual of a closed
    chain's statics with the multipliers as unknowns (seed 003 eq. (52) at rest, with e(q) = 0).

    Derivatives (a ``custom_jvp`` rule, counted as "linkage.index3_residual_at_rest"): those of
    :func:`index3_residual` in (q, λ, u), from a derivative pass of the tree at rest — poses, Jacobians and the
    composite wrenches of gravity, the loads and the multipliers with their P^S and E^S sums, none of the velocity and
    acceleration terms (:func:`~jaxse3.linkage._derivatives.tree_derivatives_with_wrenches` with q̇ = q̈ = None).
    """
    closures = check_closures(linkage, closures)
    args = check_state("index3_residual_at_rest", linkage, q=q, u=u)
    lam = _checked_multipliers("index3_residual_at_rest", closures, lam, args["q"])
    return (_index3_rest if covered(linkage) else _index3_rest_plain)(linkage, closures, args["q"], lam, args["u"])


def _baumgarte_parts(linkage, closures, q, qd, qdd, lam, u, T):
    """(R, A, M): the index-3 residual's forward pass (:func:`_index3_parts`) and the stabilised rows."""
    r, rows, M = _index3_parts(linkage, closures, q, qd, qdd, lam, u)
    return jnp.concatenate([r, rows.A @ (qdd + (2.0 / T) * qd) + rows.bias + rows.e / T**2]), rows.A, M


def _baumgarte_plain(linkage, closures, q, qd, qdd, lam, u, T):
    return _baumgarte_parts(linkage, closures, q, qd, qdd, lam, u, T)[0]


def _baumgarte_jvp(primals, tangents):
    linkage, closures, q, qd, qdd, lam, u, T = primals
    _, _, dq, dqd, dqdd, dlam, du, dT = tangents
    rest = jvp_of_rest(_baumgarte_plain, primals, tangents, analytic=(2, 3, 4, 5, 6, 7))
    if all(is_zero(t) for t in (dq, dqd, du, dT)):  # along (q̈, λ) (and the parameters): R is affine in them
        R, A, M = _baumgarte_parts(*primals)
        n = M.shape[0]
        dR = jnp.concatenate([accumulate(R[:n], [(-M, dqdd), (A.T, dlam)]), accumulate(R[n:], [(A, dqdd)])])
        return R, dR if rest is None else dR + rest
    tau_q, tau_qd, tau_u = generalized_forces_derivatives(linkage, q, qd, u)
    # ID − Aᵀλ with its derivatives and the closures' rows with theirs, from one derivative pass ((D68)–(D83))
    d, rows = _closed_pass(linkage, closures, q, qd, qdd, lam)
    r = generalized_forces(linkage, q, qd, u) - d.tau
    c = rows.A @ (qdd + (2.0 / T) * qd) + rows.Adot @ qd + rows.e / T**2
    dr = accumulate(r, [(tau_q - d.dq, dq), (tau_qd - d.dqd, dqd), (-d.M, dqdd), (rows.A.T, dlam), (tau_u, du)])
    c_q, c_qd, c_T = _stabilised_derivatives(rows, qd, T)
    dc = accumulate(c, [(c_q, dq), (c_qd, dqd), (rows.A, dqdd), (lambda t: c_T * t, dT)])
    out = jnp.concatenate([r, c])
    return out, jnp.concatenate([dr, dc]) if rest is None else jnp.concatenate([dr, dc]) + rest


_baumgarte = custom_rule("linkage.baumgarte_residual", _baumgarte_plain, _baumgarte_jvp)


def baumgarte_residual(
    linkage: Linkage,
    closures: Closure | Sequence[Closure],
    q: Float[Array, " nq"],
    qd: Float[Array, " nv"],
    qdd: Float[Array, " nv"],
    lam: Float[Array, " n_c"],
    u: Float[Array, " n_inputs"],
    baumgarte_time: Float[ArrayLike, ""],
) -> Float[Array, " nv+n_c"]:
    """The Baumgarte-stabilised dynamics of a closed chain (seed 003 eqs. (48), (49)) as a residual in (q̈, λ), the
    index-3 residual stacked on the stabilised acceleration constraint:

        R = [τ(q, q̇, u) − ID(q, q̇, q̈) + A(q)ᵀλ;  A q̈ + Ȧq̇ + (2/T_B) A q̇ + e/T_B²],    (nv + n_c,)

    affine in (q̈, λ) with the matrix [[−M, Aᵀ], [A, 0]]: R = 0 at the (q̈_B, λ) of
    :func:`constrained_forward_dynamics`. A system with further rows (prescribed joints, eq. (43)) stacks them on
    these and solves them together.

    Derivatives (a ``custom_jvp`` rule, counted as "linkage.baumgarte_residual"): the first block's as
    :func:`index3_residual`, and the second's from the same derivative pass (:func:`_closure_pass`): ∂/∂q = ∂(Aq̈ +
    Ȧq̇)/∂q + (2/T_B) ∂(Aq̇)/∂q + ∂e/∂q / T_B², ∂/∂q̇ = ∂(Aq̇)/∂q + Ȧ + (2/T_B) A, ∂/∂q̈ = A, ∂/∂T_B in closed form
    ((D70)–(D83), re-derived). Tangents along the model's parameters, and linkages with quaternion joints: plain
    autodiff.
    """
    fname = "baumgarte_residual"
    closures, (q, qd, qdd, u), T = _checked(
        fname, linkage, closures, baumgarte_time, mobile=False, q=q, qd=qd, qdd=qdd, u=u
    )
    lam = _checked_multipliers(fname, closures, lam, q)
    T = T.astype(q.dtype)
    return (_baumgarte if covered(linkage) else _baumgarte_plain)(linkage, closures, q, qd, qdd, lam, u, T)

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
  τ − ID(q, q̇, q̈) + Aᵀλ of the same Baumgarte motion for Newmark-β and statics (:func:`constrained_residual`).

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
perturbation; q ⊕ δ = q + δ where nq = nv). Differentiation of all the functions here is plain autodiff through the
forward pass and the SE(3) core (no custom rule yet).
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
from jaxse3.linkage._dynamics import (
    PointStates,
    check_state,
    generalized_forces,
    inverse_dynamics_and_mass,
    point_states,
)
from jaxse3.linkage._model import Linkage, _concrete

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
    "constrained_residual",
]

#: the joint kinds a :class:`Closure` can close a loop with (:func:`closure_basis`)
CLOSURE_KINDS = ("fixed", "spherical", "revolute", "prismatic", "planar")
_AXIS_KINDS = ("revolute", "prismatic", "planar")


def _unit_axis(owner: str, axis) -> Float[Array, " 3"]:
    a = jnp.asarray(axis, dtype=float)
    c = _concrete(a)
    if a.shape != (3,) or (c is not None and (not np.isfinite(c).all() or abs(np.linalg.norm(c) - 1.0) > 1e-9)):
        raise ValueError(f"{owner}: 'axis' must be a unit 3-vector, got {axis!r}")
    return a


def _plane(a: Float[Array, " 3"]) -> tuple[Float[Array, " 3"], Float[Array, " 3"]]:
    """(t₁, t₂) with (t₁, t₂, a) a right-handed orthonormal frame (as :func:`~jaxse3.linkage.joint_basis`'s)."""
    eye = jnp.eye(3, dtype=a.dtype)
    e = jnp.where(jnp.abs(a[0]) < 0.9, eye[0], eye[1])  # the unit vector least aligned with a
    t1 = e - (e @ a) * a
    t1 = t1 / jnp.linalg.norm(t1)
    return t1, jnp.cross(a, t1)


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
    t1, t2 = _plane(a)
    z = jnp.zeros(3, a.dtype)
    ang = lambda v: jnp.concatenate([v, z])
    lin = lambda v: jnp.concatenate([z, v])
    columns = {
        "revolute": [ang(t1), ang(t2), lin(t1), lin(t2), lin(a)],
        "prismatic": [ang(t1), ang(t2), ang(a), lin(t1), lin(t2)],
        "planar": [lin(t1), lin(t2)],
    }[kind]
    return jnp.stack(columns, axis=1)


def _pose(owner: str, field: str, placement) -> Float[Array, "4 4"]:
    P = jnp.eye(4) if placement is None else jnp.asarray(placement, dtype=float)
    c = _concrete(P)
    if P.shape != (4, 4) or (
        c is not None
        and (
            not np.isfinite(c).all()
            or np.abs(c[:3, :3].T @ c[:3, :3] - np.eye(3)).max() > 1e-9
            or np.abs(c[3] - (0, 0, 0, 1)).max() > 0
        )
    ):
        raise ValueError(f"{owner}: {field!r} must be a pose (4, 4) [[R, p], [0, 1]] with R a rotation")
    return P


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
        self.placement_a = _pose(owner, "placement_a", placement_a)
        self.placement_b = _pose(owner, "placement_b", placement_b)
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
    """One closure's relative motion: g_BA, Ad_{g_BA} J_A − J_B, and Ad_{g_BA} η̇_A − η̇_B − ad_{η_B} Ad_{g_BA} η_A."""

    g: Float[Array, "4 4"]
    V: Float[Array, "6 nv"]
    acc: Float[Array, " 6"]


def _frame(linkage: Linkage, s: PointStates, link: str, point: int, P: Array) -> tuple[Array, ...]:
    """(g, η, η̇, J) of a frame at pose P in a point's frame (module docstring)."""
    sl = linkage.points_of(link)
    k = sl.start + point % (sl.stop - sl.start)
    P = P.astype(s.g.dtype)
    Pi = se3.Ad_inv(P)
    return s.g[k] @ P, Pi @ s.eta[k], Pi @ s.etad[k], Pi @ s.J[k]


def _relative(linkage: Linkage, c: Closure, s: PointStates) -> _Relative:
    """Rates of g_BA at the point states ``s``: with V = (ġ_BA g_BA⁻¹)^∨ = Ad_{g_BA} η_A − η_B,
    d/dt(Ad_{g_BA} J_A q̇ − J_B q̇) at fixed q̇ = ad_V Ad_{g_BA} η_A + Ad_{g_BA} J̇_A q̇ − J̇_B q̇
    = Ad_{g_BA} η̇_A − η̇_B − ad_{η_B} Ad_{g_BA} η_A, with η̇ = J̇q̇ at q̈ = 0 (eq. (47b))."""
    gA, etaA, etadA, JA = _frame(linkage, s, c.link_a, c.point_a, c.placement_a)
    if c.link_b is None:
        g = se3.inv(c.placement_b.astype(gA.dtype)) @ gA
        Ad = se3.Ad(g)
        return _Relative(g, Ad @ JA, Ad @ etadA)
    gB, etaB, etadB, JB = _frame(linkage, s, c.link_b, c.point_b, c.placement_b)
    g = se3.inv(gB) @ gA
    Ad = se3.Ad(g)
    return _Relative(g, Ad @ JA - JB, Ad @ etadA - etadB - se3.ad(etaB) @ (Ad @ etaA))


class _Rows(NamedTuple):
    """The closures' stacked rows: e (47c), A (47a), Ȧq̇ (47b; zero without q̇) and, when asked for, ∂e/∂q (D80)."""

    e: Float[Array, " n_c"]
    A: Float[Array, "n_c nv"]
    bias: Float[Array, " n_c"]
    de_dq: Float[Array, "n_c nv"] | None


def _rows(
    fname: str, linkage: Linkage, closures, q, qd=None, error_jacobian: bool = False
) -> tuple[tuple[Closure, ...], _Rows]:
    """The checked closures and their rows at (q, q̇) from one forward pass (:func:`point_states` at q̈ = 0)."""
    closures = check_closures(linkage, closures)
    args = check_state(fname, linkage, q=q, qd=qd)
    s = point_states(linkage, args["q"], args["qd"])
    dtype = s.J.dtype
    if not closures:
        none, empty = jnp.zeros(0, dtype), jnp.zeros((0, linkage.nv), dtype)
        return closures, _Rows(none, empty, none, empty if error_jacobian else None)
    parts = []
    for c in closures:
        r = _relative(linkage, c, s)
        Pt = c.constrained.astype(dtype).T
        eps = se3.log(r.g)
        parts.append((Pt @ eps, Pt @ r.V, Pt @ r.acc, Pt @ se3.dexp_inv(eps) @ r.V if error_jacobian else None))
    e, A, bias, de = zip(*parts)
    cat = lambda x: None if x[0] is None else jnp.concatenate(x)
    return closures, _Rows(cat(e), cat(A), cat(bias), cat(de))


def closure_error(
    linkage: Linkage, closures: Closure | Sequence[Closure], q: Float[Array, " nq"]
) -> Float[Array, " n_c"]:
    """e(q) = ∥ Φ⊥ᵀ (log g_BA)^∨, g_BA = g_B⁻¹ g_A (seed 003 eq. (47c)), the closures' rows stacked in order (n_c,).

    log is the principal logarithm (rotation angle in [0, π]): a closure whose free rotation reaches π jumps there
    (choose placement_b so that its free rotation stays inside (−π, π))."""
    return _rows("closure_error", linkage, closures, q)[1].e


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


class _Bordered(NamedTuple):
    """The Baumgarte solve at (q, q̇, u): q̈_B, λ, and the f = τ − ID(q, q̇, 0), M, A it was made of."""

    qdd: Float[Array, " nv"]
    lam: Float[Array, " n_c"]
    f: Float[Array, " nv"]
    M: Float[Array, "nv nv"]
    A: Float[Array, "n_c nv"]


def _check_baumgarte_time(fname: str, baumgarte_time) -> Array:
    T = jnp.asarray(baumgarte_time)
    c = _concrete(T)
    if T.shape != () or (c is not None and not (np.isfinite(c) and c > 0)):
        raise ValueError(f"{fname}: baumgarte_time must be a positive scalar (the time constant T_B), got {T!r}")
    return T


def _bordered(fname: str, linkage: Linkage, closures, q, qd, u, baumgarte_time) -> _Bordered:
    """The bordered system of eqs. (48), (49) solved by the Schur complement (:func:`constrained_forward_dynamics`)."""
    closures, rows = _rows(fname, linkage, closures, q, qd)
    args = check_state(fname, linkage, q=q, qd=qd, u=u)
    q, qd, u = args["q"], args["qd"], args["u"]
    T = _check_baumgarte_time(fname, baumgarte_time)
    bias, M = inverse_dynamics_and_mass(linkage, q, qd)
    f = generalized_forces(linkage, q, qd, u) - bias
    tri = jax.scipy.linalg.solve_triangular
    L = jnp.linalg.cholesky(M)
    y = tri(L, f, lower=True)
    if not closures:
        return _Bordered(tri(L.T, y, lower=False), rows.e, f, M, rows.A)
    T = T.astype(f.dtype)
    rhs = -rows.bias - (2.0 / T) * (rows.A @ qd) - rows.e / T**2
    W = tri(L, rows.A.T, lower=True)
    lam = jax.scipy.linalg.cho_solve(jax.scipy.linalg.cho_factor(W.T @ W), rhs - W.T @ y)
    return _Bordered(tri(L.T, y + W @ lam, lower=False), lam, f, M, rows.A)


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
    :func:`~jaxse3.linkage._dynamics.inverse_dynamics_and_mass`, τ from :func:`~jaxse3.linkage.generalized_forces`.
    Solved by the Schur complement: M = LLᵀ (Cholesky), W = L⁻¹Aᵀ, y = L⁻¹(τ − ID), the n_c × n_c symmetric positive
    definite A M⁻¹ Aᵀ = WᵀW (Cholesky again) gives λ = (WᵀW)⁻¹(rhs₂ − Wᵀy), then q̈ = L⁻ᵀ(y + Wλ). A must have full
    row rank (independent closures; a planar mechanism needs ``"planar"`` closures). λ's convention is eq. (46a)'s
    M q̈ = τ − ID(q, q̇, 0) + Aᵀλ: Φ⊥λ is the wrench on frame A's body in frame B's coordinates (module docstring).
    Without closures, λ is empty and q̈ the open chain's forward dynamics.

    Differentiation is plain autodiff through the forward passes and both factorisations (no custom rule yet).
    """
    out = _bordered("constrained_forward_dynamics", linkage, closures, q, qd, u, baumgarte_time)
    return out.qdd, out.lam


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

    This is the index-1 (Baumgarte) form; the index-3 residual [τ − ID + Aᵀλ; e] of eq. (52) with λ as unknowns is
    not implemented. Without closures, r = τ − ID(q, q̇, q̈). Differentiation: plain autodiff (as the forward dynamics).
    """
    fname = "constrained_residual"
    qdd = check_state(fname, linkage, qdd=qdd)["qdd"]
    out = _bordered(fname, linkage, closures, q, qd, u, baumgarte_time)
    return out.M @ (out.qdd - qdd)

"""Kinematics and dynamics of a linkage: one forward pass over its links, sums over its computational points.

The forward pass (:func:`point_states`) runs link by link, parents first, and gives every computational point k its
pose g_k, body twist η_k, body acceleration η̇_k and body Jacobian J_k (6 × nv: η_k = J_k q̇). From a parent's end
frame through a link's placement P (a fixed transform, rule 3 of seed 003 §5) every twist moves by Ad⁻¹_P; then

* a rigid joint with joint transform X(q_j) and constant motion subspace S̄ (child frame; :mod:`jaxse3.rigid.joints`)
  gives η_c = Ad⁻¹_X η + S̄ q̇_j, η̇_c = Ad⁻¹_X η̇ + S̄ q̈_j + ad_{η_c} S̄ q̇_j, J_c = Ad⁻¹_X J + [0 S̄ 0] (rule 5,
  eq. (39));
* a joint in exponential coordinates (:func:`jaxse3.linkage.joint_basis` Φ) is one rod-like joint α with
  Ω = Φq_j, step exp(Ω̂), S = T(Ω)Φ, S q̇ and S q̈ + Ṡ q̇ (C15, C21; :func:`exponential_joint`), run like a rod's;
* a rod runs its joints α (:func:`jaxse3.rod.kinematics.joints`: the Magnus step exp(Ω̂_α), S_α, S_α q̇ and
  S_α q̈ + Ṡ_α q̇): η_{α+1} = Ad⁻¹(η_α + S_α q̇), η̇_{α+1} = Ad⁻¹(η̇_α + S_α q̈ + Ṡ_α q̇ + ad_{η_α} S_α q̇) and
  J_{α+1} = Ad⁻¹(J_α + [0 S_α 0]) (D14, D15, eq. (2b)), starting from the joint frame's motion (a moving base).
  The joint terms of all rods of one structure are evaluated side by side before the pass (:func:`per_rod`, one
  ``vmap``): a robot with six equal flagella traces and compiles them once.

Each point carries its screw inertia 𝓜_k (a rigid body's spatial inertia, or the rod's weighted 𝓜_k = w_k 𝓜̄(X_k)) and
its wrench 𝓕_k = 𝓜_k(η̇_k − Ad⁻¹_{g_k}𝓖) + ad*_{η_k} 𝓜_k η_k − 𝓕_ext,k (16), with 𝓖 = (0, a_g) and 𝓕_ext,k the applied
point wrenches (:class:`~jaxse3.linkage.PointLoad`, in the point's frame; eq. (53) for world ones). Inverse dynamics and
the mass matrix are the sums over the points

    ID(q, q̇, q̈) = Σ_k J_kᵀ 𝓕_k + diag(armature) q̈,        M(q) = Σ_k J_kᵀ 𝓜_k J_k + diag(armature)   (14, 32, 34)

— the composite-wrench sums of the recursive backward pass, Σ_α S_αᵀ 𝓕^C_α (rules 4 and 6: over all children and
branches), written in Jacobian form. For a rigid tree they equal :func:`jaxse3.rigid.rnea` and
:func:`jaxse3.rigid.crba`, for one rod :func:`jaxse3.rod.inverse_dynamics` and :func:`jaxse3.rod.mass_matrix` (the
tests check both). The generalised forces are the rods' internal forces B(q)u − Kq − Dq̇ (eq. (35)) and the actuated
joints' efforts.

:func:`inverse_dynamics_autodiff` is plain: JAX differentiates it through the rules of the SE(3) core. The public
:func:`jaxse3.linkage.inverse_dynamics` and :func:`jaxse3.linkage.forward_dynamics` carry the analytical derivatives
of :mod:`jaxse3.linkage._derivatives` as ``custom_jvp`` rules (:mod:`jaxse3.linkage._rules`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Float

from jaxse3 import rigid, rod as rods, se3
from jaxse3.linkage._model import Link, Linkage, joint_basis, point_inertias, point_loads
from jaxse3.rod import kinematics as rod_kinematics

__all__ = [
    "PointStates",
    "point_states",
    "forward_kinematics",
    "inverse_dynamics_autodiff",
    "inverse_dynamics_and_mass",
    "dynamics_of_states",
    "mass_matrix",
    "energy",
    "generalized_forces",
    "check_state",
    "joint_transform",
    "JointTerms",
    "exponential_joint",
    "rod_groups",
    "per_rod",
    "rod_joints",
    "applied_wrenches",
    "speed",
    "integrate",
]


class PointStates(NamedTuple):
    """The motion of every computational point (leading axis n_points, links in order, each link's points in order)."""

    g: Float[Array, "n_points 4 4"]  # world pose g_k
    eta: Float[Array, "n_points 6"]  # body twist η_k
    etad: Float[Array, "n_points 6"]  # body acceleration η̇_k
    J: Float[Array, "n_points 6 nv"]  # body Jacobian J_k
    M: Float[Array, "n_points 6 6"]  # screw inertia 𝓜_k (with the added mass in a fluid)
    M_gravity: Float[Array, "n_points 6 6"]  # the mass gravity acts on (minus the buoyancy in a fluid)
    drag: Float[Array, "n_points 6"]  # diag 𝓓_k (zero outside a fluid)


def check_state(fname: str, linkage: Linkage, **arrays: ArrayLike | None) -> dict[str, Array]:
    """Trace-time shape checks of ``q`` (nq,), ``qd``, ``qdd`` (nv,), ``u`` (n_inputs,); returns float arrays."""
    sizes = {"q": ("nq", linkage.nq), "qd": ("nv", linkage.nv), "qdd": ("nv", linkage.nv)}
    sizes["u"] = ("n_inputs", linkage.n_inputs)
    out = {}
    for name, x in arrays.items():
        if x is None:
            out[name] = None
            continue
        x = jnp.asarray(x)
        size_name, size = sizes[name]
        if x.shape != (size,):
            raise ValueError(
                f"{fname}: {name} must have shape ({size_name},) = ({size},) for this linkage, got {x.shape} (vmap "
                f"over batches of states)"
            )
        out[name] = x if jnp.issubdtype(x.dtype, jnp.floating) else x.astype(linkage.gravity.dtype)
    return out


def add_columns(X: Array, S: Array, start: int) -> Array:
    """X + [0 S 0]: ``S`` (…, m) added to X's columns start … start + m − 1, by slices and a concatenation (XLA
    fuses them into their neighbours; ``X.at[..].add`` is a scatter, which it does not)."""
    end = start + S.shape[-1]
    parts = [X[..., :start], X[..., start:end] + S, X[..., end:]]
    return jnp.concatenate([p for p in parts if p.shape[-1]], axis=-1)


def _embed(J: Array, S: Array, start: int | Array) -> Array:
    """J + [0 S 0]: the columns of a link's coordinates added at ``start``, or J + S E with E = ``start`` the (n_l, nv)
    matrix that places them (links run side by side, :func:`side_by_side`)."""
    if isinstance(start, int):
        return add_columns(J, S, start)
    return J + S @ start


def side_by_side(fn: Callable, args: list[tuple], keys: Sequence | None = None) -> list:
    """``[fn(*a) for a in args]``, for several members by one ``jax.vmap`` over their stacked arguments (traced and
    compiled once); ``keys``: one per member, members of equal keys run together (their arguments of equal shapes),
    the results in the members' order."""
    if keys is not None:
        groups = {}
        for n, key in enumerate(keys):
            groups.setdefault(key, []).append(n)
        out = [None] * len(args)
        for members in groups.values():
            for n, o in zip(members, side_by_side(fn, [args[n] for n in members])):
                out[n] = o
        return out
    if len(args) == 1:
        return [fn(*args[0])]
    out = jax.vmap(fn)(*jax.tree.map(lambda *x: jnp.stack(x), *args))
    return [jax.tree.map(lambda a, k=k: a[k], out) for k in range(len(args))]


def joint_transform(link: Link, qi: Float[Array, " nq_j"]) -> Float[Array, "4 4"]:
    """X(q_j), the pose of a rigid link's frame in its joint frame: exp(Φq̂_j) in exponential coordinates,
    :func:`jaxse3.rigid.joints.batched_transform` otherwise."""
    if link.exponential:
        return se3.exp(joint_basis(link) @ qi)
    R, p = rigid.joints.batched_transform(rigid.joints.group(link.joint), link.axis[None], qi[None])
    return se3.from_rotation_translation(R[0], p[0])


class JointTerms(NamedTuple):
    """A joint α of a chain (seed 003 §4; App. C): the step g_{α,α+1}, Ad⁻¹ and Ad* of it, S_α (6, n) in frame α, the
    rates S_α q̇ and S_α q̈ + Ṡ_α q̇, and (when asked for) Ṡ_α, (∂S_α/∂q)q̇, (∂S_α/∂q)q̈ and (∂Ṡ_α/∂q)q̇."""

    step: Float[Array, "4 4"]
    Ad_inv: Float[Array, "6 6"]
    coAd: Float[Array, "6 6"]
    S: Float[Array, "6 n"]
    S_qd: Float[Array, " 6"]
    S_acc: Float[Array, " 6"]
    Sd: Float[Array, "6 n"] | None = None
    dS_qd: Float[Array, "6 n"] | None = None
    dS_qdd: Float[Array, "6 n"] | None = None
    dSd_qd: Float[Array, "6 n"] | None = None


def exponential_joint(
    Phi: Float[Array, "6 n"],
    qi: Float[Array, " n"],
    vi: Float[Array, " n"],
    ai: Float[Array, " n"],
    derivatives: bool = False,
) -> JointTerms:
    """The terms of a joint exp(Φq̂) with constant Φ (a rigid joint of seed 003, digest §1.1; a rod joint with
    𝓩 = Φ constant): Ω = Φq, S = T(Ω)Φ (C15), Ṡ = Ṫ Φ (C21), and with ``derivatives`` the App. C terms (C19, C20,
    C24) from ``se3.dexp_jac`` and ``se3.dexp_jac_dir``."""
    Om, rate, acc = Phi @ qi, Phi @ vi, Phi @ ai
    step = se3.exp(Om)
    S = se3.dexp(Om) @ Phi
    vel = S @ vi
    terms = JointTerms(step, se3.Ad_inv(step), se3.coAd(step), S, vel, S @ ai + se3.d_dexp_apply(Om, rate, rate))
    if not derivatives:
        return terms
    Ja, Jb = se3.dexp_jac(Om, jnp.stack([rate, acc]))  # linear in its second argument: one call for both
    return terms._replace(
        Sd=se3.d_dexp(Om, rate) @ Phi,
        dS_qd=Ja @ Phi,
        dS_qdd=Jb @ Phi,
        dSd_qd=se3.dexp_jac_dir(Om, rate, rate) @ Phi,
    )


def _rigid_link(link: Link, start: int, qi, vi, ai, g, eta, etad, J) -> tuple[Array, ...]:
    """The link frame's (g, η, η̇, J) from the joint frame's, through the rigid joint (module docstring)."""
    if link.joint == "fixed":
        return g, eta, etad, J
    if link.exponential:
        return tuple(
            a[-1] for a in _chain(exponential_joint(joint_basis(link), qi, vi, ai), True, start, g, eta, etad, J)
        )
    X = joint_transform(link, qi)
    Ai = se3.Ad_inv(X)
    S = rigid.joints.motion_subspace(link.joint, link.axis).T  # (6, nv_j), child frame
    vel = S @ vi
    eta_c = Ai @ eta + vel
    return g @ X, eta_c, Ai @ etad + S @ ai + se3.ad(eta_c) @ vel, _embed(Ai @ J, S, start)


def _chain(jt: JointTerms, single: bool, start: int, g, eta, etad, J) -> tuple[Array, ...]:
    """(g, η, η̇, J) at every point of a chain of joints (D14, D15, eq. (2b)) from its first point's: a rod's joints
    (leading axis) or, ``single``, one joint."""

    def point(carry, j):
        g, eta, etad, J = carry
        eta_p = eta + j.S_qd  # η_α⁺ = η_α + S_α q̇
        etad_p = etad + j.S_acc + se3.ad(eta) @ j.S_qd  # η̇_α⁺
        nxt = (g @ j.step, j.Ad_inv @ eta_p, j.Ad_inv @ etad_p, j.Ad_inv @ _embed(J, j.S, start))
        return nxt, nxt

    if single:
        pts = jax.tree.map(lambda a: a[None], point((g, eta, etad, J), jt)[1])
    else:
        _, pts = jax.lax.scan(point, (g, eta, etad, J), jt)
    return tuple(jnp.concatenate([a[None], b]) for a, b in zip((g, eta, etad, J), pts))


def rod_groups(linkage: Linkage) -> tuple[tuple[int, ...], ...]:
    """The soft links grouped by the structure of their rods (pytree structure, leaf shapes and dtypes): the rods of a
    group are evaluated side by side (:func:`per_rod`)."""
    groups: dict[Any, list[int]] = {}
    for i, link in enumerate(linkage.links):
        if link.joint == "soft":
            leaves, tree = jax.tree.flatten(link.body)
            groups.setdefault((tree, tuple((jnp.shape(x), jnp.result_type(x)) for x in leaves)), []).append(i)
    return tuple(tuple(g) for g in groups.values())


def per_rod(linkage: Linkage, fn: Callable[..., Any], args: Mapping[int, tuple]) -> dict[int, Any]:
    """``fn(rod_i, *args[i])`` for the soft links i of ``args``, one ``jax.vmap`` over each group of rods of one
    structure (:func:`rod_groups`): a linkage with six equal flagella traces and compiles a rod's joint terms once,
    not six times. The ``args`` of a group's links must have equal shapes (None entries stay None)."""
    out = {}
    for group in rod_groups(linkage):
        group = tuple(i for i in group if i in args)
        if len(group) == 1:
            out[group[0]] = fn(linkage.links[group[0]].body, *args[group[0]])
        elif group:
            stacked = jax.tree.map(lambda *x: jnp.stack(x), *((linkage.links[i].body, *args[i]) for i in group))
            batched = jax.vmap(fn)(*stacked)
            out.update({i: jax.tree.map(lambda a, n=n: a[n], batched) for n, i in enumerate(group)})
    return out


def rod_joints(
    linkage: Linkage, q: Array, qd: Array | None = None, qdd: Array | None = None, derivatives: bool = False
) -> dict[int, rod_kinematics.Joints]:
    """:func:`jaxse3.rod.kinematics.joints` of every soft link (link index → its joints), by :func:`per_rod`."""
    slices = lambda x, i: None if x is None else x[linkage.v_slice(i)]
    args = {
        i: (q[linkage.q_slice(i)], slices(qd, i), slices(qdd, i))
        for i, link in enumerate(linkage.links)
        if link.joint == "soft"
    }
    return per_rod(linkage, lambda rod, *a: rod_kinematics.joints(rod, *a, derivatives=derivatives), args)


def point_states(
    linkage: Linkage,
    q: Float[Array, " nq"],
    qd: Float[Array, " nv"] | None = None,
    qdd: Float[Array, " nv"] | None = None,
) -> PointStates:
    """The forward pass (module docstring): pose, body twist, body acceleration, body Jacobian and screw inertia of
    every computational point; ``qd``, ``qdd`` default to zero."""
    args = check_state("point_states", linkage, q=q, qd=qd, qdd=qdd)
    q = args["q"]
    dtype = jnp.result_type(q, linkage.gravity.dtype)
    zero = jnp.zeros(linkage.nv, dtype)
    qd, qdd = (zero if args[k] is None else args[k] for k in ("qd", "qdd"))
    n = len(linkage.links)
    ends, out = [None] * n, [None] * n
    world = (jnp.eye(4, dtype=dtype), jnp.zeros(6, dtype), jnp.zeros(6, dtype), jnp.zeros((6, linkage.nv), dtype))
    rods_joints = rod_joints(linkage, q, qd, qdd)

    def soft(jt, place, P, g, eta, etad, J):  # a rod's points from its base moving as the joint frame
        Pi = se3.Ad_inv(P)
        return _chain(jt, False, place, g @ P, Pi @ eta, Pi @ etad, Pi @ J)

    for group in link_groups(linkage, rods_joints.get):  # parents first; rods of one shape at one depth together
        args = []
        for i in group:
            link, vs = linkage.links[i], linkage.v_slice(i)
            j = rods_joints.get(i)
            frame = world if linkage.parents[i] < 0 else ends[linkage.parents[i]]
            if link.joint != "soft":
                Pi = se3.Ad_inv(P := link.placement.astype(dtype))
                joint_frame = (frame[0] @ P, *(Pi @ x for x in frame[1:]))
                ends[i] = _rigid_link(link, vs.start, q[linkage.q_slice(i)], qd[vs], qdd[vs], *joint_frame)
                out[i] = tuple(a[None] for a in ends[i])
                continue
            place = vs.start if len(group) == 1 else np.eye(linkage.nv)[vs]  # the columns of its coordinates
            jt = JointTerms(j.step, j.Ad_inv, j.coAd, j.S, j.S_qd, j.S_acc)
            args.append((jt, place, link.placement.astype(dtype), *frame))
        if args:
            for i, pts in zip(group, side_by_side(soft, args)):
                ends[i], out[i] = tuple(a[-1] for a in pts), pts
    for i in range(n):
        m = point_inertias(linkage, i, dtype)
        out[i] = (*out[i], m.inertia, m.gravity, jnp.zeros_like(out[i][1]) if m.drag is None else m.drag)
    return PointStates(*(jnp.concatenate(parts) for parts in zip(*out)))


def link_groups(linkage: Linkage, shapes: Callable[[int], Any], fewest: bool = False) -> list[list[int]]:
    """The links in groups, parents first, to run side by side (:func:`side_by_side`): links whose ``shapes(i)`` (a
    pytree; None: the link alone) have equal structures, leaf shapes and dtypes and that sit on one level of a
    schedule where each link comes after its parent: every link at its depth (as early as possible), or with
    ``fewest`` whichever of that and the latest schedule (the tree's depth less the link's subtree's height) makes
    fewer groups. The flagellated robot's six flagella share a depth; a fin-ray finger's five ribs, on hinges at five
    depths, share the last level (9 groups of its 23 links instead of 13)."""
    parents, keys = linkage.parents, []
    for i in range(len(parents)):
        tree = shapes(i)
        if tree is None:
            keys.append(i)
        else:
            leaves, structure = jax.tree.flatten(tree)
            keys.append((structure, tuple((jnp.shape(a), jnp.result_type(a)) for a in leaves)))
    depth, height = [], [0] * len(parents)
    for parent in parents:  # parents first
        depth.append(0 if parent < 0 else depth[parent] + 1)
    for i in reversed(range(len(parents))):  # children first
        if parents[i] >= 0:
            height[parents[i]] = max(height[parents[i]], height[i] + 1)
    top = max(depth)  # (the latest schedule's last level)

    def grouped(level: list[int]) -> list[list[int]]:
        groups = {}
        for i, key in enumerate(keys):
            groups.setdefault((level[i], key), []).append(i)
        return sorted(groups.values(), key=lambda g: (level[g[0]], g[0]))

    return min(grouped(depth), grouped([top - h for h in height]), key=len) if fewest else grouped(depth)


def forward_kinematics(linkage: Linkage, q: Float[Array, " nq"]) -> Float[Array, "n_points 4 4"]:
    """World poses of all computational points (:meth:`Linkage.points_of` selects a link's; its last is its end)."""
    return point_states(linkage, q).g


def speed(linkage: Linkage, eta: Float[Array, "... 6"]) -> Float[Array, "..."]:
    """The regularised speed √(‖v‖² + ε²) of the drag (:class:`~jaxse3.linkage.Fluid`), v the twists' linear part."""
    return jnp.sqrt(jnp.sum(eta[..., 3:] ** 2, axis=-1) + linkage.fluid.speed_scale.astype(eta.dtype) ** 2)


def applied_wrenches(
    loads: tuple[Float[Array, "p 6"], Float[Array, "p 6"]], g: Float[Array, "p 4 4"]
) -> tuple[Float[Array, "p 6"], Float[Array, "p 6"]]:
    """The :class:`~jaxse3.linkage.PointLoad` wrenches (local, world) of some points in their local frames, and the
    world ones' part alone: (moment, force) of the world wrench rotated by Rᵀ (eq. (53))."""
    local, world = loads
    Rt = jnp.swapaxes(g[:, :3, :3], -1, -2)
    from_world = jnp.concatenate(
        [jnp.einsum("kij,kj->ki", Rt, world[:, :3]), jnp.einsum("kij,kj->ki", Rt, world[:, 3:])], -1
    )
    return local + from_world, from_world


def _point_wrenches(linkage: Linkage, s: PointStates) -> Float[Array, "n_points 6"]:
    """𝓕_k = 𝓜_k η̇_k + ad*_{η_k} 𝓜_k η_k − 𝓜g_k Ad⁻¹_{g_k}𝓖 (16), ad*_η = −ad_ηᵀ, with 𝓜g_k the mass gravity acts
    on; in a fluid 𝓜_k includes the added mass and 𝓕_k the drag's + 𝓓_k ‖v_k‖ η_k (62) (the minus sign of (16))."""
    grav = jnp.concatenate([jnp.zeros(3, s.eta.dtype), linkage.gravity.astype(s.eta.dtype)])
    weight = jnp.einsum("kij,kj->ki", s.M_gravity, jnp.einsum("kij,j->ki", se3.Ad_inv(s.g), grav))
    momentum = jnp.einsum("kij,kj->ki", s.M, s.eta)
    F = jnp.einsum("kij,kj->ki", s.M, s.etad) - jnp.einsum("kji,kj->ki", se3.ad(s.eta), momentum) - weight
    if linkage.fluid is not None:
        F = F + s.drag * speed(linkage, s.eta)[:, None] * s.eta
    if linkage.loads:  # the applied point wrenches, on the other side of (16)
        dtype = s.g.dtype
        loads = []
        for i, link in enumerate(linkage.links):
            z = jnp.zeros((link.n_points, 6), dtype)
            loads.append(point_loads(linkage, i, dtype) or (z, z))
        F = F - applied_wrenches(tuple(jnp.concatenate(x) for x in zip(*loads)), s.g)[0]
    return F


def inverse_dynamics_and_mass(
    linkage: Linkage,
    q: Float[Array, " nq"],
    qd: Float[Array, " nv"] | None = None,
    qdd: Float[Array, " nv"] | None = None,
) -> tuple[Float[Array, " nv"], Float[Array, "nv nv"]]:
    """ID(q, q̇, q̈) = Σ_k J_kᵀ 𝓕_k + diag(armature) q̈ (seed 003 eqs. (14), (16)) and M(q) = Σ_k J_kᵀ 𝓜_k J_k +
    diag(armature) (eqs. (32), (34)) from one forward pass (module docstring); ``qd``, ``qdd`` default to zero."""
    return dynamics_of_states(linkage, point_states(linkage, q, qd, qdd), qdd)


def dynamics_of_states(
    linkage: Linkage, s: PointStates, qdd: Float[Array, " nv"] | None = None
) -> tuple[Float[Array, " nv"], Float[Array, "nv nv"]]:
    """:func:`inverse_dynamics_and_mass` from the forward pass ``s`` of :func:`point_states` at (q, q̇, q̈) (``qdd``:
    that q̈, for the armature's term; None for zero), for callers that need the point states too."""
    arm = linkage.armature.astype(s.J.dtype)
    tau = jnp.einsum("kin,ki->n", s.J, _point_wrenches(linkage, s))
    M = jnp.einsum("kin,kij,kjm->nm", s.J, s.M, s.J) + jnp.diag(arm)
    return tau if qdd is None else tau + arm * qdd, M


def inverse_dynamics_autodiff(
    linkage: Linkage, q: Float[Array, " nq"], qd: Float[Array, " nv"], qdd: Float[Array, " nv"]
) -> Float[Array, " nv"]:
    """ID(q, q̇, q̈) = Σ_k J_kᵀ 𝓕_k + diag(armature) q̈ (seed 003 eqs. (14), (16); module docstring): inertia,
    Coriolis/centrifugal terms and gravity, without the generalised forces of :func:`generalized_forces`. The value of
    :func:`jaxse3.linkage.inverse_dynamics` without its ``custom_jvp`` rule: JAX differentiates the recursion itself
    (the autodiff reference of the analytical derivatives)."""
    check_state("inverse_dynamics_autodiff", linkage, q=q, qd=qd, qdd=qdd)
    return inverse_dynamics_and_mass(linkage, q, qd, qdd)[0]


def mass_matrix(linkage: Linkage, q: Float[Array, " nq"]) -> Float[Array, "nv nv"]:
    """M(q) = Σ_k J_kᵀ 𝓜_k J_k + diag(armature) (seed 003 eqs. (32), (34))."""
    return inverse_dynamics_and_mass(linkage, q)[1]


def energy(linkage: Linkage, q: Float[Array, " nq"], qd: Float[Array, " nv"]) -> rods.Energy:
    """The linkage's mechanical energy at (q, q̇) (a :class:`jaxse3.rod.Energy`, ``.total``), in the discretisation
    the dynamics use: kinetic ½ q̇ᵀM(q)q̇ (:func:`mass_matrix`: armature and, in a fluid, added mass included); elastic
    ½ q_iᵀK_i q_i over the soft links (each rod's strain energy, as :func:`jaxse3.rod.energy`); gravitational
    −Σ_k m_k a_gᵀ c_k over the computational points (m_k the mass gravity acts on, less the buoyancy in a fluid; c_k
    the centre of mass in the world; zero at the world origin). Hence ∂(elastic + gravitational)/∂q is the negative
    of the residual at rest without inputs, and along a motion the inputs, the rods' damping and the fluid's drag do
    work on it."""
    args = check_state("energy", linkage, q=q, qd=qd)
    q, qd = args["q"], args["qd"]
    pts = point_states(linkage, q)
    M = pts.M_gravity
    mass = M[:, 3, 3]
    first_moment = jnp.stack([M[:, 2, 4], M[:, 0, 5], M[:, 1, 3]], axis=-1)  # m c from 𝓜 = [[I, m ĉ], [m ĉᵀ, m]]
    c = jnp.einsum("kij,kj->ki", pts.g[:, :3, :3], first_moment) + mass[:, None] * pts.g[:, :3, 3]  # m_k c_k (world)
    gravitational = -jnp.sum(c @ linkage.gravity.astype(c.dtype))
    elastic = jnp.zeros((), q.dtype)
    for i, link in enumerate(linkage.links):
        if link.joint == "soft":
            qi = q[linkage.q_slice(i)]
            elastic = elastic + 0.5 * qi @ link.body.stiffness @ qi
    return rods.Energy(0.5 * qd @ mass_matrix(linkage, q) @ qd, elastic, gravitational)


def generalized_forces(
    linkage: Linkage, q: Float[Array, " nq"], qd: Float[Array, " nv"], u: Float[Array, " n_inputs"]
) -> Float[Array, " nv"]:
    """τ(q, q̇, u): each rod's internal forces B(q)u − Kq − Dq̇ (seed 003 eq. (35), its tendons' tensions from u) on
    its coordinates (:func:`jaxse3.rod.generalized_forces`, with its analytical rule), each actuated joint's efforts
    from u on its degrees of freedom; zero elsewhere."""
    args = check_state("generalized_forces", linkage, q=q, qd=qd, u=u)
    q, qd, u = args["q"], args["qd"], args["u"]
    tau = jnp.zeros(linkage.nv, jnp.result_type(q, qd, u))
    for i, link in enumerate(linkage.links):
        vs, us = linkage.v_slice(i), linkage.u_slice(i)
        if link.joint == "soft":
            tau = tau.at[vs].set(rods.generalized_forces(link.body, q[linkage.q_slice(i)], qd[vs], u[us]))
        elif link.actuated:
            tau = tau.at[vs].set(u[us])
    return tau


def integrate(linkage: Linkage, q: Float[Array, " nq"], dv: Float[Array, " nv"]) -> Float[Array, " nq"]:
    """q ⊕ δ: each joint's configuration moved by its slice of the tangent vector δ (nv,) — vector addition for rods
    and 1-DoF joints, ``quat ⊗ exp(δ)`` for spherical joints, ``H exp(δ̂)`` for free joints (the right perturbation of
    :func:`jaxse3.rigid.integrate`, the convention of the analytical derivatives); exponential coordinates add."""
    args = check_state("integrate", linkage, q=q, qd=dv)
    q, dv = args["q"], args["qd"]
    parts = []
    for i, link in enumerate(linkage.links):
        qi, di = q[linkage.q_slice(i)], dv[linkage.v_slice(i)]
        parts.append(rigid.joints.integrate(link.joint, qi, di) if link.quaternion else qi + di)
    return jnp.concatenate(parts)

"""The linkage model: a tree of links, each a joint followed by a body, rigid or soft (seed 003 §5, rules 1–4).

A :class:`Link` is a joint and the body it moves:

* a **rigid** link: a joint of :mod:`jaxse3.rigid.joints` (revolute, prismatic, helical, spherical, free), a
  cylindrical or planar joint, or ``"fixed"``, and a rigid body, its spatial inertia (6, 6) about the link frame (the
  joint's child frame), angular first, ``[[I_c + m c̃c̃ᵀ, m c̃], [m c̃ᵀ, m 1]]`` (:func:`jaxse3.rigid.spatial_inertia`);
  one computational point, the link frame (rule 2: the body's inertial and gravity wrench act there);
* a **soft** link (joint ``"soft"``): a GVS rod (:class:`jaxse3.rod.Rod`) whose base is the joint frame and whose
  generalised coordinates are its strain coordinates; its computational points are the rod's (rule 1: the joint's X=1
  frame is the rod's base, X=0).

Each link hangs from its parent's **end frame** — a rigid link's frame, a soft link's tip — through a fixed
``placement`` (4, 4), the pose of its joint frame in that end frame (rule 3), or from the world (``parent=None``):
a linkage rooted on a free joint is a floating-base robot, one rooted on fixed or actuated joints has a fixed base.
Links are numbered topologically (a parent before its children) and any number of children may share a parent
(rule 4: branches).

Coordinates follow :mod:`jaxse3.rigid`: q and q̇ are the links' slices in link order; spherical joints store a unit
quaternion (w, x, y, z), free joints the position then the quaternion, their velocities are body twists of the child
frame; a soft link's slice is its rod's q. With ``coordinates="exponential"`` a spherical or free joint is instead
seed 003's joint (digest §1.1: "a rigid joint is a fictitious Cosserat rod on X ∈ [0, 1]"): the joint transform is
exp(Φq̂) with a constant basis Φ (:func:`joint_basis`), its motion subspace S(q) = T(Φq)Φ (C15, T = dexp), and
q̇ = dq/dt, so nq = nv and every driver of :mod:`jaxse3.sim` integrates it as a vector (a floating base in a
simulation). The chart is singular where the rotation angle reaches 2π (T is not invertible there); a base that
turns that far needs quaternion coordinates. Cylindrical (Φ = [(a, 0), (0, a)]) and planar (Φ = [(n, 0), (0, t₁),
(0, t₂)], n the normal) joints always use exponential coordinates.

Inputs u are the actuated rigid joints' efforts (one per degree of freedom; by default every revolute, prismatic and
helical joint is actuated) and the rods' tendon tensions, in link order.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import DTypeLike
from jaxtyping import Array, ArrayLike, Float

from jaxse3 import rigid, se3
from jaxse3.rod import Rod

__all__ = [
    "Link",
    "Linkage",
    "Fluid",
    "PointLoad",
    "PointInertias",
    "point_inertias",
    "point_loads",
    "joint_basis",
    "plane_frame",
    "checked_pose",
    "JOINTS",
    "COORDINATES",
]

#: the joint types of a link: fixed, the rigid joints of :mod:`jaxse3.rigid.joints`, cylindrical and planar joints
#: (exponential coordinates), and soft (a rod's strains)
JOINTS = ("fixed", *rigid.joints.JOINT_TYPES, "cylindrical", "planar", "soft")
#: how spherical and free joints store their configuration: a unit quaternion (:mod:`jaxse3.rigid.joints`, nq ≠ nv)
#: or exponential coordinates (seed 003's joints, nq = nv)
COORDINATES = ("quaternion", "exponential")
_ONE_DOF = ("revolute", "prismatic", "helical")
_EXPONENTIAL_NV = {"spherical": 3, "free": 6, "cylindrical": 2, "planar": 3}


def _concrete(x) -> np.ndarray | None:
    try:
        return np.asarray(x, dtype=float)
    except Exception:  # a tracer (a model built under vmap): not checked
        return None


def round_off(x: ArrayLike) -> float:
    """The slack of the model checks on ``x`` (an array): 1e−9, or 64 units of round-off of its dtype where that is
    coarser (float32: 7.6e−6, so a rotation built in float32 passes as one)."""
    return max(1e-9, 64 * float(jnp.finfo(jnp.result_type(x)).eps))


class Fluid(eqx.Module):
    """A quiescent fluid around a linkage (seed 003 §6.3, eqs. (62)–(66)): buoyancy, added mass and drag–lift.

    Rods are treated as circular cylinders of their local radius r (``Rod.contact_radius``), per unit length: buoyancy
    ρ_w π r² (against gravity, at the centreline), added mass C_a ρ_w π r² across the axis (potential flow; none along
    it, no added rotational inertia), and the resistive drag of Morison et al. (1950) in the form of Armanini et al.
    (2021), 𝓕_D = −𝓓‖v‖η with 𝓓 = ½ ρ_w diag(0, 0, 0, π C_f d, C_D d, C_D d) (d = 2r, local x along the rod), ‖v‖
    the point's speed. The paper gives no coefficients; the defaults are textbook values for a circular cylinder at
    moderate Reynolds numbers: C_D = 1.2 (cross-flow drag), C_f = 0.01 (skin friction), C_a = 1 (added mass). Rigid
    links carry their own ``volume``, ``drag`` and ``added_mass`` (:meth:`Link.rigid`).

    ‖v‖ is regularised as √(‖v‖² + ε²) with ε = ``speed_scale`` so that values and derivatives are finite at rest
    (every run starts there); the drag then dissipates, −ηᵀ𝓓√(‖v‖² + ε²)η ≤ 0.
    """

    density: Float[Array, ""]
    drag_normal: Float[Array, ""]
    drag_tangential: Float[Array, ""]
    added_mass: Float[Array, ""]
    speed_scale: Float[Array, ""]

    def __init__(
        self,
        density: float = 1000.0,
        drag_normal: float = 1.2,
        drag_tangential: float = 0.01,
        added_mass: float = 1.0,
        speed_scale: float = 1e-3,
    ):
        values = dict(
            density=density,
            drag_normal=drag_normal,
            drag_tangential=drag_tangential,
            added_mass=added_mass,
            speed_scale=speed_scale,
        )
        for name, v in values.items():
            c = _concrete(v)
            if c is not None and (c.shape != () or not np.isfinite(c) or c < 0 or (name == "speed_scale" and c <= 0)):
                want = "positive" if name == "speed_scale" else "non-negative"
                raise ValueError(f"Fluid: {name!r} must be a finite {want} scalar, got {v!r}")
            setattr(self, name, jnp.asarray(v, dtype=float))


class PointLoad(eqx.Module):
    """A constant physical wrench (moment, force) [N·m, N] on a computational point of a link (seed 003 §6.1):
    ``frame="local"``, a follower wrench in the point's frame; ``frame="world"``, world-aligned components applied at
    the point (eq. (53)). ``point`` indexes the link's points (default −1: its end — a rigid link's frame, a rod's tip).

    Args:
        link: the name of the link.
        wrench: (6,) moment then force.
        frame: ``"local"`` or ``"world"``.
        point: the index of the point among the link's (:meth:`Linkage.points_of`).
    """

    wrench: Float[Array, " 6"]
    link: str = eqx.field(static=True)
    frame: str = eqx.field(static=True)
    point: int = eqx.field(static=True)

    def __init__(self, link: str, wrench: Float[ArrayLike, " 6"], frame: str = "world", point: int = -1):
        if frame not in ("local", "world"):
            raise ValueError(f"PointLoad on {link!r}: 'frame' must be 'local' or 'world', got {frame!r}")
        w = jnp.asarray(wrench, dtype=float)
        c = _concrete(w)
        if w.shape != (6,) or (c is not None and not np.isfinite(c).all()):
            raise ValueError(
                f"PointLoad on {link!r}: 'wrench' must be 6 finite numbers (moment, force), got {wrench!r}"
            )
        if isinstance(point, bool) or not isinstance(point, int | np.integer):
            raise ValueError(f"PointLoad on {link!r}: 'point' must be an integer index, got {point!r}")
        self.wrench, self.link, self.frame, self.point = w, link, frame, int(point)


class Link(eqx.Module):
    """One link: a joint and the body it moves (see the module docstring). Build with :meth:`rigid` or :meth:`soft`.

    Attributes:
        name: unique within the linkage.
        parent: the name of the link whose end frame this link hangs from, or None for the world.
        joint: one of :data:`JOINTS`.
        actuated: whether the joint's degrees of freedom take inputs (rigid joints only).
        coordinates: ``"exponential"`` for joints configured by exp(Φq̂) (spherical and free joints on request,
            cylindrical and planar joints always), ``"quaternion"`` otherwise (:data:`COORDINATES`).
        placement: pose (4, 4) of the joint frame in the parent's end frame (in the world for a root).
        axis: (6,) screw axis of a 1-DoF joint in the joint frame, angular first: (a, 0) revolute, (0, a) prismatic,
            (a, h a) helical; (a, 0) the axis of a cylindrical joint, (n, 0) the normal of a planar joint; zeros
            otherwise.
        body: the rigid body's spatial inertia (6, 6) about the link frame, or the rod of a soft link.
        volume: the rigid body's displaced volume (m³; buoyancy in a :class:`Fluid`, at its centre of mass).
        drag: (6,) the rigid body's drag coefficients 𝓓 (diagonal, link frame) in a :class:`Fluid`.
        added_mass: (6, 6) the rigid body's added mass about the link frame in a :class:`Fluid`.
    """

    name: str = eqx.field(static=True)
    parent: str | None = eqx.field(static=True)
    joint: str = eqx.field(static=True)
    actuated: bool = eqx.field(static=True)
    coordinates: str = eqx.field(static=True)
    placement: Float[Array, "4 4"]
    axis: Float[Array, " 6"]
    body: Float[Array, "6 6"] | Rod
    volume: Float[Array, ""]
    drag: Float[Array, " 6"]
    added_mass: Float[Array, "6 6"]

    @classmethod
    def rigid(
        cls,
        name: str,
        parent: str | None,
        joint: str,
        inertia: Float[ArrayLike, "6 6"],
        placement: Float[ArrayLike, "4 4"] | None = None,
        axis: Float[ArrayLike, " 6"] | None = None,
        actuated: bool | None = None,
        volume: float = 0.0,
        drag: Float[ArrayLike, " 6"] | None = None,
        added_mass: Float[ArrayLike, "6 6"] | None = None,
        coordinates: str = "quaternion",
    ) -> Link:
        """A rigid link: ``joint`` one of :data:`JOINTS` but ``"soft"``; ``inertia`` (6, 6) about the link frame
        (:func:`jaxse3.rigid.spatial_inertia`); ``axis`` (6,) for 1-DoF, cylindrical and planar joints (required);
        ``actuated`` defaults to True for 1-DoF joints and False otherwise (cylindrical joints may be actuated too:
        efforts along and about their axis); ``volume`` (≥ 0), ``drag`` (6,) (≥ 0) and ``added_mass`` (6, 6)
        (symmetric positive semi-definite) act in a :class:`Fluid` only (default none); ``coordinates`` of a
        spherical or free joint, one of :data:`COORDINATES` (module docstring)."""
        if joint not in JOINTS or joint == "soft":
            raise ValueError(f"Link {name!r}: joint must be one of {JOINTS[:-1]} for a rigid link, got {joint!r}")
        if coordinates not in COORDINATES:
            raise ValueError(f"Link {name!r}: 'coordinates' must be one of {COORDINATES}, got {coordinates!r}")
        if joint in (*_ONE_DOF, "cylindrical", "planar") and axis is None:
            raise ValueError(f"Link {name!r}: a {joint} joint needs its 'axis' (6,)")
        if actuated and joint not in (*_ONE_DOF, "cylindrical"):
            raise ValueError(f"Link {name!r}: a {joint} joint cannot be actuated")
        exponential = joint in ("cylindrical", "planar") or (
            joint in ("spherical", "free") and coordinates == "exponential"
        )
        inertia = jnp.asarray(inertia, dtype=float)
        if inertia.shape != (6, 6):
            raise ValueError(f"Link {name!r}: 'inertia' must have shape (6, 6), got {inertia.shape}")
        I = _concrete(inertia)
        if I is not None:
            scale = max(np.abs(I).max(), np.finfo(float).tiny)
            tol = round_off(inertia) * scale
            if np.abs(I - I.T).max() > tol or np.linalg.eigvalsh(I).min() < -tol:
                raise ValueError(
                    f"Link {name!r}: 'inertia' must be a symmetric positive semi-definite spatial inertia (build it "
                    f"with jaxse3.rigid.spatial_inertia)"
                )
        axis = jnp.zeros(6, inertia.dtype) if axis is None else jnp.asarray(axis, dtype=inertia.dtype)
        if axis.shape != (6,):
            raise ValueError(f"Link {name!r}: 'axis' must have shape (6,), got {axis.shape}")
        a = _concrete(axis)
        if (
            joint in ("cylindrical", "planar")
            and a is not None
            and (abs(np.linalg.norm(a[:3]) - 1) > round_off(axis) or a[3:].any())
        ):
            raise ValueError(f"Link {name!r}: the 'axis' of a {joint} joint must be (a, 0) with a unit vector a")
        actuated = joint in _ONE_DOF if actuated is None else bool(actuated)
        drag = jnp.zeros(6, inertia.dtype) if drag is None else jnp.asarray(drag, dtype=inertia.dtype)
        added = jnp.zeros((6, 6), inertia.dtype) if added_mass is None else jnp.asarray(added_mass, inertia.dtype)
        for arg, value, shape in (("volume", volume, ()), ("drag", drag, (6,)), ("added_mass", added, (6, 6))):
            c = _concrete(value)
            if jnp.shape(value) != shape:
                raise ValueError(f"Link {name!r}: {arg!r} must have shape {shape}, got {jnp.shape(value)}")
            if c is not None and (not np.isfinite(c).all() or (arg != "added_mass" and (c < 0).any())):
                raise ValueError(f"Link {name!r}: {arg!r} must be finite and non-negative")
            if c is not None and arg == "added_mass" and np.linalg.eigvalsh(0.5 * (c + c.T)).min() < -1e-12:
                raise ValueError(f"Link {name!r}: 'added_mass' must be positive semi-definite")
        volume = jnp.asarray(volume, dtype=inertia.dtype)
        kind = "exponential" if exponential else "quaternion"
        return cls(name, parent, joint, actuated, kind, _placement(name, placement), axis, inertia, volume, drag, added)

    @classmethod
    def soft(cls, name: str, parent: str | None, rod: Rod, placement: Float[ArrayLike, "4 4"] | None = None) -> Link:
        """A soft link: ``rod``'s base at ``placement`` (4, 4) in the parent's end frame; the default is the rod's own
        ``base_pose``, which the linkage otherwise ignores (as it ignores the rod's gravity: the linkage has one)."""
        if not isinstance(rod, Rod):
            raise TypeError(f"Link {name!r}: 'rod' must be a jaxse3.rod.Rod, got {type(rod).__name__}")
        place = rod.base_pose if placement is None else placement
        z = jnp.zeros(6, rod.stiffness.dtype)
        zeros = jnp.zeros((6, 6), z.dtype)
        return cls(name, parent, "soft", False, "quaternion", _placement(name, place), z, rod, z[0], z, zeros)

    @property
    def exponential(self) -> bool:
        """Whether the joint is configured by exp(Φq̂) with several coordinates (module docstring)."""
        return self.coordinates == "exponential"

    @property
    def quaternion(self) -> bool:
        """Whether the joint stores a quaternion (a spherical or free joint in :mod:`jaxse3.rigid`'s coordinates)."""
        return self.joint in ("spherical", "free") and not self.exponential

    @property
    def nq(self) -> int:
        """Size of the link's slice of q."""
        if self.joint == "soft":
            return self.body.n_dof
        return self.nv if self.exponential else rigid.joints.NQ.get(self.joint, 0)

    @property
    def nv(self) -> int:
        """Size of the link's slice of q̇ (and of τ)."""
        if self.joint == "soft":
            return self.body.n_dof
        return _EXPONENTIAL_NV[self.joint] if self.exponential else rigid.joints.NV.get(self.joint, 0)

    @property
    def n_inputs(self) -> int:
        """Number of the link's inputs: a rod's tendons, an actuated joint's degrees of freedom."""
        if self.joint == "soft":
            return self.body.n_tendons
        return self.nv if self.actuated else 0

    @property
    def n_points(self) -> int:
        """Number of the link's computational points: the rod's, or one (the link frame)."""
        return self.body.n_points if self.joint == "soft" else 1


def joint_basis(link: Link) -> Float[Array, "6 k"]:
    """Φ (6, nv) of a joint in exponential coordinates (module docstring): [I₃; 0] spherical, I₆ free, [(a, 0), (0, a)]
    cylindrical, [(n, 0), (0, t₁), (0, t₂)] planar with (t₁, t₂, n) a right-handed orthonormal frame."""
    eye = jnp.eye(6, dtype=link.axis.dtype)
    a = link.axis[:3]
    z3 = jnp.zeros(3, a.dtype)
    if link.joint == "spherical":
        return eye[:, :3]
    if link.joint == "free":
        return eye
    if link.joint == "cylindrical":
        return jnp.stack([jnp.concatenate([a, z3]), jnp.concatenate([z3, a])], axis=1)
    if link.joint == "planar":
        t1, t2 = plane_frame(a)
        return jnp.stack([jnp.concatenate([a, z3]), jnp.concatenate([z3, t1]), jnp.concatenate([z3, t2])], axis=1)
    raise ValueError(f"joint_basis: link {link.name!r} has a {link.joint} joint, not one in exponential coordinates")


def plane_frame(n: Float[Array, " 3"]) -> tuple[Float[Array, " 3"], Float[Array, " 3"]]:
    """(t₁, t₂) with (t₁, t₂, n) a right-handed orthonormal frame, for a unit normal n (t₁ from the coordinate axis
    least aligned with n): the in-plane directions of planar joints and planar closures."""
    eye = jnp.eye(3, dtype=n.dtype)
    e = jnp.where(jnp.abs(n[0]) < 0.9, eye[0], eye[1])
    t1 = e - (e @ n) * n
    t1 = t1 / jnp.linalg.norm(t1)
    return t1, jnp.cross(n, t1)


def checked_pose(owner: str, field: str, pose: Float[ArrayLike, "4 4"] | None) -> Float[Array, "4 4"]:
    """``pose`` as a (4, 4) array (identity for None), checked where concrete: finite, [[R, p], [0, 1]] with R a
    rotation; a ``ValueError`` names ``owner`` and ``field`` otherwise."""
    P = jnp.eye(4) if pose is None else jnp.asarray(pose, dtype=float)
    if P.shape != (4, 4):
        raise ValueError(f"{owner}: {field!r} must be a pose of shape (4, 4), got {P.shape}")
    c = _concrete(P)
    if c is not None and (
        not np.isfinite(c).all()
        or np.abs(c[:3, :3].T @ c[:3, :3] - np.eye(3)).max() > round_off(P)
        or np.abs(c[3] - (0, 0, 0, 1)).max() > 0
    ):
        raise ValueError(f"{owner}: {field!r} must be a pose [[R, p], [0, 1]], finite, with R a rotation")
    return P


def _placement(name: str, placement) -> Float[Array, "4 4"]:
    return checked_pose(f"Link {name!r}", "placement", placement)


def _offsets(sizes: Sequence[int]) -> tuple[int, ...]:
    return tuple(int(x) for x in np.cumsum([0, *sizes[:-1]])) if sizes else ()


class Linkage(eqx.Module):
    """A tree of rigid and soft links (seed 003 §5). See the module docstring for frames and coordinates.

    Args:
        links: the links, each parent before its children (:class:`Link`).
        gravity: world gravitational acceleration (3,), default (0, 0, −9.81).
        armature: (nv,) reflected rotor inertias added to M's diagonal (:class:`jaxse3.rigid.Model`'s); zero by
            default, and zero on the rods' coordinates.
        fluid: the :class:`Fluid` the linkage moves in, or None (vacuum, the default).
        loads: constant point wrenches (:class:`PointLoad`) on the links' points; statics' load continuation scales
            them with gravity (:meth:`scaled`).
    """

    links: tuple[Link, ...]
    gravity: Float[Array, " 3"]
    armature: Float[Array, " nv"]
    fluid: Fluid | None
    loads: tuple[PointLoad, ...]
    parents: tuple[int, ...] = eqx.field(static=True)
    nq: int = eqx.field(static=True)
    nv: int = eqx.field(static=True)
    n_inputs: int = eqx.field(static=True)
    q_index: tuple[int, ...] = eqx.field(static=True)
    v_index: tuple[int, ...] = eqx.field(static=True)
    u_index: tuple[int, ...] = eqx.field(static=True)
    point_index: tuple[int, ...] = eqx.field(static=True)

    def __init__(
        self,
        links: Sequence[Link],
        gravity: Float[ArrayLike, " 3"] = (0.0, 0.0, -9.81),
        armature: Float[ArrayLike, " nv"] | None = None,
        fluid: Fluid | None = None,
        loads: Sequence[PointLoad] = (),
    ):
        links = tuple(links)
        if fluid is not None and not isinstance(fluid, Fluid):
            raise TypeError(f"Linkage: 'fluid' must be a Fluid or None, got {type(fluid).__name__}")
        self.fluid = fluid
        if not links:
            raise ValueError("Linkage: 'links' is empty")
        names: dict[str, int] = {}
        parents = []
        for i, link in enumerate(links):
            if not isinstance(link, Link):
                raise TypeError(f"Linkage: links[{i}] must be a Link, got {type(link).__name__}")
            if link.name in names:
                raise ValueError(f"Linkage: two links are named {link.name!r}")
            if link.parent is not None and link.parent not in names:
                later = any(other.name == link.parent for other in links[i + 1 :])
                raise ValueError(
                    f"Linkage: link {link.name!r} has parent {link.parent!r}, "
                    + ("which comes after it (order the links parents first)" if later else "which is not a link")
                )
            parents.append(-1 if link.parent is None else names[link.parent])
            names[link.name] = i
        self.links, self.parents = links, tuple(parents)
        self.nq, self.nv = sum(link.nq for link in links), sum(link.nv for link in links)
        self.n_inputs = sum(link.n_inputs for link in links)
        self.q_index = _offsets([link.nq for link in links])
        self.v_index = _offsets([link.nv for link in links])
        self.u_index = _offsets([link.n_inputs for link in links])
        self.point_index = _offsets([link.n_points for link in links])
        self.gravity = jnp.asarray(gravity, dtype=float)
        if self.gravity.shape != (3,):
            raise ValueError(f"Linkage: 'gravity' must have shape (3,), got {self.gravity.shape}")
        self.armature = jnp.zeros(self.nv) if armature is None else jnp.asarray(armature, dtype=float)
        if self.armature.shape != (self.nv,):
            raise ValueError(f"Linkage: 'armature' must have shape (nv,) = ({self.nv},), got {self.armature.shape}")
        a = _concrete(self.armature)
        if a is not None and (a < 0).any():
            raise ValueError("Linkage: 'armature' must be non-negative")
        self.loads = tuple(loads)
        for load in self.loads:
            if not isinstance(load, PointLoad):
                raise TypeError(f"Linkage: every load must be a PointLoad, got {type(load).__name__}")
            if load.link not in names:
                raise ValueError(f"Linkage: a PointLoad names the link {load.link!r}, which is not a link")
            n = links[names[load.link]].n_points
            if not -n <= load.point < n:
                raise ValueError(f"Linkage: a PointLoad on {load.link!r} names point {load.point}; the link has {n}")

    @property
    def names(self) -> tuple[str, ...]:
        """The links' names, in order."""
        return tuple(link.name for link in self.links)

    @property
    def n_points(self) -> int:
        """Number of computational points of all links."""
        return sum(link.n_points for link in self.links)

    @property
    def edges(self) -> tuple[tuple[int, int], ...]:
        """The pairs of point indices (into the arrays of all points) that draw the linkage: consecutive points of each
        link, and each child's first point joined to its parent's end (the fixed placement between them)."""
        edges = []
        for i, link in enumerate(self.links):
            first = self.point_index[i]
            if self.parents[i] >= 0:
                edges.append((self.point_index[self.parents[i]] + self.links[self.parents[i]].n_points - 1, first))
            edges.extend((first + k, first + k + 1) for k in range(link.n_points - 1))
        return tuple(edges)

    def inertia_boxes(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Boxes that draw the rigid bodies: each massive rigid link's box of equal mass and inertia (the equivalent
        inertia box, as MuJoCo and Pinocchio show bodies without geometry), centred at its centre of mass along its
        principal axes. From the spatial inertia [[I_o, m c̃], [m c̃ᵀ, m 1]]: I_c = I_o − m c̃c̃ᵀ = R diag(λ) Rᵀ, and the
        box's sides a_i = √(6(λ_j + λ_k − λ_i)/m).

        Returns ``(points, placements, half_extents)``: the point index of each body's link frame (n_b,), the box's
        pose in that frame (n_b, 4, 4) and its half sides (n_b, 3) (zero where a body is a rod or a point)."""
        points, placements, halves = [], [], []
        for i, link in enumerate(self.links):
            if link.joint == "soft":
                continue
            inertia = np.asarray(link.body, dtype=float)
            m = inertia[3, 3]
            if m <= 0:
                continue
            C = inertia[:3, 3:] / m
            c = np.array([C[2, 1], C[0, 2], C[1, 0]])
            lam, R = np.linalg.eigh(inertia[:3, :3] - m * C @ C.T)
            if np.linalg.det(R) < 0:
                R[:, 0] = -R[:, 0]
            sides = np.sqrt(np.maximum(6 * (lam.sum() - 2 * lam) / m, 0.0))
            place = np.eye(4)
            place[:3, :3], place[:3, 3] = R, c
            points.append(self.point_index[i]), placements.append(place), halves.append(sides / 2)
        return np.asarray(points, dtype=int), np.reshape(placements, (-1, 4, 4)), np.reshape(halves, (-1, 3))

    def index(self, name: str) -> int:
        """The position of the link ``name``."""
        try:
            return self.names.index(name)
        except ValueError:
            raise ValueError(f"Linkage: no link named {name!r}; the links are {self.names}") from None

    def q_slice(self, i: int) -> slice:
        """Slice of link i's configuration in q."""
        return slice(self.q_index[i], self.q_index[i] + self.links[i].nq)

    def v_slice(self, i: int) -> slice:
        """Slice of link i's velocity in q̇ (and of its generalised forces in τ)."""
        return slice(self.v_index[i], self.v_index[i] + self.links[i].nv)

    def u_slice(self, i: int) -> slice:
        """Slice of link i's inputs in u."""
        return slice(self.u_index[i], self.u_index[i] + self.links[i].n_inputs)

    def points_of(self, name: str) -> slice:
        """Slice of the link ``name``'s computational points in the arrays of all points (its last is its end)."""
        i = self.index(name)
        return slice(self.point_index[i], self.point_index[i] + self.links[i].n_points)

    def attach(self, link: Link) -> Linkage:
        """A copy with ``link`` added last (e.g. a rod on a named frame of a robot from URDF)."""
        armature = jnp.concatenate([self.armature, jnp.zeros(link.nv)])
        return Linkage((*self.links, link), self.gravity, armature, self.fluid, self.loads)

    def scaled(self, factor: Float[ArrayLike, ""]) -> Linkage:
        """A copy with gravity and the point loads multiplied by ``factor`` (statics' load continuation)."""
        out = eqx.tree_at(lambda m: m.gravity, self, factor * self.gravity)
        if not self.loads:
            return out
        return eqx.tree_at(lambda m: [load.wrench for load in m.loads], out, [factor * x.wrench for x in self.loads])

    @classmethod
    def from_rigid(cls, model: rigid.Model) -> Linkage:
        """The linkage of a :class:`jaxse3.rigid.Model` (e.g. :func:`jaxse3.rigid.from_urdf`): one rigid link per
        body, with the model's joint placements, axes, inertias, gravity and armature; 1-DoF joints actuated."""
        links = [
            Link.rigid(
                name,
                None if p < 0 else model.names[p],
                jtype,
                model.inertias[i],
                model.joint_placements[i],
                model.joint_axes[i],
            )
            for i, (name, p, jtype) in enumerate(zip(model.names, model.parents, model.joint_types))
        ]
        return cls(links, model.gravity, model.armature)

    @property
    def rigid_obstacle(self) -> str | None:
        """Why :meth:`to_rigid` cannot express this linkage (the first link or field that prevents it), or None when
        it can: every link rigid with a joint of :mod:`jaxse3.rigid.joints` in its own coordinates (or fixed), at least
        one that moves, no fluid and no point loads."""
        for link in self.links:
            if link.joint == "soft":
                return f"link {link.name!r} is soft"
            if link.exponential or link.joint not in ("fixed", *rigid.joints.JOINT_TYPES):
                return f"link {link.name!r} has a {link.joint} joint in {link.coordinates} coordinates"
        if self.nv == 0:
            return "no link moves"
        if self.fluid is not None:
            return "it moves in a fluid"
        if self.loads:
            return "it carries point loads"
        return None

    def to_rigid(self) -> rigid.Model:
        """The :class:`jaxse3.rigid.Model` of a linkage of rigid links, the inverse of :meth:`from_rigid`, with the same
        q, q̇ and τ layout, gravity and armature. A fixed link is merged into the body it hangs from (its inertia moved
        to that body's frame, 𝓜 ← Ad⁻¹_Pᵀ 𝓜 Ad⁻¹_P with P its pose there; its children's placements composed with P),
        or into the world for a fixed root. Raises ``ValueError`` saying what prevents it (:attr:`rigid_obstacle`)."""
        obstacle = self.rigid_obstacle
        if obstacle is not None:
            raise ValueError(f"Linkage.to_rigid: not a rigid tree of jaxse3.rigid's joints: {obstacle}")
        host: list[int] = []  # each link's body in the model (-1: the world)
        pose: list[Array] = []  # the pose of each link's frame in its host's frame
        parents, types, names, placements, axes, inertias = [], [], [], [], [], []
        for link, p in zip(self.links, self.parents):
            above, P = (-1, link.placement) if p < 0 else (host[p], pose[p] @ link.placement)
            if link.joint == "fixed":
                host.append(above)
                pose.append(P)
                if above >= 0:
                    Ai = se3.Ad_inv(P)
                    inertias[above] = inertias[above] + Ai.T @ link.body @ Ai
                continue
            host.append(len(names))
            pose.append(jnp.eye(4, dtype=P.dtype))
            parents.append(above)
            types.append(link.joint)
            names.append(link.name)
            placements.append(P)
            axes.append(link.axis)
            inertias.append(link.body)
        return rigid.Model(
            parents,
            types,
            jnp.stack(placements),
            jnp.stack(axes),
            jnp.stack(inertias),
            self.gravity,
            names,
            self.armature,
        )

    @classmethod
    def from_rod(cls, rod: Rod, name: str = "rod") -> Linkage:
        """The one-link linkage of a rod on a fixed base (its ``base_pose``), with the rod's gravity."""
        return cls([Link.soft(name, None, rod)], rod.gravity)


class PointInertias(NamedTuple):
    """What a link's computational points carry (leading axis: its points): the screw inertia the motion sees (body
    and added mass), the mass that gravity and buoyancy act on, and the drag coefficients."""

    inertia: Float[Array, "p 6 6"]  # 𝓜_k + 𝓜_Ak
    gravity: Float[Array, "p 6 6"]  # (1 − ρ_w V_k/m_k) 𝓜_k: the weight minus the buoyancy, at the centre of mass
    drag: Float[Array, "p 6"] | None  # diag 𝓓_k; None outside a fluid


def point_loads(linkage: Linkage, i: int, dtype: DTypeLike) -> tuple[Float[Array, "p 6"], Float[Array, "p 6"]] | None:
    """The :class:`PointLoad` wrenches on link i's points, (local, world) each (n_points, 6), or None without any."""
    mine = [load for load in linkage.loads if load.link == linkage.links[i].name]
    if not mine:
        return None
    n = linkage.links[i].n_points
    out = {"local": jnp.zeros((n, 6), dtype), "world": jnp.zeros((n, 6), dtype)}
    for load in mine:
        out[load.frame] = out[load.frame].at[load.point].add(load.wrench.astype(dtype))
    return out["local"], out["world"]


def point_inertias(linkage: Linkage, i: int, dtype: DTypeLike) -> PointInertias:
    """The :class:`PointInertias` of link i's computational points (one for a rigid link: its frame)."""
    link, fluid = linkage.links[i], linkage.fluid
    if link.joint == "soft":
        M = jax.vmap(jnp.diag)(link.body.inertia.astype(dtype))
    else:
        M = link.body.astype(dtype)[None]
    if fluid is None:
        return PointInertias(M, M, None)
    rho = fluid.density.astype(dtype)
    if link.joint == "soft":
        rod = link.body
        r, w = rod.contact_radius.astype(dtype), rod.weights.astype(dtype)
        area = jnp.pi * r**2
        mass = M[:, 3, 3]
        lift = jnp.where(mass > 0, rho * w * area / jnp.where(mass > 0, mass, 1.0), 0.0)
        across = fluid.added_mass.astype(dtype) * rho * area * w
        added = jax.vmap(jnp.diag)(jnp.stack([0 * w, 0 * w, 0 * w, 0 * w, across, across], axis=-1))
        d = 0.5 * rho * 2 * r * w
        drag = jnp.stack([0 * w, 0 * w, 0 * w, jnp.pi * fluid.drag_tangential * d, *(2 * [fluid.drag_normal * d])], -1)
        return PointInertias(M + added, (1.0 - lift)[:, None, None] * M, drag)
    mass = M[0, 3, 3]
    lift = jnp.where(mass > 0, rho * link.volume / jnp.where(mass > 0, mass, 1.0), 0.0)
    return PointInertias(M + link.added_mass.astype(dtype)[None], (1.0 - lift) * M, link.drag.astype(dtype)[None])

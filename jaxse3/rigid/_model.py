"""The rigid multibody model: a kinematic tree of bodies connected by joints (seed 002 digest §1.2).

``Model`` is an ``equinox.Module``: the topology and sizes are static fields (one ``jit`` per topology), the
placements, joint axes, inertias and gravity are array leaves (``vmap``-able over parameters).

Conventions (docs/conventions.md, Featherstone):

* bodies are numbered topologically, ``parents[i] < i``, ``-1`` for a body attached to the world; joint i connects
  body i to its parent and body i's frame is the joint's child frame;
* spatial vectors are angular first: twists (ω, v), wrenches (moment, force);
* ``joint_placements[i]`` is the pose (4×4) of joint i's parent-side frame in the parent body's frame (``X_tree``);
  the child frame then moves by the joint transform of :mod:`jaxse3.rigid.joints`;
* ``inertias[i]`` is body i's spatial inertia in its own frame, ``[[I_c + m c̃c̃ᵀ, m c̃], [m c̃ᵀ, m 1]]``;
* ``armature`` (nv,) is the reflected rotor inertia of each degree of freedom (``I_rotor · gear_ratio²``, Pinocchio's
  ``model.armature``): it adds ``diag(armature)`` to the mass matrix and ``armature · q̈`` to the joint forces;
* q and v are the concatenation of the joint slices in body order (``q_index``, ``v_index``); spherical joints store
  a unit quaternion (w, x, y, z), free joints the position (3) then a unit quaternion (w, x, y, z); their velocities
  are body angular velocities / body twists (ω, v) in the child frame (see :mod:`jaxse3.rigid.joints`).

The trace-time checks of states that every public function runs are here too (:func:`check_vector`,
:func:`check_state`, :func:`check_quaternions`); the index tables of the tree are in :mod:`jaxse3.rigid._topology`.
"""

from __future__ import annotations

from collections.abc import Sequence

import equinox as eqx
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Float

from jaxse3.rigid import joints as _joints
from jaxse3.rigid._spatial import skew

__all__ = ["Model", "spatial_inertia", "check_vector", "check_state", "check_quaternions"]


class Model(eqx.Module):
    """A kinematic tree with rigid bodies and revolute/prismatic/helical/spherical/free joints (fixed ones merged).

    Build it with :class:`jaxse3.rigid.ModelBuilder`, :func:`jaxse3.rigid.from_urdf` or
    :func:`jaxse3.rigid.auto_tree`; the constructor only checks consistency.
    """

    parents: tuple[int, ...] = eqx.field(static=True)
    joint_types: tuple[str, ...] = eqx.field(static=True)
    nq: int = eqx.field(static=True)
    nv: int = eqx.field(static=True)
    q_index: tuple[int, ...] = eqx.field(static=True)
    v_index: tuple[int, ...] = eqx.field(static=True)
    names: tuple[str, ...] = eqx.field(static=True)
    joint_placements: Array  # (nb, 4, 4)
    joint_axes: Array  # (nb, 6); (a, 0) revolute, (0, a) prismatic, (a, h a) helical; unused for multi-DoF joints
    inertias: Array  # (nb, 6, 6)
    gravity: Array  # (3,)
    armature: Array  # (nv,) reflected rotor inertias: M(q) + diag(armature)

    def __init__(
        self,
        parents: Sequence[int],
        joint_types: Sequence[str],
        joint_placements: Float[ArrayLike, "... nb 4 4"],
        joint_axes: Float[ArrayLike, "... nb 6"],
        inertias: Float[ArrayLike, "... nb 6 6"],
        gravity: Float[ArrayLike, "... 3"] = (0.0, 0.0, -9.81),
        names: Sequence[str] | None = None,
        armature: Float[ArrayLike, "... nv"] | None = None,
    ):
        parents, joint_types = tuple(int(p) for p in parents), tuple(str(t) for t in joint_types)
        nb = len(parents)
        if len(joint_types) != nb:
            raise ValueError(f"Model: {len(joint_types)} joint types for {nb} bodies")
        for i, (p, t) in enumerate(zip(parents, joint_types)):
            if not -1 <= p < i:
                raise ValueError(f"Model: parents[{i}] = {p} breaks the topological order (need -1 <= parent < {i})")
            if t not in _joints.JOINT_TYPES:
                raise ValueError(f"Model: joint {i} has unknown type {t!r}; expected one of {_joints.JOINT_TYPES}")
        self.parents, self.joint_types = parents, joint_types
        self.names = tuple(names) if names is not None else tuple(f"joint{i}" for i in range(nb))
        nqs, nvs = [_joints.NQ[t] for t in joint_types], [_joints.NV[t] for t in joint_types]
        self.q_index, self.v_index = (
            tuple(int(x) for x in np.cumsum([0] + nqs[:-1])),
            tuple(int(x) for x in np.cumsum([0] + nvs[:-1])),
        )
        self.nq, self.nv = int(sum(nqs)), int(sum(nvs))
        self.joint_placements = jnp.asarray(joint_placements)
        self.joint_axes = jnp.asarray(joint_axes)
        self.inertias = jnp.asarray(inertias)
        self.gravity = jnp.asarray(gravity, dtype=self.inertias.dtype)
        self.armature = jnp.zeros(self.nv, self.inertias.dtype) if armature is None else jnp.asarray(armature)
        for name, arr, shape in (
            ("joint_placements", self.joint_placements, (nb, 4, 4)),
            ("joint_axes", self.joint_axes, (nb, 6)),
            ("inertias", self.inertias, (nb, 6, 6)),
            ("gravity", self.gravity, (3,)),
            ("armature", self.armature, (self.nv,)),
        ):
            if arr.shape[-len(shape) :] != shape:
                raise ValueError(f"Model: {name} must have shape {shape}, got {arr.shape}")
        _check_inertias(self.inertias, self.names)
        _check_armature(self.armature)

    def with_armature(self, armature: Float[ArrayLike, " nv"]) -> Model:
        """A copy with the reflected rotor inertias ``armature`` (nv,) (non-negative; Pinocchio's
        ``model.armature``, ``I_rotor · gear_ratio²`` per degree of freedom)."""
        armature = jnp.asarray(armature, dtype=self.inertias.dtype)
        if armature.shape != (self.nv,):
            raise ValueError(
                f"Model.with_armature: armature must have shape (nv,) = ({self.nv},), got {armature.shape}"
            )
        _check_armature(armature)
        return eqx.tree_at(lambda m: m.armature, self, armature)

    @property
    def nb(self) -> int:
        """Number of (movable) bodies = number of joints."""
        return len(self.parents)

    def q_slice(self, i: int) -> slice:
        """Slice of joint i's configuration in q."""
        return slice(self.q_index[i], self.q_index[i] + _joints.NQ[self.joint_types[i]])

    def v_slice(self, i: int) -> slice:
        """Slice of joint i's velocity in v (and of its generalised force in τ)."""
        return slice(self.v_index[i], self.v_index[i] + _joints.NV[self.joint_types[i]])

    def ancestors(self, i: int) -> tuple[int, ...]:
        """Bodies on the path from body i to the root, i first (the support of joint i: j ⪯ i)."""
        path = []
        while i >= 0:
            path.append(i)
            i = self.parents[i]
        return tuple(path)

    def children(self, i: int) -> tuple[int, ...]:
        """Direct children of body i (i = -1: the bodies attached to the world)."""
        return tuple(k for k, p in enumerate(self.parents) if p == i)


def _check_armature(armature) -> None:
    """Concrete armatures must be finite and non-negative (traced ones are not checked)."""
    try:
        values = np.asarray(armature, dtype=float)
    except Exception:  # a tracer
        return
    if not np.all(np.isfinite(values) & (values >= 0)):
        raise ValueError(f"Model: armature must be finite and non-negative, got {values}")


def _check_inertias(inertias, names) -> None:
    """The algorithms use the structure ``[[A, m c̃], [m c̃ᵀ, m 1]]`` of spatial inertias (:class:`jaxse3.rigid._spatial.
    Inertia`): check it for concrete arrays (traced ones, e.g. under ``vmap`` over models, are not checked)."""
    try:
        I = np.asarray(inertias, dtype=float)
    except Exception:  # a tracer
        return
    scale = np.maximum(np.abs(I).max(axis=(-2, -1), keepdims=True), np.finfo(float).tiny)
    H = I[..., :3, 3:]
    m = np.trace(I[..., 3:, 3:], axis1=-2, axis2=-1)[..., None, None] / 3.0
    bad = (np.abs(I - np.swapaxes(I, -1, -2)) / scale).max(axis=(-2, -1)) > 1e-9
    bad |= (np.abs(H + np.swapaxes(H, -1, -2)) / scale[..., :3, :3]).max(axis=(-2, -1)) > 1e-9
    bad |= (np.abs(I[..., 3:, 3:] - m * np.eye(3)) / scale[..., :3, :3]).max(axis=(-2, -1)) > 1e-9
    if bad.any():
        i = int(np.argwhere(bad)[0][-1])
        raise ValueError(
            f"Model: inertias[{i}] (body {names[i]!r}) is not a spatial inertia [[I_c + m c̃c̃ᵀ, m c̃], "
            f"[m c̃ᵀ, m 1]] (symmetric, skew off-diagonal blocks, m·1 lower-right block); build it "
            f"with jaxse3.rigid.spatial_inertia"
        )


def spatial_inertia(
    mass: Float[ArrayLike, ""], com: Float[ArrayLike, "3"], inertia_com: Float[ArrayLike, "3 3"]
) -> Float[np.ndarray, "6 6"] | Float[Array, "6 6"]:
    """Spatial inertia about the frame origin, angular first: ``[[I_c + m c̃c̃ᵀ, m c̃], [m c̃ᵀ, m 1]]``.

    ``mass`` scalar, ``com`` (3,) centre of mass in the body frame, ``inertia_com`` (3, 3) rotational inertia about the
    centre of mass in body-frame axes. Numpy in, numpy out (used by the builders); also works on JAX arrays.
    """
    xp = jnp if any(isinstance(x, jnp.ndarray) for x in (mass, com, inertia_com)) else np
    c = xp.asarray(com)
    C = xp.array([[0.0, -c[2], c[1]], [c[2], 0.0, -c[0]], [-c[1], c[0], 0.0]]) if xp is np else skew(c)
    top = xp.concatenate([xp.asarray(inertia_com) + mass * C @ C.T, mass * C], axis=1)
    bottom = xp.concatenate([mass * C.T, mass * xp.eye(3)], axis=1)
    return xp.concatenate([top, bottom], axis=0)


def check_vector(fname: str, model: Model, name: str, x: ArrayLike, size_name: str) -> Float[Array, " n"]:
    """Trace-time check that ``x`` is a vector of length ``model.nq`` or ``model.nv``; returns it as a float array.

    A vector of length ``nq`` is a configuration: it also gets the run-time check of :func:`check_quaternions`, so
    every public function that takes a configuration checks its quaternions."""
    size = getattr(model, size_name)
    x = jnp.asarray(x)
    if x.shape != (size,):
        raise ValueError(
            f"{fname}: {name} must have shape ({size_name},) = ({size},), got {x.shape} (vmap over batches of states)"
        )
    if not jnp.issubdtype(x.dtype, jnp.floating):
        x = x.astype(model.inertias.dtype)
    if size_name == "nq":
        x = check_quaternions(fname, model, name, x)
    return x


def check_state(
    fname: str,
    model: Model,
    q: ArrayLike,
    v: ArrayLike | None = None,
    a: ArrayLike | None = None,
    f_ext: ArrayLike | None = None,
) -> list[Array]:
    """Trace-time shape checks of a state: q (nq,), v and a (nv,), f_ext (nb, 6) or None. Returns the arrays."""
    out = [check_vector(fname, model, "q", q, "nq")]
    for name, x in (("v", v), ("a", a)):
        if x is not None:
            out.append(check_vector(fname, model, name, x, "nv"))
    if f_ext is not None:
        f_ext = jnp.asarray(f_ext)
        if f_ext.shape != (model.nb, 6):
            raise ValueError(f"{fname}: f_ext must have shape (nb, 6) = ({model.nb}, 6), got {f_ext.shape}")
        out.append(f_ext)
    return out


def check_quaternions(fname: str, model: Model, name: str, q: Float[Array, " nq"]) -> Float[Array, " nq"]:
    """Run-time check that the quaternions of the spherical and free joints in the configuration ``q`` have unit
    norm, ``|‖quat‖ − 1| ≤ max(1e-6, √ε)`` (1e-6 in float64, 3.5e-4 in float32); returns ``q`` unchanged.

    ``eqx.branched_error_if``: it survives ``jit``, ``vmap`` and autodiff, and its error names the slice of ``q`` and
    the joint. Non-unit quaternions would otherwise give non-orthogonal rotation matrices and wrong numbers.
    """
    quats = [
        (i, model.q_index[i] + (3 if t == "free" else 0))
        for i, t in enumerate(model.joint_types)
        if t in ("spherical", "free")
    ]
    if not quats:
        return q
    starts = np.array([start for _, start in quats])
    norms = jnp.linalg.norm(q[starts[:, None] + np.arange(4)], axis=1)
    tol = max(1e-6, float(np.sqrt(np.finfo(q.dtype).eps)))
    bad = ~(jnp.abs(norms - 1.0) <= tol)  # NaN norms too
    messages = [
        f"{fname}: {name}[{start}:{start + 4}], the quaternion (w, x, y, z) of {model.joint_types[i]} joint "
        f"{model.names[i]!r}, does not have unit norm (tolerance {tol:.1e}); normalise it"
        for i, start in quats
    ]
    return eqx.branched_error_if(q, jnp.any(bad), jnp.argmax(bad), messages)

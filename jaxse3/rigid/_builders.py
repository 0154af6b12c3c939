"""Model builders: a programmatic API (:class:`ModelBuilder`) and Featherstone's ``autoTree`` random trees.

:class:`ModelBuilder` adds bodies one by one; a body attached by a ``fixed`` joint is merged into its parent (its
spatial inertia transported into the parent's frame and added, its frame kept as a named frame so that later bodies can
hang from it). :func:`auto_tree` follows Featherstone's ``autoTree(nb, bf, skew, taper)`` (spatial_v2; seed 002 digest
§5): breadth-first numbering ``parent(i) = floor((i − 2 + ceil(bf)) / bf)`` (1-based), link lengths ``taper^(i−1)``,
masses ``taper^(3(i−1))``, centre of mass at (len/2, 0, 0), ``Icm = m len² diag(0.0025, 1.015/12, 1.015/12)``,
``Xtree = rotx(skew) · xlt(len(parent), 0, 0)``, joints about local z; optional seeded randomisation of inertias,
placements and joint types, and an optional floating base.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from jaxtyping import ArrayLike, Float

from jaxse3.rigid import joints as _joints
from jaxse3.rigid._model import Model, spatial_inertia

__all__ = ["ModelBuilder", "auto_tree"]


def _transport_inertia(pose, inertia):
    """Spatial inertia given in a child frame at ``pose`` (4×4) in the parent frame, expressed in the parent frame."""
    R, p = pose[:3, :3], pose[:3, 3]
    P = np.array([[0.0, -p[2], p[1]], [p[2], 0.0, -p[0]], [-p[1], p[0], 0.0]])
    X = np.block([[R.T, np.zeros((3, 3))], [-R.T @ P, R.T]])  # Ad_{H⁻¹}: parent motion → child motion
    return X.T @ inertia @ X


@dataclass
class _Frame:
    body: int  # movable body index, -1 = world
    pose: np.ndarray  # pose in that body's frame


class ModelBuilder:
    """Build a :class:`Model` body by body.

    Example::

        b = ModelBuilder(gravity=(0, 0, -9.81))
        b.add_body("base", None, "free", mass=5.0, com=(0, 0, 0), inertia=np.eye(3))
        b.add_body("thigh", "base", "revolute", axis=(0, 1, 0), placement=pose, mass=1.0, ...)
        model = b.build()

    ``parent`` is a body/frame name, or None for the world. A ``"fixed"`` body is merged into its parent (or, fixed
    to the world, is only a named frame). ``placement`` (4×4) is the joint frame's pose in the
    parent frame; the body frame is the joint's child frame, and ``com``/``inertia`` (about the centre of mass) are
    given in it. ``axis`` is normalised for revolute/helical joints; ``pitch`` is the helical translation per radian.
    """

    def __init__(self, gravity: Float[ArrayLike, "3"] = (0.0, 0.0, -9.81)):
        self.gravity = np.asarray(gravity, dtype=float)
        self._frames: dict[str, _Frame] = {}
        self._parents: list[int] = []
        self._types: list[str] = []
        self._names: list[str] = []
        self._placements: list[np.ndarray] = []
        self._axes: list[np.ndarray] = []
        self._inertias: list[np.ndarray] = []

    def _parent_frame(self, parent, name) -> _Frame:
        if parent is None:
            return _Frame(-1, np.eye(4))
        if parent not in self._frames:
            raise ValueError(f"body {name!r}: unknown parent {parent!r}")
        return self._frames[parent]

    def add_body(
        self,
        name: str,
        parent: str | None,
        joint_type: str,
        *,
        axis: Float[ArrayLike, "3"] = (0.0, 0.0, 1.0),
        pitch: float = 0.0,
        placement: Float[ArrayLike, "4 4"] | None = None,
        mass: float = 0.0,
        com: Float[ArrayLike, "3"] = (0.0, 0.0, 0.0),
        inertia: Float[ArrayLike, "3 3"] | None = None,
    ) -> None:
        """Add body ``name`` attached to ``parent`` by a joint of ``joint_type`` (or ``"fixed"``: merged)."""
        if name in self._frames:
            raise ValueError(f"body {name!r} added twice")
        frame = self._parent_frame(parent, name)
        placement = np.eye(4) if placement is None else np.asarray(placement, dtype=float)
        pose = frame.pose @ placement
        inertia_c = np.zeros((3, 3)) if inertia is None else np.asarray(inertia, dtype=float)
        spatial = spatial_inertia(float(mass), np.asarray(com, dtype=float), inertia_c)
        if joint_type == "fixed":  # merged into the parent body; fixed to the world, it carries no dynamics
            if frame.body >= 0:
                self._inertias[frame.body] = self._inertias[frame.body] + _transport_inertia(pose, spatial)
            self._frames[name] = _Frame(frame.body, pose)
            return
        if joint_type not in _joints.JOINT_TYPES:
            raise ValueError(
                f"joint of body {name!r}: unsupported joint type {joint_type!r}; expected one of "
                f"{_joints.JOINT_TYPES + ('fixed',)}"
            )
        a = np.asarray(axis, dtype=float)
        if joint_type in ("revolute", "helical", "prismatic"):
            norm = np.linalg.norm(a)
            if not norm > 0:
                raise ValueError(f"joint of body {name!r}: zero axis")
            a = a / norm
        six = {"revolute": np.r_[a, 0, 0, 0], "prismatic": np.r_[0, 0, 0, a], "helical": np.r_[a, pitch * a]}.get(
            joint_type, np.zeros(6)
        )
        self._frames[name] = _Frame(len(self._parents), np.eye(4))
        self._parents.append(frame.body)
        self._types.append(joint_type)
        self._names.append(name)
        self._placements.append(pose)
        self._axes.append(six)
        self._inertias.append(spatial)

    def build(self) -> Model:
        """The :class:`Model` (float64 arrays when x64 is enabled)."""
        if not self._parents:
            raise ValueError("ModelBuilder.build: the model has no movable body")
        return Model(
            self._parents,
            self._types,
            np.stack(self._placements),
            np.stack(self._axes),
            np.stack(self._inertias),
            self.gravity,
            self._names,
        )


def _rotx(t):
    c, s = math.cos(t), math.sin(t)
    return np.array([[1.0, 0, 0, 0], [0, c, -s, 0], [0, s, c, 0], [0, 0, 0, 1.0]])


def _random_rotation(rng):
    quat = rng.normal(size=4)
    return np.asarray(_joints.quat_to_rotation(quat / np.linalg.norm(quat)))


def auto_tree(
    nb: int,
    bf: float = 1.0,
    skew: float = 0.0,
    taper: float = 1.0,
    *,
    joint_types: str | Sequence[str] = "revolute",
    floating_base: bool = False,
    seed: int | None = None,
    gravity: Float[ArrayLike, "3"] = (0.0, 0.0, -9.81),
) -> Model:
    """Featherstone's ``autoTree(nb, bf, skew, taper)``: a serial chain (bf = 1) or a branched tree (bf > 1).

    ``joint_types``: ``"revolute"`` (Featherstone's), a sequence cycled over the bodies, or ``"mixed"`` (random among
    revolute/prismatic/helical/spherical, needs ``seed``). ``floating_base=True`` makes the root joint free.
    ``seed`` (not None) additionally randomises every inertia (mass ×U(0.5, 1.5), random principal moments and axes,
    random centre-of-mass offset) and placement (random rotation), so that no structural zero hides an error.
    """
    if nb < 1:
        raise ValueError(f"auto_tree: nb must be >= 1, got {nb}")
    rng = np.random.default_rng(seed)
    if joint_types == "mixed":
        if seed is None:
            raise ValueError("auto_tree: joint_types='mixed' needs a seed")
        types = list(rng.choice(["revolute", "prismatic", "helical", "spherical"], size=nb))
    elif isinstance(joint_types, str):
        types = [joint_types] * nb
    else:
        types = [joint_types[i % len(joint_types)] for i in range(nb)]
    if floating_base:
        types[0] = "free"
    b = ModelBuilder(gravity)
    lengths = [taper**i for i in range(nb)]
    for i in range(nb):  # 0-based i ↔ Featherstone's i + 1
        parent = -1 if i == 0 else math.floor((i - 1 + math.ceil(bf)) / bf) - 1
        length, mass = lengths[i], taper ** (3 * i)
        com = np.array([length / 2, 0.0, 0.0])
        inertia = mass * length**2 * np.diag([0.0025, 1.015 / 12, 1.015 / 12])
        placement = _rotx(skew) @ np.block(
            [
                [np.eye(3), np.array([[lengths[parent] if parent >= 0 else 0.0], [0], [0]])],
                [np.zeros((1, 3)), np.ones((1, 1))],
            ]
        )
        axis = (0.0, 0.0, 1.0)
        if seed is not None:
            mass *= rng.uniform(0.5, 1.5)
            Q = _random_rotation(rng)
            inertia = Q @ np.diag(mass * length**2 * rng.uniform(0.02, 0.1, size=3)) @ Q.T
            com = com + 0.1 * length * rng.normal(size=3)
            placement = placement.copy()
            placement[:3, :3] = placement[:3, :3] @ _random_rotation(rng)
            axis = tuple(rng.normal(size=3))
        b.add_body(
            f"body{i}",
            None if parent < 0 else f"body{parent}",
            str(types[i]),
            axis=axis,
            pitch=0.1 if types[i] == "helical" else 0.0,
            placement=placement,
            mass=mass,
            com=com,
            inertia=inertia,
        )
    return b.build()

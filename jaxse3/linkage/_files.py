"""Linkages described in TOML files (parsed with the standard library's ``tomllib``), validated with messages that name
the link and the field.

A file lists its links parents first; lengths in m, masses in kg, angles in rad::

    gravity = [0.0, 0.0, -9.81]        # optional (default shown)

    [fluid]                            # optional: a jaxse3.linkage.Fluid (density, drag_normal, drag_tangential,
    density = 1000.0                   #   added_mass, speed_scale)

    [[link]]
    name = "shoulder"
    joint = "revolute"                 # fixed, revolute, prismatic, helical, spherical, free, cylindrical, planar,
                                       #   soft
    axis = [0.0, 1.0, 0.0]             # the rotation (revolute, helical, cylindrical) or translation axis, or a
                                       #   planar joint's normal; unit
    pitch = 0.0                        # helical only: translation per radian
    position = [0.0, 0.0, 0.0]         # placement: the joint frame in the parent's end frame (the world for roots)
    rotation = [0.0, 0.0, 0.0]         #   (rotation vector)
    mass = 0.3                         # rigid links: mass ≥ 0, centre of mass, inertia about it (principal moments
    com = [0.05, 0.0, 0.0]             #   [Ixx, Iyy, Izz] or a 3×3 matrix; default zero for a massless link,
                                       #   mass = 0: a joint between frames, e.g. a hinge or a slider)
    inertia = [1e-4, 3e-4, 3e-4]
    # optional: parent = "name", actuated = true, volume = 0.0, drag = [6 values], added_mass = [6 values],
    #   coordinates = "exponential" (spherical and free joints: exp(Φq̂), nq = nv, as a simulation needs)

    [[link]]
    name = "arm"
    parent = "shoulder"
    joint = "soft"
    position = [0.1, 0.0, 0.0]
    [link.rod]                         # a GVS rod along its base frame's x axis
    length = 0.5
    radius = [0.015, 0.01]             # circular section: base and tip (linear taper), or one number; or a
                                       #   rectangular one: width = 0.015 (along local y), height = 0.03 (along z)
    young = 1e6                        # E (Pa); density (kg/m³), poisson, damping (Pa·s) as jaxse3.rod.Material
    density = 1000.0
    poisson = 0.5
    damping = 1e4
    strains = ["wx", "wy", "wz", "vx"] # the strain components with modes (default all six)
    order = 4                          # Legendre order of each (default 2), or one per strain: [3, 3, 3, 1]
    gauss = 5                          # Gauss points (default the highest order + 1)
    shear_factor = 1.0                 # optional: Timoshenko's k on G A (default 1), rotary_inertia = false

Point wrenches (:class:`~jaxse3.linkage.PointLoad`) on a link's points, any number::

    [[load]]
    link = "arm"
    wrench = [0.0, 0.0, 0.0, 0.0, 0.0, -1.0]  # moment then force (N·m, N)
    frame = "world"                    # or "local" (a follower wrench); default world
    point = -1                         # the index among the link's points; default its end

Loop closures of a closed chain (:class:`~jaxse3.linkage.Closure`, read by :func:`closures_from_toml`), any number::

    [[closure]]
    name = "pin"                       # optional: used in messages
    link_a = "rocker"                  # frame A on this link's point (point_a, default −1: its end) ...
    position_a = [0.3, 0.0, 0.0]       #   ... at this pose in the point's frame (rotation_a: a rotation vector)
    link_b = "ground"                  # frame B likewise (link_b absent: the world; position_b, rotation_b, point_b)
    kind = "planar"                    # fixed (default), spherical, revolute, prismatic, planar
    axis = [0.0, 0.0, 1.0]             # revolute, prismatic and planar closures: the unit axis, in frame B
    # or, instead of kind and axis, the constrained directions Φ⊥ (6 × k, twist order ω then v, in frame B) as six
    # rows of k numbers: constrained = [[0, 0, 0], [0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1], [0, 0, 0]]

Unknown fields are errors (they catch typos), as are unknown joints, parents that do not exist or come later (a
cycle cannot be written), non-positive lengths, radii or masses, negative inertias, a basis order the Gauss points
cannot resolve.
"""

from __future__ import annotations

import os
from typing import Any

import jax.numpy as jnp
import numpy as np
import tomllib

from jaxse3 import rigid, se3
from jaxse3.linkage._closure import Closure
from jaxse3.linkage._model import COORDINATES, JOINTS, Fluid, Link, Linkage, PointLoad
from jaxse3.rod import Rod
from jaxse3.rod.basis import LegendreBasis
from jaxse3.rod.geometry import CircularSection, Material, RectangularSection

__all__ = ["read_toml", "from_toml", "closures_from_toml", "STRAINS"]

#: the strain components of a rod, in order (angular first)
STRAINS = ("wx", "wy", "wz", "vx", "vy", "vz")
_RIGID_FIELDS = {"mass", "com", "inertia", "volume", "drag", "added_mass", "actuated", "coordinates"}
_COMMON_FIELDS = {"name", "parent", "joint", "position", "rotation", "axis", "pitch"}
_ROD_FIELDS = {
    *("length", "radius", "width", "height", "young", "density", "poisson", "damping", "strains", "order", "gauss"),
    *("shear_factor", "rotary_inertia"),
}
_FLUID_FIELDS = {"density", "drag_normal", "drag_tangential", "added_mass", "speed_scale"}


def read_toml(source: str | os.PathLike | dict[str, Any]) -> tuple[dict[str, Any], str]:
    """The parsed TOML of a file path (or of TOML text, or an already parsed table) and a label for messages."""
    if isinstance(source, dict):
        return source, "model"
    if isinstance(source, os.PathLike) or (isinstance(source, str) and source.endswith(".toml")):
        path = os.fspath(source)
        try:
            with open(path, "rb") as fh:
                return tomllib.load(fh), os.path.basename(path)
        except FileNotFoundError:
            raise ValueError(f"{path}: no such file") from None
        except tomllib.TOMLDecodeError as e:
            raise ValueError(f"{os.path.basename(path)}: not valid TOML: {e}") from None
    try:
        return tomllib.loads(source), "model"
    except tomllib.TOMLDecodeError as e:
        raise ValueError(f"model: not valid TOML: {e}") from None


class _Fields:
    """Typed access to one table, with messages naming where it is."""

    def __init__(self, table: dict, where: str, allowed: set[str]):
        if not isinstance(table, dict):
            raise ValueError(f"{where}: expected a table, got {table!r}")
        unknown = sorted(set(table) - allowed)
        if unknown:
            raise ValueError(f"{where}: unknown field(s) {unknown}; expected some of {sorted(allowed)}")
        self.table, self.where = table, where

    def number(self, key: str, default: float | None = None, positive: bool = False, nonneg: bool = False) -> float:
        if key not in self.table:
            if default is None:
                raise ValueError(f"{self.where}: missing {key!r}")
            return default
        v = self.table[key]
        if isinstance(v, bool) or not isinstance(v, int | float) or not np.isfinite(v):
            raise ValueError(f"{self.where}: {key!r} must be a finite number, got {v!r}")
        if positive and v <= 0:
            raise ValueError(f"{self.where}: {key!r} must be positive, got {v}")
        if nonneg and v < 0:
            raise ValueError(f"{self.where}: {key!r} must be non-negative, got {v}")
        return float(v)

    def flag(self, key: str, default: bool) -> bool:
        v = self.table.get(key, default)
        if not isinstance(v, bool):
            raise ValueError(f"{self.where}: {key!r} must be true or false, got {v!r}")
        return v

    def vector(self, key: str, size: int | tuple[int, ...], default: Any = None) -> np.ndarray:
        if key not in self.table:
            if default is None:
                raise ValueError(f"{self.where}: missing {key!r}")
            return np.asarray(default, dtype=float)
        v = self.table[key]
        sizes = (size,) if isinstance(size, int) else size
        try:
            a = np.asarray(v, dtype=float)
        except (TypeError, ValueError):
            a = None
        if a is None or a.ndim != 1 or a.shape[0] not in sizes or not np.isfinite(a).all():
            raise ValueError(
                f"{self.where}: {key!r} must be a list of {' or '.join(map(str, sizes))} numbers, got {v!r}"
            )
        return a


def _placement(f: _Fields, suffix: str = "") -> np.ndarray:
    """The pose of the fields ``position{suffix}`` and ``rotation{suffix}`` (a rotation vector), identity by default."""
    rotation = f.vector(f"rotation{suffix}", 3, (0.0, 0.0, 0.0))
    R = se3.exp(jnp.concatenate([jnp.asarray(rotation), jnp.zeros(3)]))[:3, :3]
    position = f.vector(f"position{suffix}", 3, (0.0, 0.0, 0.0))
    return np.asarray(se3.from_rotation_translation(R, jnp.asarray(position)))


def _axis(f: _Fields, joint: str) -> np.ndarray | None:
    if joint not in ("revolute", "prismatic", "helical", "cylindrical", "planar"):
        for key in ("axis", "pitch"):
            if key in f.table:
                raise ValueError(
                    f"{f.where}: {key!r} is only for revolute, prismatic, helical, cylindrical and planar joints"
                )
        return None
    a = f.vector("axis", 3)
    n = float(np.linalg.norm(a))
    if abs(n - 1.0) > 1e-6:
        raise ValueError(f"{f.where}: 'axis' must be a unit vector, got {a.tolist()} (norm {n:.6g})")
    if "pitch" in f.table and joint != "helical":
        raise ValueError(f"{f.where}: 'pitch' is only for helical joints")
    zero = np.zeros(3)
    if joint in ("revolute", "cylindrical", "planar"):
        return np.concatenate([a, zero])
    if joint == "prismatic":
        return np.concatenate([zero, a])
    return np.concatenate([a, f.number("pitch", 0.0) * a])


def _rigid_link(f: _Fields, name: str, parent: str | None, joint: str) -> Link:
    mass = f.number("mass", nonneg=True)
    com = f.vector("com", 3, (0.0, 0.0, 0.0))
    raw = f.table.get("inertia", None if mass > 0 else (0.0, 0.0, 0.0))
    I = np.asarray(raw, dtype=float) if raw is not None else None
    if I is None or I.shape not in ((3,), (3, 3)) or not np.isfinite(I).all():
        raise ValueError(
            f"{f.where}: 'inertia' must be [Ixx, Iyy, Izz] or a 3×3 matrix about the centre of mass (optional for a "
            "massless link, mass = 0)"
        )
    I = np.diag(I) if I.shape == (3,) else I
    if np.abs(I - I.T).max() > 1e-12 * max(np.abs(I).max(), 1e-300) or np.linalg.eigvalsh(I).min() < 0:
        raise ValueError(f"{f.where}: 'inertia' must be symmetric positive semi-definite, got {I.tolist()}")
    actuated = f.table.get("actuated")
    if actuated is not None and not isinstance(actuated, bool):
        raise ValueError(f"{f.where}: 'actuated' must be true or false, got {actuated!r}")
    added = f.vector("added_mass", 6, np.zeros(6))
    return Link.rigid(
        name,
        parent,
        joint,
        rigid.spatial_inertia(mass, com, I),
        _placement(f),
        _axis(f, joint),
        actuated,
        f.number("volume", 0.0, nonneg=True),
        f.vector("drag", 6, np.zeros(6)),
        np.diag(added),
        _coordinates(f),
    )


def _coordinates(f: _Fields) -> str:
    value = f.table.get("coordinates", "quaternion")
    if value not in COORDINATES:
        raise ValueError(f"{f.where}: 'coordinates' must be one of {list(COORDINATES)}, got {value!r}")
    return value


def _section(f: _Fields, where: str) -> CircularSection | RectangularSection:
    if "width" in f.table or "height" in f.table:
        if "radius" in f.table:
            raise ValueError(f"{where}: give 'radius' (circular) or 'width' and 'height' (rectangular), not both")
        return RectangularSection(f.number("width", positive=True), f.number("height", positive=True))
    radius = f.vector("radius", (1, 2)) if isinstance(f.table.get("radius"), list) else None
    if radius is None:
        r = f.number("radius", positive=True)
        radius = np.array([r, r])
    elif radius.shape[0] == 1:
        radius = np.array([radius[0], radius[0]])
    if (radius <= 0).any():
        raise ValueError(f"{where}: 'radius' must be positive, got {radius.tolist()}")
    return CircularSection(float(radius[0]), float(radius[1]))


def _rod(table: Any, where: str) -> Rod:
    f = _Fields(table, where, _ROD_FIELDS)
    section = _section(f, where)
    strains = f.table.get("strains", list(STRAINS))
    if not isinstance(strains, list) or not strains or any(s not in STRAINS for s in strains):
        raise ValueError(f"{where}: 'strains' must be a non-empty list of {list(STRAINS)}, got {strains!r}")
    order = f.table.get("order", 2)
    orders = order if isinstance(order, list) else [order] * len(strains)
    if len(orders) != len(strains) or any(isinstance(o, bool) or not isinstance(o, int) or o < 0 for o in orders):
        raise ValueError(
            f"{where}: 'order' must be a non-negative integer or a list of one per strain ({len(strains)}), "
            f"got {order!r}"
        )
    top = max(orders)
    gauss = f.table.get("gauss", top + 1)
    if isinstance(gauss, bool) or not isinstance(gauss, int) or gauss < top + 1:
        raise ValueError(f"{where}: 'gauss' must be an integer ≥ order + 1 = {top + 1}, got {gauss!r}")
    by_strain = dict(zip(strains, orders))
    material = Material(
        E=f.number("young", positive=True),
        rho=f.number("density", positive=True),
        nu=f.number("poisson", 0.5),
        damping=f.number("damping", 0.0, nonneg=True),
    )
    return Rod(
        length=f.number("length", positive=True),
        section=section,
        material=material,
        basis=LegendreBasis(tuple(by_strain.get(s) for s in STRAINS)),
        n_gauss=gauss,
        shear_factor=f.number("shear_factor", 1.0, positive=True),
        rotary_inertia=f.flag("rotary_inertia", True),
    )


def from_toml(source: str | os.PathLike | dict[str, Any]) -> Linkage:
    """The :class:`~jaxse3.linkage.Linkage` of a TOML file (or TOML text, or its parsed table); the format is in this
    module's docstring. Bad input raises ValueError naming the file, the link and the field."""
    data, label = read_toml(source)
    unknown = sorted(set(data) - {"gravity", "fluid", "link", "load", "closure", "simulation"})
    if unknown:
        raise ValueError(
            f"{label}: unknown top-level field(s) {unknown}; expected gravity, fluid, link, load, closure, simulation"
        )
    top = _Fields({k: v for k, v in data.items() if k == "gravity"}, label, {"gravity"})
    gravity = top.vector("gravity", 3, (0.0, 0.0, -9.81))
    fluid = None
    if "fluid" in data:
        ff = _Fields(data["fluid"], f"{label}: [fluid]", _FLUID_FIELDS)
        fluid = Fluid(**{k: ff.number(k, nonneg=True) for k in ff.table})
    links = data.get("link")
    if not isinstance(links, list) or not links:
        raise ValueError(f"{label}: no links (write each as a [[link]] table)")
    out = []
    for i, table in enumerate(links):
        name = table.get("name") if isinstance(table, dict) else None
        if not isinstance(name, str) or not name:
            raise ValueError(f"{label}: link {i + 1} has no 'name'")
        where = f"{label}: link {name!r}"
        joint = table.get("joint")
        if joint not in JOINTS:
            raise ValueError(f"{where}: 'joint' must be one of {list(JOINTS)}, got {joint!r}")
        parent = table.get("parent")
        if parent is not None and not isinstance(parent, str):
            raise ValueError(f"{where}: 'parent' must be a link name, got {parent!r}")
        if joint == "soft":
            f = _Fields(table, where, _COMMON_FIELDS | {"rod"})
            _axis(f, joint)
            if "rod" not in table:
                raise ValueError(f"{where}: a soft link needs its [link.rod] table")
            out.append(Link.soft(name, parent, _rod(table["rod"], f"{where}: rod"), _placement(f)))
        else:
            f = _Fields(table, where, _COMMON_FIELDS | _RIGID_FIELDS)
            out.append(_rigid_link(f, name, parent, joint))
    loads = []
    tables = data.get("load", [])
    if not isinstance(tables, list):
        raise ValueError(f"{label}: write each load as a [[load]] table")
    for i, table in enumerate(tables):
        f = _Fields(table, f"{label}: load {i + 1}", {"link", "wrench", "frame", "point"})
        link, frame, point = table.get("link"), table.get("frame", "world"), table.get("point", -1)
        if not isinstance(link, str):
            raise ValueError(f"{f.where}: 'link' must be a link name, got {link!r}")
        if frame not in ("local", "world"):
            raise ValueError(f'{f.where}: \'frame\' must be "local" or "world", got {frame!r}')
        if isinstance(point, bool) or not isinstance(point, int):
            raise ValueError(f"{f.where}: 'point' must be an integer, got {point!r}")
        loads.append(PointLoad(link, f.vector("wrench", 6), frame, point))
    try:
        return Linkage(out, gravity, fluid=fluid, loads=loads)
    except ValueError as e:
        raise ValueError(f"{label}: {e}") from None


_CLOSURE_FIELDS = {"name", "link_a", "link_b", "kind", "axis", "constrained", "point_a", "point_b"}
_CLOSURE_FIELDS |= {f"{key}_{side}" for key in ("position", "rotation") for side in "ab"}


def closures_from_toml(source: str | os.PathLike | dict[str, Any]) -> tuple[Closure, ...]:
    """The loop closures (:class:`~jaxse3.linkage.Closure`) of a model file's ``[[closure]]`` tables (module
    docstring), in order; none without such tables. Checked against the linkage where they are used
    (:func:`~jaxse3.linkage.check_closures`)."""
    data, label = read_toml(source)
    tables = data.get("closure", [])
    if not isinstance(tables, list):
        raise ValueError(f"{label}: write each closure as a [[closure]] table")
    out = []
    for i, table in enumerate(tables):
        name = table.get("name") if isinstance(table, dict) else None
        f = _Fields(table, f"{label}: closure {name or i + 1}", _CLOSURE_FIELDS)
        constrained = table.get("constrained")
        link_a, link_b = table.get("link_a"), table.get("link_b")
        kind = table.get("kind", None if constrained is not None else "fixed")
        if not isinstance(link_a, str) or not (link_b is None or isinstance(link_b, str)):
            raise ValueError(f"{f.where}: 'link_a' (and 'link_b' if given) must be link names")
        points = {k: table.get(k, -1) for k in ("point_a", "point_b")}
        for key, point in points.items():
            if isinstance(point, bool) or not isinstance(point, int):
                raise ValueError(f"{f.where}: {key!r} must be an integer, got {point!r}")
        axis = f.vector("axis", 3) if "axis" in table else None
        if constrained is not None:
            try:
                constrained = np.asarray(constrained, dtype=float)
            except (TypeError, ValueError):
                constrained = np.zeros((0,))
            if constrained.ndim != 2 or constrained.shape[0] != 6 or not np.isfinite(constrained).all():
                raise ValueError(
                    f"{f.where}: 'constrained' must be six rows of k numbers (Φ⊥, 6 × k), got {table['constrained']!r}"
                )
        try:
            out.append(
                Closure(
                    link_a,
                    link_b,
                    kind,
                    axis,
                    constrained,
                    point_a=points["point_a"],
                    point_b=points["point_b"],
                    placement_a=_placement(f, "_a"),
                    placement_b=_placement(f, "_b"),
                    name=None if name is None else str(name),
                )
            )
        except ValueError as e:
            raise ValueError(f"{label}: {e}") from None
    return tuple(out)

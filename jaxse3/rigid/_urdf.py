"""URDF import (each <link> and <joint> parsed by ``urdf_parser_py``, the ROS URDF parser; no hand-written parsing).

Only what dynamics needs is read: the <link> and <joint> children of <robot>. Geometry (<visual>, <collision>),
materials, transmissions and simulator tags are dropped before parsing, so malformed parts of them (a texture without
a file name, a transmission without a type) do not stop the import, and each link or joint is parsed on its own, so a
parse error names it. Numbers that enter the model (origins, axes, inertials) must be finite.

Mapping: ``revolute``/``continuous`` → revolute, ``prismatic`` → prismatic, ``fixed`` → merged into the parent body
(inertia transported, frame kept); ``floating``/``planar`` and unknown types are rejected naming the joint. Mimic tags
are ignored (mimicking joints stay independent, as in Pinocchio's default). Bodies are numbered depth-first from the
root with the children of each link in order of joint name, which is the order of urdfdom and therefore of Pinocchio's
``buildModelFromUrdf``, and are named after their joints (``Model.names``, Pinocchio's ``model.names[1:]``); a link
may share its name with a joint. With ``floating_base=True`` the root link becomes a body with a free joint named
``root_joint`` (Pinocchio's name). The root link of a fixed-base model, and links fixed to it, are part of the world.

Massless links are accepted, as in Pinocchio: the mass matrix stays positive definite when the links after them carry
inertia. A joint that moves no inertia at all (its link and every link after it massless) makes the mass matrix
singular; :func:`from_urdf` warns about it.
"""

from __future__ import annotations

import contextlib
import io
import os
import warnings
from xml.etree import ElementTree

import numpy as np
from jaxtyping import ArrayLike, Float

from jaxse3.rigid._builders import ModelBuilder
from jaxse3.rigid._model import Model

__all__ = ["from_urdf"]

_TYPES = {"revolute": "revolute", "continuous": "revolute", "prismatic": "prismatic", "fixed": "fixed"}
_GEOMETRY = ("visual", "collision")
_FREE_JOINT = "root_joint"


def _link_frame(name: str) -> str:
    """The builder's name of link ``name``'s frame. Links and joints may share names, while the builder has one
    namespace: joint bodies keep the joint names, and a NUL prefix (a character no XML name can hold) sets the link
    frames apart."""
    return "\0" + name


def _pose(origin) -> np.ndarray:
    """4×4 pose of a URDF <origin xyz rpy> (fixed-axis roll–pitch–yaw: R = Rz(y) Ry(p) Rx(r))."""
    H = np.eye(4)
    if origin is None:
        return H
    r, p, y = origin.rpy if origin.rpy is not None else (0.0, 0.0, 0.0)
    cr, sr, cp, sp, cy, sy = np.cos(r), np.sin(r), np.cos(p), np.sin(p), np.cos(y), np.sin(y)
    H[:3, :3] = np.array(
        [
            [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
            [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
            [-sp, cp * sr, cp * cr],
        ]
    )
    H[:3, 3] = origin.xyz if origin.xyz is not None else (0.0, 0.0, 0.0)
    return H


def _check_finite(kind: str, name: str, what: str, values) -> None:
    """ValueError naming the link/joint when a number that enters the model is NaN or infinite."""
    if values is not None and not np.all(np.isfinite(np.asarray(values, dtype=float))):
        raise ValueError(f"from_urdf: {kind} {name!r} has a non-finite {what}: {values}")


def _check_origin(kind: str, name: str, what: str, origin) -> None:
    """:func:`_check_finite` on the xyz and rpy of an <origin>."""
    if origin is not None:
        _check_finite(kind, name, f"{what} xyz", origin.xyz)
        _check_finite(kind, name, f"{what} rpy", origin.rpy)


def _inertia_matrix(i) -> np.ndarray:
    """3×3 matrix of a URDF <inertia> (zeros when absent)."""
    if i is None:
        return np.zeros((3, 3))
    return np.array([[i.ixx, i.ixy, i.ixz], [i.ixy, i.iyy, i.iyz], [i.ixz, i.iyz, i.izz]])


def _check_numbers(links: dict, joints: dict) -> None:
    """ValueError naming the link/joint for a NaN or infinity in a number that enters the model, or a zero axis."""
    for link in links.values():
        ine = link.inertial
        if ine is not None:
            _check_origin("link", link.name, "inertial origin", ine.origin)
            _check_finite("link", link.name, "mass", ine.mass)
            _check_finite("link", link.name, "inertia", _inertia_matrix(ine.inertia))
    for joint in joints.values():
        _check_origin("joint", joint.name, "origin", joint.origin)
        _check_finite("joint", joint.name, "axis", joint.axis)
        if joint.type != "fixed" and joint.axis is not None and not np.any(joint.axis):
            raise ValueError(f"from_urdf: joint {joint.name!r} has a zero axis")


def _inertial(link):
    """(mass, com, inertia about the com in link axes) of a link; zeros when it has no <inertial>."""
    if link.inertial is None:
        return 0.0, np.zeros(3), np.zeros((3, 3))
    ine = link.inertial
    H = _pose(ine.origin)
    I = _inertia_matrix(ine.inertia)
    return float(ine.mass or 0.0), H[:3, 3], H[:3, :3] @ I @ H[:3, :3].T


def _parse(path: str | os.PathLike) -> tuple[dict, dict]:
    """(links, joints): name → ``urdf_parser_py`` object, in document order, from a file or an XML string."""
    try:
        from urdf_parser_py import urdf as urdf_types
        from urdf_parser_py.xml_reflection import core as xml_reflection
    except ImportError as e:
        raise ImportError('from_urdf needs the optional dependency urdf_parser_py: pip install "jaxse3[rigid]"') from e
    text = str(path)
    from_string = text.lstrip().startswith("<")
    try:
        robot = ElementTree.fromstring(text) if from_string else ElementTree.parse(text).getroot()
    except ElementTree.ParseError as e:
        raise ValueError(f"from_urdf: {'the string' if from_string else text!r} is not well-formed XML: {e}") from e
    if robot.tag != "robot":
        raise ValueError(f"from_urdf: the root element is <{robot.tag}>, expected <robot>")
    parsed: dict[str, dict] = {"link": {}, "joint": {}}
    classes = {"link": urdf_types.Link, "joint": urdf_types.Joint}
    for node in robot:
        kind = node.tag
        if kind not in parsed:  # materials, transmissions, simulator tags: no dynamics
            continue
        name = node.get("name")
        if name is None:
            raise ValueError(f"from_urdf: a <{kind}> element has no name")
        if name in parsed[kind]:
            raise ValueError(f"from_urdf: {kind} {name!r} is defined twice")
        for child in [c for c in node if c.tag in _GEOMETRY]:
            node.remove(child)
        try:
            with contextlib.redirect_stderr(io.StringIO()):  # the parser prints warnings for unknown tags
                parsed[kind][name] = classes[kind].from_xml(node, xml_reflection.Path(kind))
        except Exception as e:  # the parser raises ParseError, or AssertionError/ValueError for malformed vectors
            detail = f"{e.e} (at {e.path})" if isinstance(e, xml_reflection.ParseError) else str(e) or repr(e)
            raise ValueError(f"from_urdf: {kind} {name!r} could not be parsed: {detail}") from e
    return parsed["link"], parsed["joint"]


def _warn_without_inertia(model: Model, moved: dict[str, str]) -> None:
    """Warn about the joints whose subtree has no inertia at all (a zero row and column of the mass matrix)."""
    composite = np.array(model.inertias)
    for i in reversed(range(model.nb)):
        if model.parents[i] >= 0:
            composite[model.parents[i]] += composite[i]
    empty = [name for i, name in enumerate(model.names) if not np.any(composite[i])]
    if empty:
        links = [moved[name] for name in empty]
        warnings.warn(
            f"from_urdf: joints {empty} move no inertia (links {links} and the links after them are "
            f"massless): the mass matrix is singular, forward dynamics will fail",
            stacklevel=3,
        )


def from_urdf(
    path: str | os.PathLike, floating_base: bool = False, gravity: Float[ArrayLike, "3"] = (0.0, 0.0, -9.81)
) -> Model:
    """Load a URDF file (or an XML string starting with ``<``) as a :class:`Model`.

    Raises ``ValueError`` naming the link or joint for a part that cannot be parsed, a non-finite number in an origin,
    axis or inertial, a name defined twice, an unsupported joint type, a zero joint axis, a closed loop (a link with
    two parent joints) or a disconnected part; and for a fixed-base robot without any moving joint. Warns (does not
    raise) when a joint moves no inertia (the mass matrix is then singular). Needs ``urdf_parser_py``
    (``pip install "jaxse3[rigid]"``).
    """
    links, joints = _parse(path)
    if not links:
        raise ValueError("from_urdf: the robot has no <link>")
    _check_numbers(links, joints)
    parent_joint: dict[str, object] = {}
    children: dict[str, list] = {name: [] for name in links}
    for joint in joints.values():
        if joint.type not in _TYPES:
            raise ValueError(
                f"from_urdf: joint {joint.name!r} has unsupported type {joint.type!r} (supported: {sorted(_TYPES)})"
            )
        if floating_base and joint.name == _FREE_JOINT:
            raise ValueError(
                f"from_urdf: joint {joint.name!r} has the name of the free joint that floating_base=True adds"
            )
        for end in (joint.parent, joint.child):
            if end not in links:
                raise ValueError(f"from_urdf: joint {joint.name!r} refers to unknown link {end!r}")
        if joint.child in parent_joint:
            raise ValueError(
                f"from_urdf: closed loop: link {joint.child!r} is the child of joints "
                f"{parent_joint[joint.child].name!r} and {joint.name!r}"
            )
        parent_joint[joint.child] = joint
        children[joint.parent].append(joint)
    roots = [name for name in links if name not in parent_joint]
    if len(roots) != 1:
        raise ValueError(f"from_urdf: expected one root link, found {roots} (closed loop or disconnected links)")
    root = roots[0]
    if not floating_base and all(joint.type == "fixed" for joint in joints.values()):
        raise ValueError(
            "from_urdf: the robot has no moving joint, so with a fixed base it has no degree of freedom; "
            "load it with floating_base=True"
        )

    b = ModelBuilder(gravity)
    moved: dict[str, str] = {}  # joint name -> the link it moves (for warnings)
    if floating_base:
        mass, com, inertia = _inertial(links[root])
        b.add_body(_FREE_JOINT, None, "free", mass=mass, com=com, inertia=inertia)
        b.add_body(_link_frame(root), _FREE_JOINT, "fixed")  # the root link's frame, for its children
        moved[_FREE_JOINT] = root
    else:
        b.add_body(_link_frame(root), None, "fixed")  # part of the world
    visited = {root}
    stack = sorted(children[root], key=lambda j: j.name, reverse=True)
    while stack:  # depth-first, children by joint name (urdfdom/Pinocchio order)
        joint = stack.pop()
        visited.add(joint.child)
        mass, com, inertia = _inertial(links[joint.child])
        jtype = _TYPES[joint.type]
        body = joint.name if jtype != "fixed" else _link_frame(joint.child)
        b.add_body(
            body,
            _link_frame(joint.parent),
            jtype,
            axis=joint.axis if joint.axis is not None else (1.0, 0.0, 0.0),
            placement=_pose(joint.origin),
            mass=mass,
            com=com,
            inertia=inertia,
        )
        if jtype != "fixed":
            b.add_body(_link_frame(joint.child), body, "fixed")  # the link frame, for its children
            moved[body] = joint.child
        stack.extend(sorted(children[joint.child], key=lambda j: j.name, reverse=True))
    if len(visited) != len(links):
        raise ValueError(f"from_urdf: links not connected to the root {root!r}: {sorted(set(links) - visited)}")
    model = b.build()
    _warn_without_inertia(model, moved)
    return model

"""URDF import (parsed by ``urdf_parser_py``, the ROS URDF parser; no hand-written XML parsing).

Mapping: ``revolute``/``continuous`` → revolute, ``prismatic`` → prismatic, ``fixed`` → merged into the parent body
(inertia transported, frame kept); ``floating``/``planar`` and unknown types are rejected naming the joint. Mimic tags
are ignored (mimicking joints stay independent, as in Pinocchio's default). Bodies are numbered depth-first from the
root with the children of each link in order of joint name, which is the order of urdfdom and therefore of Pinocchio's
``buildModelFromUrdf``; with ``floating_base=True`` the root link becomes a body with a free joint named
``root_joint`` (Pinocchio's name). The root link of a fixed-base model, and links fixed to it, are part of the world.
"""

from __future__ import annotations

import contextlib
import io
import os

import numpy as np

from jaxse3.rigid.builders import ModelBuilder
from jaxse3.rigid.model import Model

__all__ = ["from_urdf"]

_TYPES = {"revolute": "revolute", "continuous": "revolute", "prismatic": "prismatic", "fixed": "fixed"}


def _pose(origin) -> np.ndarray:
    """4×4 pose of a URDF <origin xyz rpy> (fixed-axis roll–pitch–yaw: R = Rz(y) Ry(p) Rx(r))."""
    H = np.eye(4)
    if origin is None:
        return H
    r, p, y = origin.rpy if origin.rpy is not None else (0.0, 0.0, 0.0)
    cr, sr, cp, sp, cy, sy = np.cos(r), np.sin(r), np.cos(p), np.sin(p), np.cos(y), np.sin(y)
    H[:3, :3] = np.array([[cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
                          [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
                          [-sp, cp * sr, cp * cr]])  # fmt: skip
    H[:3, 3] = origin.xyz if origin.xyz is not None else (0.0, 0.0, 0.0)
    return H


def _inertial(link):
    """(mass, com, inertia about the com in link axes) of a link; zeros when it has no <inertial>."""
    if link.inertial is None:
        return 0.0, np.zeros(3), np.zeros((3, 3))
    ine = link.inertial
    H = _pose(ine.origin)
    i = ine.inertia
    I = np.array([[i.ixx, i.ixy, i.ixz], [i.ixy, i.iyy, i.iyz], [i.ixz, i.iyz, i.izz]]) if i is not None else np.zeros((3, 3))
    return float(ine.mass or 0.0), H[:3, 3], H[:3, :3] @ I @ H[:3, :3].T


def from_urdf(path: str | os.PathLike, floating_base: bool = False, gravity=(0.0, 0.0, -9.81)) -> Model:
    """Load a URDF file (or an XML string starting with ``<``) as a :class:`Model`.

    Raises ``ValueError`` naming the joint for an unsupported joint type, naming the link for a closed loop (a link
    with two parent joints) or a disconnected part, and naming the link and joint for a moving body without inertia
    (zero mass after merging the links fixed to it).
    """
    from urdf_parser_py.urdf import URDF  # optional dependency (extra "rigid")

    text = str(path)
    with contextlib.redirect_stderr(io.StringIO()):  # the parser prints warnings for gazebo/transmission tags
        robot = URDF.from_xml_string(text) if text.lstrip().startswith("<") else URDF.from_xml_file(text)
    links = {link.name: link for link in robot.links}
    parent_joint: dict[str, object] = {}
    children: dict[str, list] = {name: [] for name in links}
    for joint in robot.joints:
        if joint.type not in _TYPES:
            raise ValueError(f"from_urdf: joint {joint.name!r} has unsupported type {joint.type!r} "
                             f"(supported: {sorted(_TYPES)})")  # fmt: skip
        for end in (joint.parent, joint.child):
            if end not in links:
                raise ValueError(f"from_urdf: joint {joint.name!r} refers to unknown link {end!r}")
        if joint.child in parent_joint:
            raise ValueError(f"from_urdf: closed loop: link {joint.child!r} is the child of joints "
                             f"{parent_joint[joint.child].name!r} and {joint.name!r}")  # fmt: skip
        parent_joint[joint.child] = joint
        children[joint.parent].append(joint)
    roots = [name for name in links if name not in parent_joint]
    if len(roots) != 1:
        raise ValueError(f"from_urdf: expected one root link, found {roots} (closed loop or disconnected links)")
    root = roots[0]

    b = ModelBuilder(gravity)
    moving: dict[str, str] = {}  # body name -> the joint that moves it (for error messages)
    if floating_base:
        mass, com, inertia = _inertial(links[root])
        b.add_body("root_joint", None, "free", mass=mass, com=com, inertia=inertia)
        b.add_body(root, "root_joint", "fixed")  # the root link's frame, for its children
        moving["root_joint"] = "root_joint"
    else:
        b.add_body(root, None, "fixed")  # part of the world
    visited = {root}
    stack = sorted(children[root], key=lambda j: j.name, reverse=True)
    while stack:  # depth-first, children by joint name (urdfdom/Pinocchio order)
        joint = stack.pop()
        visited.add(joint.child)
        mass, com, inertia = _inertial(links[joint.child])
        jtype = _TYPES[joint.type]
        name = joint.name if jtype != "fixed" else joint.child
        b.add_body(name, joint.parent, jtype,
                   axis=joint.axis if joint.axis is not None else (1.0, 0.0, 0.0), placement=_pose(joint.origin),
                   mass=mass, com=com, inertia=inertia)  # fmt: skip
        if jtype != "fixed":
            b.add_body(joint.child, name, "fixed")  # the link frame, under its own name, for its children
            moving[name] = joint.child
        stack.extend(sorted(children[joint.child], key=lambda j: j.name, reverse=True))
    if len(visited) != len(links):
        raise ValueError(f"from_urdf: links not connected to the root {root!r}: {sorted(set(links) - visited)}")
    model = b.build()
    masses = np.asarray(model.inertias[:, 5, 5])
    for i, name in enumerate(model.names):
        if not masses[i] > 0:
            raise ValueError(f"from_urdf: link {moving[name]!r} moved by joint {name!r} has no inertia (zero mass, "
                             f"also after merging the links fixed to it)")  # fmt: skip
    return model

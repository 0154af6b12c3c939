"""URDF import on a small hand-written URDF (compared with the same robot built programmatically) and its errors."""

from __future__ import annotations

import re
import sys
import warnings

import jax
import numpy as np
import pytest

pytest.importorskip("urdf_parser_py")

from jaxse3 import rigid
from tests.rigid.conftest import jit

ROBOT = """<robot name="tiny">
  <link name="base"><inertial><mass value="3.0"/><origin xyz="0 0 0.1"/>
    <inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial></link>
  <link name="arm"><inertial><mass value="1.0"/><origin xyz="0.2 0 0" rpy="0.1 0.2 0.3"/>
    <inertia ixx="0.01" ixy="0.001" ixz="0" iyy="0.02" iyz="0.002" izz="0.03"/></inertial></link>
  <link name="sensor"><inertial><mass value="0.2"/><origin xyz="0 0.05 0"/>
    <inertia ixx="0.001" ixy="0" ixz="0" iyy="0.001" iyz="0" izz="0.001"/></inertial></link>
  <link name="slider"><inertial><mass value="0.5"/><origin xyz="0 0 0"/>
    <inertia ixx="0.002" ixy="0" ixz="0" iyy="0.003" iyz="0" izz="0.004"/></inertial></link>
  <link name="wheel"><inertial><mass value="0.4"/><origin xyz="0 0 0.01"/>
    <inertia ixx="0.002" ixy="0" ixz="0" iyy="0.002" iyz="0" izz="0.003"/></inertial></link>
  <joint name="shoulder" type="revolute"><parent link="base"/><child link="arm"/>
    <origin xyz="0 0 0.3" rpy="0.3 -0.2 0.5"/><axis xyz="0 1 0"/>
    <limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
  <joint name="mount" type="fixed"><parent link="arm"/><child link="sensor"/>
    <origin xyz="0.4 0 0" rpy="0 0 1.0"/></joint>
  <joint name="slide" type="prismatic"><parent link="sensor"/><child link="slider"/>
    <origin xyz="0 0.1 0"/><axis xyz="1 1 0"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
  <joint name="spin" type="continuous"><parent link="arm"/><child link="wheel"/><origin xyz="0.1 0 0"/></joint>
</robot>"""


def _rpy(r, p, y):
    """R = Rz(y) Ry(p) Rx(r) written with elementary rotations (the URDF convention)."""
    c, s = np.cos, np.sin
    Rx = np.array([[1, 0, 0], [0, c(r), -s(r)], [0, s(r), c(r)]])
    Ry = np.array([[c(p), 0, s(p)], [0, 1, 0], [-s(p), 0, c(p)]])
    Rz = np.array([[c(y), -s(y), 0], [s(y), c(y), 0], [0, 0, 1]])
    return Rz @ Ry @ Rx


def _pose(xyz, rpy=(0, 0, 0)):
    H = np.eye(4)
    H[:3, :3], H[:3, 3] = _rpy(*rpy), xyz
    return H


def _expected(floating_base: bool) -> rigid.Model:
    b = rigid.ModelBuilder()
    base = dict(mass=3.0, com=(0, 0, 0.1), inertia=0.1 * np.eye(3))
    if floating_base:
        b.add_body("root_joint", None, "free", **base)
        b.add_body("base", "root_joint", "fixed")
    else:
        b.add_body("base", None, "fixed", **base)
    Ra = _rpy(0.1, 0.2, 0.3)
    Ia = np.array([[0.01, 0.001, 0], [0.001, 0.02, 0.002], [0, 0.002, 0.03]])
    b.add_body(
        "shoulder",
        "base",
        "revolute",
        axis=(0, 1, 0),
        placement=_pose((0, 0, 0.3), (0.3, -0.2, 0.5)),
        mass=1.0,
        com=(0.2, 0, 0),
        inertia=Ra @ Ia @ Ra.T,
    )
    b.add_body(
        "sensor",
        "shoulder",
        "fixed",
        placement=_pose((0.4, 0, 0), (0, 0, 1.0)),
        mass=0.2,
        com=(0, 0.05, 0),
        inertia=0.001 * np.eye(3),
    )
    b.add_body(
        "slide",
        "sensor",
        "prismatic",
        axis=(1, 1, 0),
        placement=_pose((0, 0.1, 0)),
        mass=0.5,
        inertia=np.diag([0.002, 0.003, 0.004]),
    )
    b.add_body(
        "spin",
        "shoulder",
        "revolute",
        axis=(1, 0, 0),
        placement=_pose((0.1, 0, 0)),
        mass=0.4,
        com=(0, 0, 0.01),
        inertia=np.diag([0.002, 0.002, 0.003]),
    )
    return b.build()


@pytest.mark.parametrize("floating_base", [False, True])
def test_urdf_matches_programmatic_model(tmp_path, floating_base):
    path = tmp_path / "tiny.urdf"
    path.write_text(ROBOT)
    m = rigid.from_urdf(path, floating_base=floating_base)
    ref = _expected(floating_base)
    # depth-first, children by joint name: shoulder, then slide (under sensor, fixed to arm) before spin
    assert m.names == ref.names == (("root_joint",) if floating_base else ()) + ("shoulder", "slide", "spin")
    assert m.joint_types == ref.joint_types and m.parents == ref.parents
    for field in ("joint_placements", "joint_axes", "inertias", "gravity"):
        np.testing.assert_allclose(getattr(m, field), getattr(ref, field), atol=1e-15, err_msg=field)
    q = jit["random_configuration"](m, jax.random.PRNGKey(0))
    np.testing.assert_allclose(jit["rnea"](m, q, q[: m.nv], q[: m.nv]), jit["rnea"](ref, q, q[: m.nv], q[: m.nv]))


def _replace(old, new):
    assert old in ROBOT
    return ROBOT.replace(old, new)


WHEEL = (
    '<link name="wheel"><inertial><mass value="0.4"/><origin xyz="0 0 0.01"/>\n'
    '    <inertia ixx="0.002" ixy="0" ixz="0" iyy="0.002" iyz="0" izz="0.003"/></inertial></link>'
)


@pytest.mark.parametrize(
    "text, message",
    [
        (
            _replace('name="spin" type="continuous"', 'name="spin" type="floating"'),
            "joint 'spin' has unsupported type 'floating'",
        ),
        (
            _replace('name="slide" type="prismatic"', 'name="slide" type="planar"'),
            "joint 'slide' has unsupported type 'planar'",
        ),
        (
            _replace(
                "</robot>",
                '<joint name="loop" type="revolute"><parent link="wheel"/><child link="arm"/>'
                '<limit lower="-1" upper="1" effort="1" velocity="1"/></joint></robot>',
            ),
            "closed loop: link 'arm' is the child of joints 'shoulder' and 'loop'",
        ),
        (_replace("</robot>", '<link name="orphan"/></robot>'), "expected one root link"),
        # non-finite numbers in every place that enters the model
        (
            _replace('<origin xyz="0 0 0.3" rpy="0.3 -0.2 0.5"/>', '<origin xyz="0 nan 0.3" rpy="0.3 -0.2 0.5"/>'),
            "joint 'shoulder' has a non-finite origin xyz",
        ),
        (
            _replace('<origin xyz="0 0 0.3" rpy="0.3 -0.2 0.5"/>', '<origin xyz="0 0 0.3" rpy="0.3 inf 0.5"/>'),
            "joint 'shoulder' has a non-finite origin rpy",
        ),
        (_replace('<axis xyz="0 1 0"/>', '<axis xyz="0 NaN 0"/>'), "joint 'shoulder' has a non-finite axis"),
        (_replace('<mass value="1.0"/>', '<mass value="inf"/>'), "link 'arm' has a non-finite mass"),
        (_replace('ixx="0.01"', 'ixx="nan"'), "link 'arm' has a non-finite inertia"),
        (
            _replace('<origin xyz="0.2 0 0" rpy="0.1 0.2 0.3"/>', '<origin xyz="0.2 0 -inf" rpy="0.1 0.2 0.3"/>'),
            "link 'arm' has a non-finite inertial origin xyz",
        ),
        # malformed or repeated elements
        (
            _replace('<axis xyz="0 1 0"/>', '<axis xyz="0 1"/>'),
            "joint 'shoulder' could not be parsed: Invalid vector length",
        ),
        (_replace('<axis xyz="0 1 0"/>', '<axis xyz="0 0 0"/>'), "joint 'shoulder' has a zero axis"),
        (_replace('<mass value="1.0"/>', '<mass value="one"/>'), "link 'arm' could not be parsed"),
        (_replace("</robot>", '<link name="arm"/></robot>'), "link 'arm' is defined twice"),
        (
            _replace(
                "</robot>",
                '<joint name="spin" type="fixed"><parent link="arm"/><child link="orphan"/></joint>'
                '<link name="orphan"/></robot>',
            ),
            "joint 'spin' is defined twice",
        ),
        ("<robot name='empty'></robot>", "the robot has no <link>"),
        ("<robot name='block'><link name='box'/></robot>", "the robot has no moving joint"),
        ("<robot name='broken'><link name='box'></robot>", "is not well-formed XML"),
    ],
)
def test_urdf_errors_name_the_joint_or_link(text, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        rigid.from_urdf(text)


def test_link_and_joint_may_share_a_name():
    """Link 'arm' renamed 'shoulder', the name of the joint that moves it: the same model (bodies named by joints)."""
    text = ROBOT.replace('<link name="arm">', '<link name="shoulder">').replace('link="arm"', 'link="shoulder"')
    assert text.count('"shoulder"') == 5  # the link, the joint and three references to the link
    m, ref = rigid.from_urdf(text), _expected(False)
    assert m.names == ref.names and m.parents == ref.parents
    for field in ("joint_placements", "joint_axes", "inertias"):
        np.testing.assert_allclose(getattr(m, field), getattr(ref, field), atol=1e-15, err_msg=field)


def test_massless_links():
    """A massless link whose children carry inertia is accepted silently (the mass matrix stays positive definite);
    a joint that moves no inertia at all (massless leaf) is accepted with a warning naming it."""
    inner = ROBOT.replace('<mass value="1.0"/>', '<mass value="0.0"/>').replace(
        'ixx="0.01" ixy="0.001" ixz="0" iyy="0.02" iyz="0.002" izz="0.03"',
        'ixx="0" ixy="0" ixz="0" iyy="0" iyz="0" izz="0"',
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m = rigid.from_urdf(inner)
    q = jit["random_configuration"](m, jax.random.PRNGKey(1))
    assert np.linalg.eigvalsh(np.asarray(jit["crba"](m, q))).min() > 0
    with pytest.warns(UserWarning, match=re.escape("joints ['spin'] move no inertia (links ['wheel']")):
        m = rigid.from_urdf(_replace(WHEEL, '<link name="wheel"/>'))
    assert m.names == ("shoulder", "slide", "spin")


def test_parts_without_dynamics_are_not_parsed():
    """Malformed geometry, materials, transmissions and simulator tags (which urdf_parser_py rejects as a whole
    robot) do not stop the import: the model is the same."""
    extra = (
        '<material name="metal"><texture/></material>'
        '<transmission name="t"><joint name="spin"/><actuator name="m"/></transmission>'
        '<gazebo reference="arm"><mu1>0.5</mu1></gazebo></robot>'
    )
    text = _replace("</robot>", extra).replace(
        '<link name="sensor">',
        '<link name="sensor"><visual><geometry><mesh/></geometry><material name="x">'
        '<texture/></material></visual><collision><geometry><box size="1 2"/></geometry></collision>',
    )
    m, ref = rigid.from_urdf(text), rigid.from_urdf(ROBOT)
    assert m.names == ref.names
    np.testing.assert_array_equal(m.inertias, ref.inertias)


def test_missing_parser_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "urdf_parser_py", None)
    with pytest.raises(ImportError, match=re.escape('pip install "jaxse3[rigid]"')):
        rigid.from_urdf(ROBOT)

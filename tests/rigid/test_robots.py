"""The robots of example-robot-data: loading by name (:func:`jaxse3.rigid.example_robot`) and every URDF of the
package, compared with Pinocchio's ``buildModelFromUrdf`` (joint names and order, nv, nq), and RNEA against
Pinocchio on the robots whose links and joints share names (anymal_c, so100)."""

from __future__ import annotations

import importlib.metadata
import re
import warnings

import jax
import numpy as np
import pytest

pytest.importorskip("urdf_parser_py")

from jaxse3 import rigid
from jaxse3.rigid import _robots, interop


def _robots_dir():
    try:
        return _robots._robots_dir()
    except ImportError:
        pytest.skip("example-robot-data is not installed")


def test_unknown_name_lists_the_valid_ones():
    with pytest.raises(
        ValueError,
        match=r"unknown robot 'solo' \(did you mean 'solo8' or 'solo12'\?\); valid names: "
        r"a1, .*, anymal_c, .*, ur5, .*, z1$",
    ):
        rigid.example_robot("solo")
    with pytest.raises(ValueError, match="unknown robot 'qwertz'; valid names: a1, "):
        rigid.example_robot_path("qwertz")


def test_missing_package_names_the_extra(monkeypatch):
    def missing(name):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "distribution", missing)
    with pytest.raises(ImportError, match=re.escape('pip install "jaxse3[robots]"')):
        rigid.example_robot("ur5")


def test_every_name_is_installed():
    _robots_dir()
    for name in rigid.EXAMPLE_ROBOTS:
        assert rigid.example_robot_path(name).endswith(rigid.EXAMPLE_ROBOTS[name][0])


def test_floating_base_defaults():
    _robots_dir()
    arm, legged = rigid.example_robot("ur5"), rigid.example_robot("solo12")
    assert "free" not in arm.joint_types and (arm.nq, arm.nv) == (6, 6)
    assert legged.joint_types[0] == "free" and legged.names[0] == "root_joint" and (legged.nq, legged.nv) == (19, 18)
    assert rigid.example_robot("ur5", floating_base=True).nv == 12
    assert rigid.example_robot("solo12", floating_base=False).nv == 12


def test_every_urdf_pinocchio_loads():
    """Every URDF of example-robot-data that Pinocchio loads, jaxse3 loads too, with Pinocchio's joint names and order
    and the same nv; nq differs by one per continuous joint (Pinocchio stores cos and sin). Fixed base, except for
    robots without a moving joint (a single body: no degree of freedom with a fixed base), loaded with a free joint
    on both sides. Model construction only (no compilation)."""
    pin = pytest.importorskip("pinocchio")
    files = sorted(_robots_dir().rglob("*.urdf"))
    assert len(files) > 60
    loaded_pin, failed = [], {}
    for path in files:
        try:
            pm = pin.buildModelFromUrdf(str(path))
        except Exception:  # e.g. a robot without links
            continue
        floating = pm.nv == 0
        if floating:
            pm = pin.buildModelFromUrdf(str(path), pin.JointModelFreeFlyer())
        loaded_pin.append(path.name)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # joints moving no inertia (romeo's fingers: singular in Pinocchio too)
                m = rigid.from_urdf(path, floating_base=floating)
        except ValueError as e:
            failed[str(path.relative_to(path.parents[2]))] = str(e)
            continue
        continuous = sum(j.shortname().startswith("JointModelRUB") for j in pm.joints)
        assert tuple(pm.names)[1:] == m.names, path
        assert (pm.nv, pm.nq) == (m.nv, m.nq + continuous), path
    assert not failed
    assert len(loaded_pin) >= 68  # example-robot-data 6.0.0: 68 of its 69 URDFs (ur3.urdf has no link)


@pytest.mark.parametrize("name", ["anymal_c", "so100"])
def test_rnea_against_pinocchio_with_shared_link_and_joint_names(name):
    pin = pytest.importorskip("pinocchio")
    _robots_dir()
    m = rigid.example_robot(name)
    free = m.joint_types[0] == "free"
    path = rigid.example_robot_path(name)
    pm = pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer()) if free else pin.buildModelFromUrdf(path)
    assert tuple(pm.names)[1:] == m.names
    rng = np.random.default_rng(3)
    q_pin = pin.randomConfiguration(pm, -np.ones(pm.nq), np.ones(pm.nq))
    v_pin, a_pin = rng.normal(size=pm.nv), rng.normal(size=pm.nv)
    tau_pin = pin.rnea(pm, pm.createData(), q_pin, v_pin, a_pin)
    q, v, a = interop.from_pinocchio(m, q_pin, v_pin, a_pin)
    tau = np.asarray(jax.jit(rigid.rnea)(m, q, v, a))[interop.velocity_permutation(m)]
    np.testing.assert_allclose(tau, tau_pin, rtol=0, atol=1e-10 * np.abs(tau_pin).max())

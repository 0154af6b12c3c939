"""Comparison with Pinocchio (optional extra ``pinocchio``: ``pin`` + ``example-robot-data``): τ (with external
wrenches), M, ∂τ/∂q, ∂τ/∂v and forward dynamics (Pinocchio's ABA) on UR5, Panda, Solo, HyQ and Talos with random
rotor inertias (``model.armature``), states converted by jaxse3.rigid.interop.

Our ∂τ/∂q is jax.jacfwd of rnea(q ⊕ δ) at δ = 0 (tangent space, right perturbation); Pinocchio's is in its tangent
space with ``pin.integrate`` (exp6 on the free flyer, also a right perturbation), so the two agree up to the
(v, ω) ↔ (ω, v) permutation of the free-flyer block.
"""

from __future__ import annotations

import functools
import importlib.metadata

import jax
import jax.numpy as jnp
import numpy as np
import pytest

pin = pytest.importorskip("pinocchio")
pytest.importorskip("urdf_parser_py")

from jaxse3 import rigid  # noqa: E402
from jaxse3.rigid import interop  # noqa: E402

ROBOTS = {  # name: (path under example-robot-data/robots, floating base)
    "ur5": ("ur_description/urdf/ur5_robot.urdf", False),
    "panda": ("panda_description/urdf/panda.urdf", False),
    "solo": ("solo_description/robots/solo12.urdf", True),
    "hyq": ("hyq_description/robots/hyq_no_sensors.urdf", True),
    "talos": ("talos_data/robots/talos_reduced.urdf", True),
}


def robot_path(name: str) -> str:
    """Path of an example-robot-data URDF (the pip package installs them under its cmeel prefix), or skip."""
    try:
        dist = importlib.metadata.distribution("example-robot-data")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("example-robot-data is not installed")
    path = dist.locate_file(f"cmeel.prefix/share/example-robot-data/robots/{ROBOTS[name][0]}")
    if not path.exists():
        pytest.skip(f"{path} not found")
    return str(path)


def _armature(nv: int) -> np.ndarray:
    """Random rotor inertias in Pinocchio's velocity order."""
    return np.random.default_rng(1).uniform(0.0, 0.5, size=nv)


@functools.cache
def _ours(name: str):
    m = rigid.from_urdf(robot_path(name), floating_base=ROBOTS[name][1])
    m = m.with_armature(_armature(m.nv)[np.argsort(interop.velocity_permutation(m))])

    @jax.jit
    def compute(q, v, a, f):
        tau = rigid.rnea(m, q, v, a, f)
        dq = jax.jacfwd(lambda d: rigid.rnea(m, rigid.integrate(m, q, d), v, a, f))(jnp.zeros(m.nv))
        dv = jax.jacfwd(lambda w: rigid.rnea(m, q, w, a, f))(v)
        return tau, rigid.crba(m, q), dq, dv, rigid.forward_dynamics(m, q, v, a, f)

    return m, compute


@pytest.mark.parametrize("name", list(ROBOTS))
def test_against_pinocchio(name):
    path = robot_path(name)
    m, compute = _ours(name)
    pm = pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer()) if ROBOTS[name][1] else pin.buildModelFromUrdf(path)
    assert tuple(pm.names)[1:] == m.names and (pm.nq, pm.nv) == (m.nq, m.nv)
    pm.armature = _armature(pm.nv)
    pd = pm.createData()
    rng = np.random.default_rng(0)
    q_pin = pin.randomConfiguration(pm, -np.ones(pm.nq), np.ones(pm.nq))
    v_pin, a_pin = rng.normal(size=pm.nv), rng.normal(size=pm.nv)
    f_ext = rng.normal(size=(m.nb, 6))
    f_pin = interop.wrenches_to_pinocchio(f_ext)
    fext = [pin.Force.Zero()] + [pin.Force(f[:3], f[3:]) for f in f_pin]

    tau_p = pin.rnea(pm, pd, q_pin, v_pin, a_pin, fext)
    dq_p, dv_p, M_p = (np.array(x) for x in pin.computeRNEADerivatives(pm, pd, q_pin, v_pin, a_pin, fext))
    M_p = np.triu(M_p) + np.triu(M_p, 1).T
    fd_p = pin.aba(pm, pd, q_pin, v_pin, a_pin, fext)  # a_pin taken as the joint forces

    q, v, a = interop.from_pinocchio(m, q_pin, v_pin, a_pin)
    tau, M, dq, dv, fd = (np.asarray(x) for x in compute(q, v, a, f_ext))
    p = interop.velocity_permutation(m)
    for ours, theirs, what in (
        (tau[p], tau_p, "tau"),
        (M[p][:, p], M_p, "M"),
        (dq[p][:, p], dq_p, "dtau_dq"),
        (dv[p][:, p], dv_p, "dtau_dv"),
        (fd[p], fd_p, "forward dynamics"),
    ):
        np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-9 * np.abs(theirs).max(), err_msg=what)
    # the round trip of the state conversion
    back = interop.to_pinocchio(m, q, v, a)
    np.testing.assert_allclose(back[0], q_pin, atol=1e-15)
    np.testing.assert_allclose(back[1], v_pin, atol=1e-15)

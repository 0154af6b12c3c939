"""HyQ from its URDF (example-robot-data, through :func:`jaxse3.rigid.from_urdf`) as a linkage: one vocabulary for rigid
and soft. The linkage's recursions give τ, M, ∂τ/∂q and ∂τ/∂q̇ (tangent space of the floating base) equal to
:mod:`jaxse3.rigid`'s (RNEA, CRBA, IDSVA) to round-off at a random state. Runs where the optional extra is installed
(the comparison step of CI)."""

import jax
import numpy as np
import pytest

pytest.importorskip("urdf_parser_py")

from jaxse3 import linkage as lk, rigid


def test_hyq_from_urdf_as_a_linkage_equals_the_rigid_tree():
    try:
        model = rigid.example_robot("hyq")
    except ImportError:
        pytest.skip("example-robot-data is not installed (extra 'robots')")
    linkage = lk.Linkage.from_rigid(model)
    assert (linkage.nq, linkage.nv) == (model.nq, model.nv) == (19, 18)
    k = jax.random.split(jax.random.PRNGKey(5), 3)
    q = rigid.random_configuration(model, k[0])
    v, a = (jax.random.normal(key, (model.nv,)) for key in k[1:])
    r = jax.jit(lambda q, v, a: lk.tree_derivatives(linkage, q, v, a))(q, v, a)  # the linkage's own recursion
    tau = rigid.rnea(model, q, v, a)
    dq, dv = rigid.rnea_derivatives(model, q, v, a)[:2]
    scale = np.abs(tau).max()
    np.testing.assert_allclose(r.tau, tau, rtol=1e-11, atol=1e-12 * scale)
    np.testing.assert_allclose(r.M, rigid.crba(model, q), rtol=1e-11, atol=1e-13)
    np.testing.assert_allclose(r.dq, dq, rtol=1e-10, atol=1e-11 * np.abs(dq).max())
    np.testing.assert_allclose(r.dqd, dv, rtol=1e-10, atol=1e-11 * np.abs(dv).max())

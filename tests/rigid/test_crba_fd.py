"""CRBA and forward dynamics: M = ∂rnea/∂a (autodiff), symmetric positive definite, equal to Σ J_iᵀ I_i J_i (body
Jacobians); FD inverts RNEA (with external wrenches); jit + vmap."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxse3 import rigid
from tests.rigid.conftest import MODEL_NAMES, jit, model, random_state


@functools.cache
def _checks(name: str):
    m = model(name)

    def one(q, v, a, f):
        M = rigid.crba(m, q)
        M_ad = jax.jacfwd(lambda acc: rigid.rnea(m, q, v, acc, f))(a)
        J = rigid.body_jacobians(m, q)
        M_kin = jnp.einsum("bin,bij,bjm->nm", J, m.inertias, J)
        tau = rigid.rnea(m, q, v, a, f)
        a_fd = rigid.forward_dynamics(m, q, v, tau, f)
        return M, M_ad, M_kin, a_fd

    return jax.jit(jax.vmap(one))


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_crba_and_forward_dynamics(name):
    m = model(name)
    q, v, a, f = random_state(m, seed=20, batch=3)
    q = q.at[0].set(jit["neutral_configuration"](m))
    M, M_ad, M_kin, a_fd = _checks(name)(q, v, a, f)
    scale = float(jnp.abs(M).max())
    np.testing.assert_allclose(M, M_ad, atol=1e-12 * scale)
    np.testing.assert_allclose(M, M_kin, atol=1e-12 * scale)
    np.testing.assert_allclose(M, jnp.swapaxes(M, 1, 2), atol=1e-14 * scale)
    assert float(jnp.linalg.eigvalsh(M).min()) > 0.0
    np.testing.assert_allclose(a_fd, a, rtol=1e-9, atol=1e-9)


def test_structural_zeros_of_branched_tree():
    """Blocks of joints on different branches vanish (bf = 2: bodies 1 and 2 are siblings)."""
    m = model("branched")
    q, *_ = random_state(m, seed=1)
    M = jit["crba"](m, q)
    assert m.parents[1] == m.parents[2] == 0
    assert M[1, 2] == 0.0 and M[2, 1] == 0.0 and M[3, 2] == 0.0
    assert M[0, 1] != 0.0

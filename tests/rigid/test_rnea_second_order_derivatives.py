"""IDSVA SO (seed 002 Algorithm 1): the four tensors against nested autodiff and central differences of IDSVA FO,
structure and symmetry (digest §6 items 3–6), and the contractions used by the custom_jvp rule."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxse3.rigid import integrate, rnea_second_order_derivatives
from jaxse3.rigid._rnea_derivatives import _first_order
from jaxse3.rigid._rnea_second_order_derivatives import second_order_contractions
from jaxse3.rigid._topology import topology
from tests.rigid import conftest
from tests.rigid.derivative_oracles import comparison, relative_error

FAST = ("branched", "floating")
MODELS = [pytest.param(n, marks=() if n in FAST else pytest.mark.slow) for n in conftest.MODEL_NAMES]
NAMES = ("d2tau_dq2", "d2tau_dv2", "d2tau_dqdv", "dM_dq")


@pytest.mark.parametrize("name", MODELS)
def test_against_nested_autodiff(name):
    """IDSVA FO (with external forces) and SO against (nested) jacfwd of the plain RNEA, two random states."""
    ours, ref, _ = comparison(name)
    for label, x, r in zip(("dtau_dq", "dtau_dv", "M") + NAMES, ours, ref):
        assert relative_error(x, r) < 1e-10, (name, label)
    assert float(jnp.max(jnp.abs(ref[3]))) > 1.0  # the comparison is not vacuous


@functools.cache
def _so(name):
    m = conftest.model(name)
    return jax.jit(lambda q, v, a: rnea_second_order_derivatives(m, q, v, a))


def test_against_central_differences_of_first_order():
    m = conftest.model("floating")
    q, v, a, _ = conftest.random_state(m, seed=3)
    h = 1e-5
    eye = jnp.eye(m.nv)

    @jax.jit
    def fd():
        def fo(d, dv, da):
            return jnp.stack(_first_order(m, integrate(m, q, d), v + dv, a + da))

        def cd(f):
            return jax.vmap(lambda e: (f(h * e) - f(-h * e)) / (2 * h))(eye)  # [k, 3, τ, j]

        z = jnp.zeros(m.nv)
        dq = cd(lambda e: fo(e, z, z))
        dv = cd(lambda e: fo(z, e, z))
        return (
            jnp.moveaxis(dq[:, 0], 0, 2),
            jnp.moveaxis(dv[:, 1], 0, 2),
            jnp.moveaxis(dv[:, 0], 0, 2),
            jnp.moveaxis(dq[:, 2], 0, 2),
        )

    for label, x, r in zip(NAMES, _so("floating")(q, v, a), fd()):
        assert relative_error(x, r) < 1e-7, label


def _bracket_coordinates(jtype):
    """c[x, y, :] = coordinates of e_x × e_y (spatial cross product of the joint's local basis)."""
    n = 3 if jtype == "spherical" else 6
    E = jnp.eye(6)[:n]
    cross = jax.vmap(
        jax.vmap(
            lambda x, y: jnp.concatenate([jnp.cross(x[:3], y[:3]), jnp.cross(x[:3], y[3:]) + jnp.cross(x[3:], y[:3])]),
            (None, 0),
        ),
        (0, None),
    )(E, E)
    return cross[..., :n]


def test_structure_and_symmetry():
    """Hvv symmetric; dM symmetric in (row, col); Hqq symmetric except inside a multi-DoF joint, where
    H[:, x, y] − H[:, y, x] = ∂τ/∂q_joint · coords(e_y × e_x) (digest §3.1); zero off common chains; B21."""
    for name in FAST:
        m = conftest.model(name)
        top = topology(m)
        ours, _, states = comparison(name)
        Hqq, Hvv, Hqv, dM = ours[3:]
        q, v, a, _ = states
        dtau_dq = jax.jit(jax.vmap(lambda q, v, a: _first_order(m, q, v, a)[0]))(q, v, a)  # without f_ext, as SO
        assert float(jnp.max(jnp.abs(Hvv - jnp.swapaxes(Hvv, 2, 3)))) < 1e-12
        assert float(jnp.max(jnp.abs(dM - jnp.swapaxes(dM, 1, 2)))) < 1e-12
        anti = Hqq - jnp.swapaxes(Hqq, 2, 3)
        same = top.same.astype(bool)
        assert float(jnp.max(jnp.abs(jnp.where(same, 0.0, anti)))) < 1e-11
        expected = jnp.zeros_like(anti)
        for i, jtype in enumerate(m.joint_types):
            if jtype in ("spherical", "free"):
                s = m.v_slice(i)
                c = _bracket_coordinates(jtype)  # [x, y, :]
                block = jnp.einsum("bnk,yxk->bnxy", dtau_dq[:, :, s], c)  # coords(e_y × e_x)
                expected = expected.at[:, :, s, s].set(block)
        if name == "floating":
            assert float(jnp.max(jnp.abs(expected))) > 1e-2  # the bracket term is really exercised
        assert float(jnp.max(jnp.abs(jnp.where(same, anti - expected, 0.0)))) < 1e-11
        # a block (x, y, z) is non-zero only if the three joints lie on one root–leaf chain
        E = top.E > 0
        chain = np.zeros((m.nv,) * 3, bool)
        for p in np.ndindex(*chain.shape):
            x, y, z = sorted(p, key=lambda d: top.joint[d])
            chain[p] = E[z, y] and E[y, x]
        if name == "branched":
            assert not chain.all()
        for T in (Hqq, Hvv, Hqv, dM):
            assert float(jnp.max(jnp.abs(jnp.where(chain, 0.0, T)))) == 0.0
        # B21: ∂M_ij/∂q_k = 0 when k ⪯ j ⪯ i
        b21 = np.einsum("ij,jk->ijk", E, E) > 0  # [row i, col j, q k] with joint(k) ⪯ joint(j) ⪯ joint(i)
        assert float(jnp.max(jnp.abs(jnp.where(b21, dM, 0.0)))) == 0.0


def test_polynomial_structure():
    """τ is quadratic in v and affine in a: Hvv depends on q only, Hqv is linear in v and independent of a, dM depends
    on q only."""
    name = "floating"
    m = conftest.model(name)
    so = _so(name)
    q, v, a, _ = conftest.random_state(m, seed=5)
    _, v2, a2, _ = conftest.random_state(m, seed=6)
    T1, T2, T3 = so(q, v, a), so(q, v2, a2), so(q, 2.0 * v, a2)
    assert relative_error(T1[1], T2[1]) < 1e-12 and relative_error(T1[3], T2[3]) < 1e-12
    assert relative_error(T3[2], 2.0 * T1[2]) < 1e-12
    assert float(jnp.max(jnp.abs(T1[1]))) > 1e-3


@pytest.mark.parametrize("name", FAST)
def test_contractions_match_tensors_under_jit_and_vmap(name):
    m = conftest.model(name)
    q, v, a, _ = conftest.random_state(m, seed=7, batch=2)
    key = jax.random.split(jax.random.PRNGKey(0), 3)
    dq, dv, da = (jax.random.normal(k, (2, m.nv)) for k in key)

    @jax.jit
    @jax.vmap
    def both(q, v, a, dq, dv, da):
        Hqq, Hvv, Hqv, dM = rnea_second_order_derivatives(m, q, v, a)
        tensors = (
            Hqq @ dq + Hqv @ dv + jnp.einsum("ilj,l->ij", dM, da),
            jnp.einsum("ikj,k->ij", Hqv, dq) + Hvv @ dv,
            dM @ dq,
        )
        return tensors, second_order_contractions(m, q, v, a, None, dq, dv, da)

    tensors, contracted = both(q, v, a, dq, dv, da)
    for x, r in zip(contracted, tensors):
        assert relative_error(x, r) < 1e-12


def test_contractions_do_not_form_cubic_arrays():
    m = conftest.model("floating")
    q, v, a, _ = conftest.random_state(m, seed=8)
    z = jnp.zeros(m.nv)
    jaxpr = jax.make_jaxpr(lambda q, d: second_order_contractions(m, q, v, a, None, d, d, d))(q, z)
    shapes = [var.aval.shape for eqn in jaxpr.eqns for var in eqn.outvars]
    assert max(int(np.prod(s)) for s in shapes) < m.nv**3
    full = jax.make_jaxpr(lambda q: rnea_second_order_derivatives(m, q, v, a))(q)
    assert max(int(np.prod(var.aval.shape)) for eqn in full.eqns for var in eqn.outvars) >= m.nv**3

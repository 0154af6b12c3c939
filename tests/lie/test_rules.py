"""The custom_jvp rules: correct to second order, really used, NaN-free at zero under jit and vmap."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.test_util import check_grads

from jaxse3.lie import rules
from tests.lie import reference as ref
from tests.lie.conftest import ANGLES, point, vectors

MAPS = ["exp", "dexp", "dexp_inv", "dexp_apply", "dexp_inv_apply", "dexpT_apply", "dexp_invT_apply", "d_dexp",
        "d_dexp_inv", "dexp_jac", "dexp_inv_jac"]  # fmt: skip


@functools.lru_cache(maxsize=None)
def _jitted(G, name, n):
    """One compiled function of X per map, reused across test points (compilation dominates the test time)."""
    return jax.jit(_fn(G, name, n))


def _fn(G, name, n):
    """A function of X alone (other arguments fixed) for each registered map."""
    Z = jnp.asarray(vectors(n, 1, seed=7)[0])
    f = getattr(G, name)
    if name in ("exp", "dexp", "dexp_inv"):
        return f
    return lambda X: f(X, Z)


@pytest.mark.parametrize("phi", [0.0, 1e-6, 0.7, ANGLES[5], ANGLES[6]])
@pytest.mark.parametrize("name", MAPS)
def test_check_grads_order2(group, name, phi):
    G, n = group
    X = jnp.asarray(point(n, phi))
    check_grads(_jitted(G, name, n), (X,), order=2, modes=("fwd", "rev"), eps=1e-5, atol=1e-6, rtol=1e-6)


@functools.lru_cache(maxsize=None)
def _log_curve(G):
    return jax.jit(lambda V, H: G.log(H @ ref.exp(V)))


@pytest.mark.parametrize("phi", [0.0, 0.4, 2.5])
def test_log_check_grads_on_group(group, phi):
    """log along group curves H exp(tV): the rule differentiates correctly to second order."""
    G, n = group
    H = ref.exp(jnp.asarray(point(n, phi)))
    curve = _log_curve(G)
    check_grads(lambda V: curve(V, H), (jnp.zeros(n) + 1e-3,), order=2, modes=("fwd", "rev"), eps=1e-5, atol=1e-6, rtol=1e-6)


def test_rules_are_used(group):
    """jacfwd / jacrev / hessian of user code invoke the hand-derived rules (trace-time counter and jaxpr)."""
    G, n = group
    X, Z, Q = map(jnp.asarray, vectors(n, 3))
    rules.RULE_CALLS.clear()
    jax.jacfwd(G.dexp_apply)(X, Z)
    jax.jacrev(G.dexp_inv_apply)(X, Z)
    jax.hessian(lambda X: Q @ G.dexp_apply(X, Z))(X)
    jax.hessian(lambda X: jnp.sum(G.exp(X) ** 2))(X)
    c = rules.RULE_CALLS
    alg = G.__name__.rsplit(".", 1)[-1]
    assert c[f"{alg}.dexp.apply"] >= 1 and c[f"{alg}.dexp_inv.apply"] >= 1
    assert c[f"{alg}.dexp.jacobian"] >= 1  # the second order came from the Jacobian's closed-form rule
    assert c[f"{alg}.exp"] >= 1
    jaxpr = str(jax.make_jaxpr(jax.jacfwd(G.dexp_apply))(X, Z))
    assert "custom_jvp_call" in jaxpr or "jacobian" in jaxpr


def test_hessian_through_rules_equals_closed_form(group):
    G, n = group
    X, Z, Q = map(jnp.asarray, vectors(n, 3))
    for apply, hess in [(G.dexp_apply, G.dexp_hess), (G.dexp_inv_apply, G.dexp_inv_hess)]:
        H_auto = jax.hessian(lambda X: Q @ apply(X, Z))(X)
        np.testing.assert_allclose(H_auto, hess(X, Q, Z), atol=1e-12)
        H_rev = jax.jacrev(jax.jacrev(lambda X: Q @ apply(X, Z)))(X)
        np.testing.assert_allclose(H_rev, hess(X, Q, Z), atol=1e-12)


@pytest.mark.slow
def test_no_nan_at_zero_under_jit_and_vmap(group):
    """Values, gradients and Hessians of every registered map at exactly zero rotation, under jit(vmap(·))."""
    G, n = group
    Xs = jnp.zeros((3, n)).at[1, n - 1].set(1.0)  # exactly zero rotation, with and without translation
    U, S = map(jnp.asarray, vectors(n, 2))
    fns = {name: _fn(G, name, n) for name in MAPS}
    fns["log"] = lambda X: G.log(G.exp(X))
    for name in ("d2_dexp", "dexp_hess", "dexp_inv_hess"):
        fns[name] = lambda X, f=getattr(G, name): f(X, U, S)  # noqa: E731

    def everything(X):
        out = {}
        for name, f in fns.items():
            scalar = lambda X, f=f: jnp.sum(jnp.sin(f(X)))  # noqa: E731
            out[name] = (f(X), jax.grad(scalar)(X), jax.hessian(scalar)(X))
        return out

    for name, vals in jax.jit(jax.vmap(everything))(Xs).items():
        for v in vals:
            assert np.all(np.isfinite(v)), name


def test_jit_vmap_and_broadcasting(group):
    G, n = group
    rng = np.random.default_rng(0)
    Xs = jnp.asarray(rng.normal(size=(2, 5, n)))
    Z = jnp.asarray(rng.normal(size=n))
    batched = G.dexp_jac(Xs, Z)
    assert batched.shape == (2, 5, n, n)
    loop = np.stack([[G.dexp_jac(Xs[i, j], Z) for j in range(5)] for i in range(2)])
    np.testing.assert_allclose(batched, loop, atol=1e-14)
    np.testing.assert_allclose(jax.jit(G.dexp_jac)(Xs, Z), loop, atol=1e-14)
    np.testing.assert_allclose(jax.vmap(jax.vmap(G.dexp_jac, (0, None)), (0, None))(Xs, Z), loop, atol=1e-14)
    assert G.exp(Xs).shape == (2, 5) + ((3, 3) if n == 3 else (4, 4))
    assert G.log(G.exp(Xs)).shape == (2, 5, n)


def test_float32_dtype_preserved(group):
    G, n = group
    X = jnp.asarray(point(n, 0.8), dtype=jnp.float32)
    for name in ("exp", "dexp", "dexp_inv"):
        assert getattr(G, name)(X).dtype == jnp.float32
    assert G.dexp_hess(X, X, X).dtype == jnp.float32
    assert jax.hessian(lambda X: jnp.sum(G.dexp_apply(X, X)))(X).dtype == jnp.float32

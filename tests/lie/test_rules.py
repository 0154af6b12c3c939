"""The custom_jvp rules: correct to second order, really used, NaN-free at zero under jit and vmap."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxse3.lie import rules
from tests.lie import reference as ref
from tests.lie.conftest import ANGLES, point, vectors
from tests.lie.gradcheck import CompiledGradCheck

MAPS = [
    "exp",
    "dexp",
    "dexp_inv",
    "dexp_apply",
    "dexp_inv_apply",
    "dexpT_apply",
    "dexp_invT_apply",
    "d_dexp",
    "d_dexp_inv",
    "dexp_jac",
    "dexp_inv_jac",
    "d_dexp_apply",
    "d_dexp_inv_apply",
]
GRAD_TOL = dict(eps=1e-5, atol=1e-6, rtol=1e-6)  # of jax.test_util.check_grads, which CompiledGradCheck reproduces


@functools.cache
def _gradcheck(G, name, n):
    """check_grads to order 2 of one map, compiled once and reused across test points (compilation dominates)."""
    return CompiledGradCheck(_fn(G, name, n), (jnp.zeros(n),), **GRAD_TOL)


def _fn(G, name, n):
    """A function of X alone (other arguments fixed) for each registered map."""
    Z = jnp.asarray(vectors(n, 1, seed=7)[0])
    f = getattr(G, name)
    if name in ("exp", "dexp", "dexp_inv"):
        return f
    if name.startswith("d_") and name.endswith("_apply"):
        U = jnp.asarray(vectors(n, 1, seed=8)[0])
        return lambda X: f(X, U, Z)
    return lambda X: f(X, Z)


@pytest.mark.parametrize("phi", [0.0, 1e-6, 0.7, ANGLES[5], ANGLES[6], "origin"])
@pytest.mark.parametrize("name", MAPS)
def test_check_grads_order2(group, name, phi):
    """check_grads to order 2 at a point of angle φ (both sides of the switch to the closed forms among them) and at
    the origin itself (no translation either). At zero rotation the values and first and second derivatives must be
    finite as well as right; and since the maps select between branches by ``where`` (no ``cond``), the compiled
    program evaluates every branch there, as it would under ``vmap``."""
    G, n = group
    check = _gradcheck(G, name, n)
    assert not check.branches
    check(jnp.zeros(n) if phi == "origin" else jnp.asarray(point(n, phi)))


def test_compiled_check_grads_detects_a_wrong_second_order_rule():
    """The compiled check_grads passes sin with a correct rule and fails it where only the second order is wrong; it
    tells a program that branches by ``cond`` from one that does not."""

    def sin_with(cos_rule):
        cos = jax.custom_jvp(jnp.cos)
        cos.defjvp(lambda p, t: (jnp.cos(p[0]), cos_rule(p[0]) * t[0]))
        sin = jax.custom_jvp(jnp.sin)
        sin.defjvp(lambda p, t: (jnp.sin(p[0]), cos(p[0]) * t[0]))
        return lambda X: sin(X)

    X = jnp.array([0.3, -0.2, 1.0])
    CompiledGradCheck(sin_with(lambda x: -jnp.sin(x)), (X,), **GRAD_TOL)(X)
    with pytest.raises(AssertionError, match="JVP of JVP tangent"):
        CompiledGradCheck(sin_with(jnp.sin), (X,), **GRAD_TOL)(X)  # d cos = +sin: wrong sign
    assert not CompiledGradCheck(sin_with(lambda x: -jnp.sin(x)), (X,), **GRAD_TOL).branches
    assert CompiledGradCheck(lambda X: jax.lax.cond(X[0] > 0, jnp.sin, jnp.cos, X), (X,), **GRAD_TOL).branches


def _exp_near_zero(V, terms=10):
    """exp(V̂) by its series: exact to round-off, with its first derivatives, for ‖V‖ ≤ 1e-2 (cheaper than
    ``expm`` to compile to second order)."""
    A = ref.hat(V)
    out = P = jnp.eye(A.shape[0], dtype=V.dtype)
    for i in range(1, terms):
        P = P @ A / i
        out = out + P
    return out


@functools.cache
def _log_curve_gradcheck(G, n):
    dim = 3 if n == 3 else 4
    return CompiledGradCheck(lambda V, H: G.log(H @ _exp_near_zero(V)), (jnp.zeros(n), jnp.eye(dim)), **GRAD_TOL)


@pytest.mark.parametrize("phi", [0.0, 0.4, 2.5])
def test_log_check_grads_on_group(group, phi):
    """log along group curves H exp(V), V near 0: the rule differentiates correctly to second order."""
    G, n = group
    H = ref.exp(jnp.asarray(point(n, phi)))
    _log_curve_gradcheck(G, n)(jnp.zeros(n) + 1e-3, H)


def test_rules_are_used(group):
    """jacfwd / jacrev / hessian of user code invoke the hand-derived rules (trace-time counter and jaxpr)."""
    G, n = group
    X, Z, Q = map(jnp.asarray, vectors(n, 3))
    jax.clear_caches()  # rules are traced once and cached: count a fresh trace
    rules.RULE_CALLS.clear()  # the counter counts at trace time: tracing (eval_shape) is enough, nothing is compiled
    jax.eval_shape(jax.jacfwd(G.dexp_apply), X, Z)
    jax.eval_shape(jax.jacrev(G.dexp_inv_apply), X, Z)
    jax.eval_shape(jax.hessian(lambda X: Q @ G.dexp_apply(X, Z)), X)
    jax.eval_shape(jax.hessian(lambda X: jnp.sum(G.exp(X) ** 2)), X)
    jax.eval_shape(jax.jacfwd(G.d_dexp_apply), X, Z, Q)
    c = rules.RULE_CALLS
    alg = G.__name__.rsplit(".", 1)[-1]
    assert c[f"{alg}.dexp.apply"] >= 1 and c[f"{alg}.dexp_inv.apply"] >= 1
    assert c[f"{alg}.dexp.jacobian"] >= 1  # the second order came from the Jacobian's closed-form rule
    assert c[f"{alg}.exp"] >= 1
    assert c[f"{alg}.dexp.apply_derivative"] >= 1
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


def test_no_nan_at_zero_under_jit_and_vmap(group):
    """Values, gradients and Hessians at exactly zero rotation, under jit(vmap(·)), of the maps that
    test_check_grads_order2 (which checks MAPS there) leaves out: log(exp(X)) and the second derivatives.

    The Hessian enters as its product with a direction D that has no zero component: a non-finite entry H_ij makes
    (H D)_i non-finite (NaN · d and ∞ · d are not finite for any d), so this checks every entry of H, with one
    forward-over-reverse pass instead of n."""
    G, n = group
    Xs = jnp.zeros((3, n)).at[1, n - 1].set(1.0)  # exactly zero rotation, with and without translation
    U, S, D = map(jnp.asarray, vectors(n, 3))
    fns = {"log": lambda X: G.log(G.exp(X))}
    for name in ("d2_dexp", "dexp_hess", "dexp_inv_hess"):
        fns[name] = lambda X, f=getattr(G, name): f(X, U, S)

    def everything(X):
        out = {}
        for name, f in fns.items():
            scalar = lambda X, f=f: jnp.sum(jnp.sin(f(X)))
            gradient, hessian_times_d = jax.jvp(jax.grad(scalar), (X,), (D,))
            out[name] = (f(X), gradient, hessian_times_d)
        return out

    for name, vals in jax.jit(jax.vmap(everything)).lower(Xs).compile()(Xs).items():
        for v in vals:
            assert np.all(np.isfinite(v)), name


def test_jit_vmap_and_broadcasting(group):
    G, n = group
    rng = np.random.default_rng(0)
    Xs = jnp.asarray(rng.normal(size=(2, 5, n)))
    Z = jnp.asarray(rng.normal(size=n))
    # all under jit: eager calls compile op by op, which costs more here (eager use is exercised in test_groups.py)
    jac = jax.jit(G.dexp_jac)
    batched = jac(Xs, Z)
    assert batched.shape == (2, 5, n, n)
    loop = np.stack([[jac(Xs[i, j], Z) for j in range(5)] for i in range(2)])
    np.testing.assert_allclose(batched, loop, atol=1e-14)
    np.testing.assert_allclose(jax.jit(jax.vmap(jax.vmap(G.dexp_jac, (0, None)), (0, None)))(Xs, Z), loop, atol=1e-14)
    assert jax.eval_shape(G.exp, Xs).shape == (2, 5) + ((3, 3) if n == 3 else (4, 4))
    assert jax.eval_shape(lambda Xs: G.log(G.exp(Xs)), Xs).shape == (2, 5, n)


def test_float32_dtype_preserved(group):
    """Dtypes are fixed at trace time: abstract evaluation (eval_shape) gives the dtypes of the eager results."""
    G, n = group
    X = jnp.asarray(point(n, 0.8), dtype=jnp.float32)
    for name in ("exp", "dexp", "dexp_inv"):
        assert jax.eval_shape(getattr(G, name), X).dtype == jnp.float32
    assert jax.eval_shape(G.dexp_hess, X, X, X).dtype == jnp.float32
    assert jax.eval_shape(jax.hessian(lambda X: jnp.sum(G.dexp_apply(X, X))), X).dtype == jnp.float32


def test_form_hessian_is_the_contracted_closed_form(group):
    """``dexp_form``/``dexp_inv_form``: ``jax.hessian`` (in X, and in X, Q, Z together) equals autodiff of the plain
    series reference (tests/lie/reference.py) at every test angle — zero, tiny, both sides of the Taylor switch φ₀,
    near π — under jit and vmap, and reaches the Q-contracted closed form through the gradient's own rule."""
    G, n = group
    X = jnp.asarray(np.stack([point(n, phi, seed=3) for phi in ANGLES]))
    Q, Z = map(jnp.asarray, vectors(n, 2, seed=5))
    jax.clear_caches()  # rules are traced once and cached: count a fresh trace
    rules.RULE_CALLS.clear()
    for form, matrix, hess in [(G.dexp_form, ref.dexp, G.dexp_hess), (G.dexp_inv_form, ref.dexp_inv, G.dexp_inv_hess)]:
        H = jax.jit(jax.vmap(jax.hessian(form), in_axes=(0, None, None)))(X, Q, Z)
        plain = jax.vmap(jax.hessian(lambda X: Q @ matrix(X) @ Z))(X)
        np.testing.assert_allclose(H, plain, atol=1e-9 * (1.0 + float(jnp.max(jnp.abs(plain)))))
        np.testing.assert_allclose(H, hess(X, Q, Z), atol=1e-12 * (1.0 + float(jnp.max(jnp.abs(plain)))))
        full = jax.hessian(form, argnums=(0, 1, 2))(X[4], Q, Z)
        want = jax.hessian(lambda X, Q, Z: Q @ matrix(X) @ Z, argnums=(0, 1, 2))(X[4], Q, Z)
        for a, b in zip(jax.tree.leaves(full), jax.tree.leaves(want)):
            np.testing.assert_allclose(a, b, atol=1e-9)
        np.testing.assert_allclose(form(X, Q, Z), jnp.einsum("i,kij,j->k", Q, jax.vmap(matrix)(X), Z), rtol=1e-9)
        grad, eps = jax.jit(jax.grad(form)), 1e-6  # central differences of the gradient rule at one point
        central = np.stack([(grad(X[4] + eps * e, Q, Z) - grad(X[4] - eps * e, Q, Z)) / (2 * eps) for e in np.eye(n)])
        np.testing.assert_allclose(H[4], central.T, atol=1e-7 * (1.0 + float(jnp.max(jnp.abs(H[4])))))
    alg = G.__name__.rsplit(".", 1)[-1]
    assert rules.RULE_CALLS[f"{alg}.dexp.form_gradient"] >= 1 and rules.RULE_CALLS[f"{alg}.dexp_inv.form_gradient"] >= 1

"""``jax.test_util.check_grads(f, (X,), order=2, modes=("fwd", "rev"))`` compiled once, for reuse across points.

``check_grads`` runs every function it evaluates (f, jvp f, vjp f, jvp of jvp f, …, and each of them again at the
finite-difference points) through a jit of its own: about 16 XLA compilations per function, which dominated the time
of tests/lie/test_rules.py. Here the same comparisons — the same random directions (a fresh ``RandomState(0)`` per
check, drawn in jax's order), the same central differences, the same size-scaled tolerances — come out of one compiled
function of X in which each distinct function appears once (vmapped over its evaluation points), compiled without
XLA's expensive CPU optimisations; they are compared afterwards in numpy.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np


def _central(pos, neg, eps):
    """(pos − neg) / 2ε leaf by leaf, ``inf − inf`` taken as 0 (jax.test_util.numerical_jvp)."""
    return jax.tree.map(lambda a, b: jnp.where(a == b, jnp.zeros_like(a), a - b) * (0.5 / eps), pos, neg)


def _dot(xs, ys):
    return sum(jnp.vdot(x, y) for x, y in zip(jax.tree.leaves(xs), jax.tree.leaves(ys), strict=True))


def _checks(f: Callable, X: jnp.ndarray, eps: float) -> list:
    """(label, autodiff value, expected value) of every comparison of ``check_grads(f, (X,), 2, ("fwd", "rev"))``:
    check_jvp / check_vjp of f, of g = jvp f at (X, X) and of h = X ↦ vjp(f, X)(f(X))."""
    shape_out = jax.eval_shape(f, X).shape
    rng = np.random.RandomState(0)  # every check starts from RandomState(0): t, then t2 or the cotangent
    t, t2 = rng.randn(*X.shape), rng.randn(*X.shape)
    c_f = np.random.RandomState(0).randn(X.size + int(np.prod(shape_out)))[X.size :].reshape(shape_out)
    c_g = np.random.RandomState(0).randn(2 * X.size + 2 * int(np.prod(shape_out)))[2 * X.size :]
    c_g = tuple(c.reshape(shape_out) for c in np.split(c_g, 2))
    t, t2, c_f = (jnp.asarray(a, X.dtype) for a in (t, t2, c_f))
    c_g = tuple(jnp.asarray(c, X.dtype) for c in c_g)

    def g(p, q):
        return jax.jvp(f, (p,), (q,))

    def pull(p, c, own):
        """f(p) and vjp(f, p) applied to f(p) (``own``: that is h) or to the cotangent c."""
        out, vjp = jax.vjp(f, p)
        return out, vjp(jnp.where(own, out, c))[0]

    def h(p):
        return pull(p, jnp.zeros(shape_out, X.dtype), True)[1]

    # every evaluation of f, g and h, each function vmapped over its points
    f_X, f_pos, f_neg = jax.vmap(f)(jnp.stack([X, X + eps * t, X - eps * t]))
    g_vals = jax.vmap(g)(jnp.stack([X, X + eps * t, X - eps * t, X]), jnp.stack([t, X + eps * t2, X - eps * t2, X]))
    (v_jvp, g_pos, g_neg, g_X) = [jax.tree.map(lambda a, k=k: a[k], g_vals) for k in range(4)]
    P = jnp.stack([X, X + eps * t, X - eps * t, X])
    own = jnp.array([False, True, True, True])
    zero = jnp.zeros(shape_out, X.dtype)
    vjp_out, pulled = jax.vmap(pull)(P, jnp.stack([c_f, zero, zero, zero]), own)
    vjp_f, h_pos, h_neg, h_X = pulled
    fd_f, fd_g, fd_h = _central(f_pos, f_neg, eps), _central(g_pos, g_neg, eps), _central(h_pos, h_neg, eps)

    gg, gg_t = jax.jvp(g, (X, X), (t, t2))
    g_v, g_vjp = jax.vjp(g, X, X)
    hh, hh_t = jax.jvp(h, (X,), (t,))
    h_v, h_vjp = jax.vjp(h, X)
    return [
        ("JVP primal", v_jvp[0], f_X),
        ("JVP tangent", v_jvp[1], fd_f),
        ("JVP of JVP primal", gg, g_X),
        ("JVP of JVP tangent", gg_t, fd_g),
        ("VJP of JVP primal", g_v, g_X),
        ("VJP of JVP cotangent projection", _dot((t, t2), g_vjp(c_g)), _dot(fd_g, c_g)),
        ("VJP primal", vjp_out[0], f_X),
        ("VJP cotangent projection", jnp.vdot(t, vjp_f), _dot(fd_f, c_f)),
        ("JVP of VJP primal", hh, h_X),
        ("JVP of VJP tangent", hh_t, fd_h),
        ("VJP of VJP primal", h_v, h_X),
        ("VJP of VJP cotangent projection", jnp.vdot(t, h_vjp(t2)[0]), jnp.vdot(fd_h, t2)),
    ]


class CompiledGradCheck:
    """``check_grads(lambda X: f(X, *params), (X,), order=2, modes=("fwd", "rev"), eps, atol, rtol)``, compiled once
    for the shapes of ``example`` (X, *params); call it with any arguments of those shapes (the random directions
    depend on the shape of X only, as in jax)."""

    def __init__(self, f: Callable, example: tuple, *, eps: float, atol: float, rtol: float):
        self.atol, self.rtol, self.labels = atol, rtol, []

        def run(X, *params):
            checks = _checks(lambda X: f(X, *params), X, eps)
            self.labels = [label for label, _, _ in checks]
            return [(got, want) for _, got, want in checks]

        traced = jax.jit(run).trace(*example)
        #: whether the program selects between branches by ``cond`` (evaluating one) rather than by ``where`` or
        #: ``select`` (evaluating all, as every ``cond`` does under ``vmap``)
        self.branches = "cond[" in str(traced.jaxpr)
        self._compiled = traced.lower().compile()

    def __call__(self, X: jnp.ndarray, *params) -> None:
        for label, (got, want) in zip(self.labels, self._compiled(X, *params), strict=True):
            jax.tree.map(lambda a, b, label=label: self._assert_close(a, b, label), got, want)

    def _assert_close(self, a, b, err_msg):
        """jax.test_util.check_close: shapes and dtypes equal, tolerances scaled by the array sizes."""
        a, b = np.asarray(a), np.asarray(b)
        assert a.shape == b.shape and a.dtype == b.dtype, (err_msg, a.shape, b.shape, a.dtype, b.dtype)
        with np.errstate(invalid="ignore"):
            np.testing.assert_allclose(a, b, atol=self.atol * a.size, rtol=self.rtol * b.size, err_msg=err_msg)

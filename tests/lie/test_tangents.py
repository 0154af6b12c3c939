"""The shared pieces of the analytical rules: the autodiff term of a rule runs along only the parameters that move."""

import jax
import jax.numpy as jnp
import numpy as np
from jax.custom_derivatives import SymbolicZero

from jaxse3.lie.tangents import custom_rule, dense, jvp_moving, jvp_of_rest


def _model(params, x):
    """A state x and parameters; ``√m`` is not differentiable at m = 0 (a JVP along m, even a zero one, is NaN)."""
    return params["k"] * jnp.sin(x) + jnp.sqrt(params["m"]) * x + params["c"] * x**2


def _model_jvp(primals, tangents):
    """A rule as jaxse3 writes them: the analytical state term plus the autodiff term of the moving parameters."""
    params, x = primals
    _, dx = tangents
    state = (params["k"] * jnp.cos(x) + jnp.sqrt(params["m"]) + 2 * params["c"] * x) * dense(x, dx)
    rest = jvp_of_rest(_model, primals, tangents, analytic=(1,))
    return _model(params, x), state if rest is None else state + rest


_rule = custom_rule("test.model", _model, _model_jvp)
PARAMS = {"k": jnp.asarray(1.5), "m": jnp.zeros(3), "c": jnp.asarray(0.3)}
X = jnp.asarray([0.2, -0.4, 0.7])


def _zero(a):
    return SymbolicZero(jax.typeof(a).to_tangent_aval())


def test_the_rule_differentiates_only_the_moving_parameters():
    """k and c moving, m closed over at m = 0: the rule's JVP equals the analytic one and is finite (a JVP along m
    with a zero tangent would be 0 · ∞ = NaN); with every parameter dense, the same JVP is NaN."""
    dx = jnp.asarray([0.3, 0.1, -0.2])
    d = {"k": jnp.asarray(0.7), "c": jnp.asarray(-0.4)}
    got = jax.jvp(lambda p, x: _rule({**PARAMS, **p}, x), ({"k": PARAMS["k"], "c": PARAMS["c"]}, X), (d, dx))[1]
    want = (PARAMS["k"] * jnp.cos(X) + 2 * PARAMS["c"] * X) * dx + d["k"] * jnp.sin(X) + d["c"] * X**2
    np.testing.assert_allclose(got, want, rtol=1e-15, atol=1e-15)
    dense_zeros = jax.jvp(_model, (PARAMS, X), ({**d, "m": jnp.zeros(3)}, dx))[1]
    assert np.all(np.isnan(dense_zeros))


def test_jvp_moving_skips_symbolic_zeros_and_none():
    tangents = ({"k": jnp.asarray(1.0), "m": _zero(PARAMS["m"]), "c": None}, _zero(X))
    np.testing.assert_allclose(jvp_moving(_model, (PARAMS, X), tangents), jnp.sin(X), rtol=1e-15)
    nothing = ({name: _zero(v) for name, v in PARAMS.items()}, _zero(X))
    assert jvp_moving(_model, (PARAMS, X), nothing) is None
    assert jvp_of_rest(_model, (PARAMS, X), (nothing[0], jnp.ones(3)), analytic=(1,)) is None

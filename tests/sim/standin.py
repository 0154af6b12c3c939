"""A small analytic stand-in for a rod: n masses with springs, dampers, inputs and a pendulum-like nonlinearity.

M q̈ = B u − K q − D q̇ − g sin(q); centreline points (i + 1, q_i, 0), tip = last.
"""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from jaxse3.sim import System


class Params(eqx.Module):
    M: jax.Array
    K: jax.Array
    D: jax.Array
    B: jax.Array
    g: jax.Array


def forward_dynamics(p, q, qd, u):
    return jnp.linalg.solve(p.M, p.B @ u - p.K @ q - p.D @ qd - p.g * jnp.sin(q))


def residual(p, q, qd, qdd, u):
    return p.B @ u - p.K @ q - p.D @ qd - p.g * jnp.sin(q) - p.M @ qdd


def points(p, q):
    i = jnp.arange(1.0, q.shape[0] + 1)
    return jnp.stack([i, q, jnp.zeros_like(q)], axis=-1)


def make(n=4, n_inputs=2, g=0.5, damping=0.3, seed=0, stiffness=1.0) -> System:
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(n, n))
    K = stiffness * (np.eye(n) * 3 + 0.3 * (A + A.T) / 2)
    params = Params(
        M=jnp.asarray(np.eye(n) + 0.1 * A @ A.T),
        K=jnp.asarray(K),
        D=jnp.asarray(damping * np.eye(n)),
        B=jnp.asarray(rng.normal(size=(n, n_inputs))),
        g=jnp.asarray(g),
    )
    return System(params, forward_dynamics, residual, points, n, n_inputs)

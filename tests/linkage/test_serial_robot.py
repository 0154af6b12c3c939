"""The hybrid serial robot of seed 003 §5.1 (digest §5.2): its sizes, and the Jacobians of its forward dynamics —
analytical (eqs. (7), (9), (44) on the tree) against autodiff of the plain reduced dynamics and a five-point central
difference stencil (≤ 1e−8 relative)."""

import jax
import jax.numpy as jnp
import numpy as np

from jaxse3 import linkage as lk
from jaxse3.linkage._control import _fd_plain
from jaxse3.sim import scenarios


def test_serial_robot_sizes():
    system, inputs = scenarios.serial_robot()
    linkage = system.params.linkage
    assert (linkage.nv, linkage.links[-1].body.n_dof, system.n_inputs) == (27, 20, 21)
    # the paper's n_p = 22: two points per rigid link and the soft link's joint frame plus its 7 points
    assert 2 * 7 + 1 + linkage.links[-1].body.n_points == 22
    np.testing.assert_allclose(inputs(0.0)[:14], 0.0)  # from rest: q_k(0) = q̇_k(0) = 0


def test_serial_robot_forward_dynamics_jacobians():
    system, inputs = scenarios.serial_robot()
    control = system.params
    k = jax.random.split(jax.random.PRNGKey(0), 2)
    u_idx = np.asarray(control.unknown)
    q = jnp.zeros(27).at[u_idx].set(0.3 * jax.random.normal(k[0], (20,)))
    qd = jnp.zeros(27).at[u_idx].set(jax.random.normal(k[1], (20,)))
    u = inputs(1.3)
    q = q.at[np.asarray(control.known)].set(u[:7])
    fd = jax.jit(lambda q, qd: lk.controlled_forward_dynamics(control, q[u_idx], qd[u_idx], u))
    Jq, Jqd = jax.jit(jax.jacfwd(fd, argnums=(0, 1)))(q, qd)
    plain = jax.jit(jax.jacfwd(lambda q, qd: _fd_plain(control, q[u_idx], qd[u_idx], u), argnums=(0, 1)))(q, qd)
    h = 3e-3  # M's condition number (~1e7) puts rounding errors of ~1e-9 on q̈: a wide step keeps them small
    stencil = lambda f, x, e: (8 * (f(x + h * e) - f(x - h * e)) - (f(x + 2 * h * e) - f(x - 2 * h * e))) / (12 * h)
    E = jnp.eye(27)[u_idx]
    for got, want, central in (
        (Jq, plain[0], np.stack([stencil(lambda x: fd(x, qd), q, e) for e in E], axis=1)),
        (Jqd, plain[1], np.stack([stencil(lambda x: fd(q, x), qd, e) for e in E], axis=1)),
    ):
        got = np.asarray(got)[:, u_idx]
        scale = np.abs(central).max()
        # round-off of the two derivative paths, amplified by M's condition number (~1e7)
        np.testing.assert_allclose(got, np.asarray(want)[:, u_idx], rtol=1e-6, atol=1e-11 * scale)
        assert np.abs(got - central).max() <= 1e-8 * scale

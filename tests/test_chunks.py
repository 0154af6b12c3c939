"""Cache-sized batches (jaxse3._chunks): ``vmap`` of a wrapped function runs in chunks on a CPU, with vmap's values."""

import jax
import jax.numpy as jnp
import numpy as np

from jaxse3 import rod as R
from jaxse3._chunks import CPU_CHUNK, cache_sized


def _f(x, params, scale):
    """Arrays and a static leaf in, a pytree with an empty leaf out."""
    y = params["a"] @ jnp.sin(x) * scale + params["b"]
    return {"y": y, "outer": jnp.outer(y, x), "none": jnp.zeros((x.shape[0], 0))}


def _loops(fn, *args) -> int:
    jaxpr = str(jax.make_jaxpr(fn)(*args))
    return jaxpr.count("scan[") + jaxpr.count("while[")


def test_vmap_runs_in_chunks_on_a_cpu_with_the_values_of_vmap():
    """More than CPU_CHUNK members (a remainder chunk included): one loop over chunks on a CPU, values equal to
    vmap's; unbatched arguments shared, static leaves kept, empty outputs shaped; at most CPU_CHUNK members: plain
    vmap, no loop."""
    rng = np.random.default_rng(0)
    n = 2 * CPU_CHUNK + 3
    X = jnp.asarray(rng.normal(size=(n, 4)))
    params = {"a": jnp.asarray(rng.normal(size=(4, 4))), "b": jnp.asarray(rng.normal(size=4))}
    wrapped = cache_sized(_f)
    plain = jax.vmap(lambda x, p: _f(x, p, 2.0), in_axes=(0, None))
    chunked = jax.vmap(lambda x, p: wrapped(x, p, 2.0), in_axes=(0, None))
    got, want = jax.jit(chunked)(X, params), plain(X, params)
    assert jax.tree.structure(got) == jax.tree.structure(want) and got["none"].shape == (n, 4, 0)
    for a, b in zip(jax.tree.leaves(got), jax.tree.leaves(want)):
        np.testing.assert_allclose(a, b, rtol=1e-14, atol=1e-15)
    on_cpu = jax.default_backend() == "cpu"
    assert _loops(chunked, X, params) == (1 if on_cpu else 0)
    assert _loops(chunked, X[:CPU_CHUNK], params) == 0
    # batched parameters too (a batch of models)
    P = jax.tree.map(lambda a: jnp.stack([a * (1 + 0.1 * k) for k in range(n)]), params)
    got = jax.vmap(lambda x, p: wrapped(x, p, 2.0))(X, P)
    np.testing.assert_allclose(got["y"], jax.vmap(lambda x, p: _f(x, p, 2.0))(X, P)["y"], rtol=1e-14)


def test_forward_dynamics_jacobians_in_chunks_match_single_states_forward_and_reverse():
    """A rod's vmapped ``jacfwd(forward_dynamics)`` and ``forward_dynamics_jacobians`` (chunked on a CPU) equal the
    single states', and reverse mode through the vmapped dynamics (which evaluates the chunked Jacobians without
    differentiating them) equals the per-state gradients."""
    rod = R.Rod(0.3, R.CircularSection(0.01), R.Material(1e6, 1000.0), R.PiecewiseConstantBasis(1), n_gauss=3)
    rng = np.random.default_rng(1)
    n = CPU_CHUNK + 2
    Q = jnp.asarray(rng.normal(size=(n, rod.n_dof)) * 0.3)
    Qd = jnp.asarray(rng.normal(size=(n, rod.n_dof)))
    fd = lambda q, qd: R.forward_dynamics(rod, q, qd)
    jac = jax.jit(jax.vmap(jax.jacfwd(fd, argnums=(0, 1))))(Q, Qd)
    direct = jax.jit(jax.vmap(lambda q, qd: R.forward_dynamics_jacobians(rod, q, qd)))(Q, Qd)
    W = jnp.asarray(rng.normal(size=(n, rod.n_dof)))
    loss = lambda Q, Qd: jnp.sum(W * jax.vmap(fd)(Q, Qd))
    grads = jax.jit(jax.grad(loss, argnums=(0, 1)))(Q, Qd)
    single = jax.jit(jax.jacfwd(fd, argnums=(0, 1)))
    single_grad = jax.jit(jax.grad(lambda q, qd, w: w @ fd(q, qd), argnums=(0, 1)))
    for k in range(n):
        one, one_grad = single(Q[k], Qd[k]), single_grad(Q[k], Qd[k], W[k])
        for i in range(2):
            close = dict(rtol=1e-11, atol=1e-12 * float(jnp.max(jnp.abs(one[i]))))  # round-off of batched programs
            np.testing.assert_allclose(jac[i][k], one[i], **close)
            np.testing.assert_allclose(direct[i][k], one[i], **close)
            np.testing.assert_allclose(grads[i][k], one_grad[i], rtol=1e-11)


def test_derivatives_of_every_order_and_mode_through_the_chunked_functions():
    """The chunked functions differentiate as their plain selves, also in reverse over reverse (``custom_vmap`` alone
    has no reverse mode): on a batch of more than CPU_CHUNK states, the Hessian of a scalar of the forward dynamics
    by reverse-over-reverse equals forward-over-reverse, and the gradient of a scalar of the analytic Jacobian
    matches central differences."""
    rod = R.Rod(0.3, R.CircularSection(0.01), R.Material(1e6, 1000.0), R.PiecewiseConstantBasis(1), n_gauss=3)
    rng = np.random.default_rng(2)
    n = CPU_CHUNK + 1
    Q = jnp.asarray(rng.normal(size=(n, rod.n_dof)) * 0.3)
    qd = jnp.asarray(rng.normal(size=rod.n_dof))
    w = jnp.asarray(rng.normal(size=rod.n_dof)) * 1e-3
    scalar = lambda q: w @ R.forward_dynamics(rod, q, qd)
    rr = jax.jit(jax.vmap(jax.jacrev(jax.jacrev(scalar))))(Q)
    fr = jax.jit(jax.vmap(jax.jacfwd(jax.jacrev(scalar))))(Q)
    np.testing.assert_allclose(rr, fr, rtol=1e-9, atol=1e-9 * float(jnp.max(jnp.abs(fr))))
    of_jacobian = jax.jit(lambda q: jnp.sum(jnp.tanh(1e-4 * R.forward_dynamics_jacobians(rod, q, qd)[0])))
    grad = jax.jit(jax.grad(of_jacobian))(Q[0])
    h, e = 1e-6, jnp.asarray(rng.normal(size=rod.n_dof))
    central = (of_jacobian(Q[0] + h * e) - of_jacobian(Q[0] - h * e)) / (2 * h)
    np.testing.assert_allclose(grad @ e, central, rtol=1e-6)

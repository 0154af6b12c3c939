"""Plain JAX reference implementations, independent of jaxse3's closed forms, for autodiff oracles.

dexp by its defining series Σ ad^i/(i+1)! (seed 000 eq. (18)), dexp⁻¹ as the matrix inverse of that series, exp by
``jax.scipy.linalg.expm`` of the hat matrix. Differentiating these with jax gives independent derivatives.
"""

import jax.numpy as jnp
from jax.scipy.linalg import expm

N_SERIES = 45  # enough for φ ≤ 3 in float64


def skew(x):
    return jnp.array([[0.0, -x[2], x[1]], [x[2], 0.0, -x[0]], [-x[1], x[0], 0.0]], dtype=x.dtype)


def ad(X):
    if X.shape[-1] == 3:
        return skew(X)
    xt, yt = skew(X[:3]), skew(X[3:])
    return jnp.block([[xt, jnp.zeros((3, 3), X.dtype)], [yt, xt]])


def hat(X):
    if X.shape[-1] == 3:
        return skew(X)
    return jnp.block([[skew(X[:3]), X[3:, None]], [jnp.zeros((1, 4), X.dtype)]])


def vee(M):
    if M.shape[-1] == 3:
        return jnp.array([M[2, 1], M[0, 2], M[1, 0]])
    return jnp.concatenate([vee(M[:3, :3]), M[:3, 3]])


def exp(X):
    return expm(hat(X))


def dexp(X):
    A = ad(X)
    out = P = jnp.eye(A.shape[0], dtype=X.dtype)
    for i in range(1, N_SERIES):
        P = P @ A / (i + 1)
        out = out + P
    return out


def dexp_inv(X):
    return jnp.linalg.inv(dexp(X))


def dexp_from_definition(X, Y):
    """vee((D_X exp)(Y) exp(−X)): the right-trivialised differential by its definition (seed 000 eq. (1))."""
    import jax

    H = exp(X)
    dH = jax.jvp(exp, (X,), (Y,))[1]
    return vee(dH @ jnp.linalg.inv(H))

"""Inverse dynamics, its first derivatives and forward dynamics with the analytical derivatives registered as
``jax.custom_jvp`` rules: the public ``rnea``, ``rnea_derivatives`` and ``forward_dynamics`` of :mod:`jaxse3.rigid`.

The rules chain the orders (seed 002 eqs. (7)–(8), Algorithm 1, digest §6 item 9, §9):

* ``rnea``: τ = ID(q, v, a, f_ext) (:mod:`jaxse3.rigid._rnea`); tangent ``∂τ/∂q δ + ∂τ/∂v dv + M da`` with the
  Jacobians of ``rnea_derivatives``;
* ``rnea_derivatives``: ``(∂τ/∂q, ∂τ/∂v, M)`` by IDSVA FO (:mod:`jaxse3.rigid._rnea_derivatives`); tangent: the
  IDSVA SO tensors contracted with it (:mod:`jaxse3.rigid._rnea_second_order_derivatives`);
* ``forward_dynamics``: a = FD(q, v, τ) (:mod:`jaxse3.rigid._forward_dynamics`); tangent
  ``M⁻¹ (dτ − ∂τ/∂q δ − ∂τ/∂v dv)`` with the Jacobians of ``rnea_derivatives``,

so ``jax.jacfwd``, ``jax.jacrev`` and ``jax.hessian`` of anything built on them run the analytical first- and
second-order algorithms and never differentiate the recursions themselves. They are registered here, above the
first- and second-order modules they combine, so that first-order code never imports second-order code. Tangents of
the model parameters and external forces go through plain autodiff (:func:`jaxse3.lie.tangents.jvp_of_rest`);
quaternion tangents are mapped to tangent coordinates by :func:`jaxse3.rigid._configuration.tangent_of`. Rule
invocations are counted in :data:`jaxse3.lie.tangents.RULE_CALLS` (``"rigid.rnea"``, ``"rigid.rnea_derivatives"``,
``"rigid.forward_dynamics"``).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import jax.scipy.linalg as jsl
from jaxtyping import Array, ArrayLike, Float

from jaxse3.lie.tangents import accumulate, custom_rule, is_zero, jvp_of_rest
from jaxse3.rigid._configuration import tangent_of
from jaxse3.rigid._forward_dynamics import forward_dynamics as _forward_dynamics_plain
from jaxse3.rigid._forward_dynamics_derivatives import check_fd_state
from jaxse3.rigid._model import Model, check_state
from jaxse3.rigid._rnea import _rnea
from jaxse3.rigid._rnea_derivatives import _first_order
from jaxse3.rigid._rnea_second_order_derivatives import second_order_contractions

__all__ = ["rnea", "rnea_derivatives", "forward_dynamics", "ANALYTIC"]

#: the arguments (q, v, a) of rnea-like functions whose tangents the analytical formulas cover; model parameters and
#: external forces go through plain autodiff (:func:`jaxse3.lie.tangents.jvp_of_rest`)
ANALYTIC = (1, 2, 3)


# ---------------------------------------------------------------------------------------------------------------------
# rnea_derivatives: IDSVA FO, with IDSVA SO as its rule


def _rnea_derivatives_jvp(primals, tangents):
    # Second-order formulas as contractions (seed 002 Algorithm 1, digest §9).
    model, q, v, a, f_ext = primals
    _, dq, dv, da, _ = tangents
    out = _first_order(model, q, v, a, f_ext)
    dq = None if is_zero(dq) else tangent_of(model, q, dq)
    d_out = second_order_contractions(
        model, q, v, a, f_ext, dq, None if is_zero(dv) else dv, None if is_zero(da) else da
    )
    d_rest = jvp_of_rest(lambda m, _q, _v, _a, f: _first_order(m, q, v, a, f), primals, tangents, ANALYTIC)
    return out, d_out if d_rest is None else jax.tree.map(jnp.add, d_out, d_rest)


_rnea_derivatives = custom_rule("rigid.rnea_derivatives", _first_order, _rnea_derivatives_jvp)


def rnea_derivatives(
    model: Model,
    q: Float[ArrayLike, " nq"],
    v: Float[ArrayLike, " nv"],
    a: Float[ArrayLike, " nv"],
    f_ext: Float[ArrayLike, "nb 6"] | None = None,
) -> tuple[Float[Array, "nv nv"], Float[Array, "nv nv"], Float[Array, "nv nv"]]:
    """IDSVA FO (seed 002 eqs. (7)–(8)): ``(∂τ/∂q, ∂τ/∂v, M)``, each ``(nv, nv)``, rows = τ.

    ``∂τ/∂q[:, k] = d/dε rnea(model, integrate(q, ε e_k), v, a)`` at ε = 0: the tangent-space derivative with the
    right perturbation of Lie-group joints (their ``v`` are body twists in the child frame). ``∂τ/∂a = M``.
    ``f_ext`` (nb, 6): external wrenches on the bodies in body frames (optional). Differentiable: its ``custom_jvp``
    rule contracts the second-order tensors of :func:`jaxse3.rigid.rnea_second_order_derivatives` with the tangent.
    """
    q, v, a, *f_ext = check_state("rnea_derivatives", model, q, v, a, f_ext)
    return _rnea_derivatives(model, q, v, a, f_ext[0] if f_ext else None)


# ---------------------------------------------------------------------------------------------------------------------
# rnea, with IDSVA FO as its rule


def _rnea_jvp(primals, tangents):
    # dτ = ∂τ/∂q δ + ∂τ/∂v dv + M da (eqs. (7)–(8)); the primal and the Jacobians are the registered functions, so a
    # second derivative of this rule runs the second-order contractions.
    model, q, v, a, f_ext = primals
    _, dq, dv, da, _ = tangents
    tau = _rnea_differentiable(model, q, v, a, f_ext)
    dtau_dq, dtau_dv, M = _rnea_derivatives(model, q, v, a, f_ext)
    rest = jvp_of_rest(lambda m, _q, _v, _a, f: _rnea(m, q, v, a, f), primals, tangents, ANALYTIC)
    terms = [(lambda t: dtau_dq @ tangent_of(model, q, t), dq), (dtau_dv, dv), (M, da)]
    return tau, accumulate(tau, terms, rest)


_rnea_differentiable = custom_rule("rigid.rnea", _rnea, _rnea_jvp)


def rnea(
    model: Model,
    q: Float[ArrayLike, " nq"],
    v: Float[ArrayLike, " nv"],
    a: Float[ArrayLike, " nv"],
    f_ext: Float[ArrayLike, "nb 6"] | None = None,
) -> Float[Array, " nv"]:
    """Inverse dynamics τ = M(q) a + C(q, v) v + g(q) − Σ J_iᵀ f_ext,i, shape (nv,), differentiable by the
    analytical algorithms.

    ``q`` (nq,), ``v`` and ``a`` (nv,) (velocities of spherical/free joints are body twists in the child frame),
    ``f_ext`` (nb, 6): external wrench (moment, force) applied to each body, expressed in the body's frame (about its
    origin), or None. Unbatched: ``jax.vmap`` over states. Gravity is ``model.gravity`` (world frame).

    Its ``custom_jvp`` rule applies IDSVA FO (seed 002 eqs. (7)–(8)) and, through :func:`rnea_derivatives`, IDSVA SO
    for second derivatives, so ``jax.jacfwd``, ``jax.jacrev`` and ``jax.hessian`` never differentiate the recursion
    itself (:func:`jaxse3.rigid.rnea_autodiff` does). Derivatives with respect to the quaternions of spherical/free
    joints are those of the configuration restricted to the manifold (see
    :func:`jaxse3.rigid._configuration.tangent_of`); compose with :func:`jaxse3.rigid.integrate` for tangent-space
    Jacobians.
    """
    q, v, a, *f_ext = check_state("rnea", model, q, v, a, f_ext)
    return _rnea_differentiable(model, q, v, a, f_ext[0] if f_ext else None)


# ---------------------------------------------------------------------------------------------------------------------
# forward_dynamics, with the first-order chain rule as its rule


def _forward_dynamics_jvp(primals, tangents):
    # M da = dτ − ∂τ/∂q δ − ∂τ/∂v dv − ∂τ/∂(model, f_ext)·d(model, f_ext) at a = FD(q, v, τ).
    model, q, v, tau, f_ext = primals
    _, dq, dv, dtau, _ = tangents
    a = _forward_dynamics(model, q, v, tau, f_ext)
    dtau_dq, dtau_dv, M = _rnea_derivatives(model, q, v, a, f_ext)
    rest = jvp_of_rest(lambda m, _q, _v, _tau, f: -_rnea(m, q, v, a, f), primals, tangents, ANALYTIC)
    terms = [(lambda t: t, dtau), (lambda t: -(dtau_dq @ tangent_of(model, q, t)), dq), (lambda t: -(dtau_dv @ t), dv)]
    rhs = accumulate(a, terms, rest)
    return a, jsl.cho_solve(jsl.cho_factor(M), rhs)


_forward_dynamics = custom_rule("rigid.forward_dynamics", _forward_dynamics_plain, _forward_dynamics_jvp)


def forward_dynamics(
    model: Model,
    q: Float[ArrayLike, " nq"],
    v: Float[ArrayLike, " nv"],
    tau: Float[ArrayLike, " nv"],
    f_ext: Float[ArrayLike, "nb 6"] | None = None,
) -> Float[Array, " nv"]:
    """Joint accelerations a (nv,) with ``rnea(q, v, a, f_ext) = τ`` (CRBA and a Cholesky solve), differentiable by
    the analytical algorithms; ``f_ext`` as in :func:`rnea`.

    Its ``custom_jvp`` rule is ``da = M⁻¹ (dτ − ∂τ/∂q δ − ∂τ/∂v dv)`` with IDSVA FO, whose own rule is IDSVA SO, so
    ``jax.jacfwd`` and ``jax.hessian`` of forward dynamics run the analytical algorithms (quaternion tangents as in
    :func:`jaxse3.rigid._configuration.tangent_of`).
    """
    q, v, tau, f_ext = check_fd_state("forward_dynamics", model, q, v, tau, f_ext)
    return _forward_dynamics(model, q, v, tau, f_ext)

"""The dexp and dexp⁻¹ families with their closed-form derivatives registered as ``jax.custom_jvp`` rules.

For each algebra (so(3), se(3)) and each family (``dexp``, ``dexp_inv``), :func:`make_family` builds unbatched
functions whose tangents are the hand-derived closed forms, chained so that second derivatives are closed forms too:

=====================  ======================================  =============================================
function               value                                   custom_jvp tangent (dX, and dZ where present)
=====================  ======================================  =============================================
``matrix(X)``          F(X)                                    ``derivative(X, dX)``
``derivative(X, U)``   (D_X F)(U), eqs. (28)/(29)              ``second_derivative(X, U, dX) + derivative(X, dU)``
``second_derivative``  (D²_X F)(U)(S), eq. (40)                plain JAX (third order by autodiff)
``apply(X, Z)``        F(X) Z                                  ``jacobian(X, Z) dX + apply(X, dZ)``
``jacobian(X, Z)``     ∂(F(X)Z)/∂X, eqs. (36)/(37)             ``jacobian_derivative(X, Z, dX) + jacobian(X, dZ)``
``apply_derivative``   (D_X F)(U) Z = jacobian(X, Z) U,        ``jacobian_derivative(X, Z, dX) U + apply_derivative
(X, U, Z)              matrix-free                             (X, dU, Z) + apply_derivative(X, U, dZ)``
``apply_T(X, Z)``      F(X)ᵀ Z                                 ``jacobian_T(X, Z) dX + apply_T(X, dZ)``
``jacobian_T(X, Z)``   ∂(F(X)ᵀZ)/∂X, eq. (39)                  ``jacobian_T_derivative(X, Z, dX) + …``
``hessian(X, Q, Z)``   Hessian of Qᵀ F(X) Z, eqs. (47)/(51)    autodiff of its block form (third order)
``form(X, Q, Z)``      Qᵀ F(X) Z                               ``form_gradient(X, Q, Z) · dX + …``
``form_gradient``      ∇_X Qᵀ F(X) Z = jacobian(X, Z)ᵀ Q       ``hessian(X, Q, Z) dX + …``
=====================  ======================================  =============================================

So ``jax.jacfwd``/``jax.jacrev`` of any user function of these maps evaluate the first-derivative closed forms, and
``jax.hessian`` (forward over reverse) evaluates ``jacobian_derivative`` — the second-derivative closed form — for the
second order. That Hessian is formed from six directional Jacobians before the contraction with Q (the reverse pass
transposes ``jacobian(X, Z) dX``, so Q enters only afterwards); a scalar written with ``form`` reaches the Q-contracted
closed form (47)/(51) instead, its gradient being a rule of its own. Every rule uses symbolic zeros, so a tangent
that is zero (e.g. dZ when differentiating in X only) costs nothing. The number of rule invocations is counted in
:data:`RULE_CALLS` (at trace time), which the tests use to show that the rules are really used.
"""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace

import jax
import jax.numpy as jnp

from jaxse3.lie import adpoly, coefficients
from jaxse3.lie._algebra import ENTRIES, Algebra
from jaxse3.lie.tangents import RULE_CALLS, accumulate, custom_rule

__all__ = ["make_family", "family_poly", "RULE_CALLS"]


#: coefficients that are constants: passed as Python floats so that zero terms are skipped at trace time
_CONSTANT = {"b1": {"": -0.5, "_bar": 0.0, "_brev": 0.0}}

_NAMES = {"dexp": ("a1", "a2", "a3", "a4"), "dexp_inv": ("b1", "b2", None, "b4")}


def family_poly(
    alg: Algebra,
    X: jnp.ndarray,
    family: str,
    level: int,
    scale: jnp.ndarray | None = None,
    materialise: bool = False,
) -> adpoly.Poly:
    """The exact coefficients (c, c̄, c̆) of dexp (eq. (23)) or dexp⁻¹ at X, up to derivative ``level`` (0, 1, 2);
    with ``scale`` (m,), at every s X (coefficients of shape (m,); the constant ones stay Python floats).

    ``materialise``: computed once into an array that XLA does not fuse into their consumers, for consumers written
    entry by entry (:data:`ENTRIES`). Fused into such a consumer, a coefficient's Taylor polynomial (up to 37 terms
    for dexp⁻¹) is evaluated again for every entry of the output: the dexp⁻¹ Jacobian at batch 10⁵ took 86 ms
    instead of 29 ms. The barrier is a product with the identity, which XLA leaves unfused.
    """
    base = _NAMES[family]
    names = [n for n in base if n is not None and n not in _CONSTANT]
    suffixes = ["", "_bar", "_brev"][: level + 1]
    wanted = [n + s for s in suffixes for n in names]
    t = alg.angle2(X) if scale is None else scale * scale * alg.angle2(X)
    vals = coefficients.evaluate(wanted, t)
    if materialise:
        vals = vals @ jnp.eye(len(wanted), dtype=vals.dtype)
    lookup = dict(zip(wanted, [vals[..., k] for k in range(len(wanted))]))

    def row(suffix: str, lead: float):
        if suffix not in suffixes:
            return (0.0,) * 5
        return (lead,) + tuple(
            0.0 if n is None else _CONSTANT[n][suffix] if n in _CONSTANT else lookup[n + suffix] for n in base
        )

    return adpoly.Poly(row("", 1.0), row("_bar", 0.0), row("_brev", 0.0))


def _rule(name: str, fn: Callable, *partials: Callable) -> Callable:
    """``fn(*args)`` as a custom_jvp rule whose tangent is ``Σ_k partials[k](*args, t_k)`` over the arguments whose
    tangents t_k are not symbolic zeros (each partial linear in its t)."""

    def jvp(primals, tangents):
        out = rule(*primals)
        terms = [(lambda t, p=p: p(*primals, t), t) for p, t in zip(partials, tangents)]
        return out, accumulate(out, terms)

    rule = custom_rule(name, fn, jvp)
    return rule


def make_family(alg: Algebra, family: str) -> SimpleNamespace:
    """Build the registered functions of one family (``"dexp"`` or ``"dexp_inv"``) on one algebra.

    The Jacobians of the evaluation maps and the Hessians run on the algebra's entry-by-entry form
    (:data:`jaxse3.lie._algebra.ENTRIES`): the same recursions, written out as scalar arithmetic that XLA fuses into
    a few vectorised loops under ``vmap`` (2–5× faster at batch 10⁵). The directional derivatives of the Jacobians
    keep the block form: they are differentiated by autodiff for third derivatives, and written out their programs
    were 3–4× larger (XLA compile of a second-order check 0.35 → 1.2 s)."""
    tag = f"{alg.name}.{family}"
    written_out = ENTRIES[alg.name]

    def poly(X, level):
        return family_poly(alg, X, family, level)

    def poly_written_out(X, level):
        return family_poly(alg, X, family, level, materialise=True)

    def second_derivative(X, U, S):
        return adpoly.second_derivative(alg, X, U, S, poly(X, 2))

    derivative = _rule(
        tag + ".derivative",
        lambda X, U: adpoly.derivative(alg, X, U, poly(X, 1)),
        lambda X, U, t: second_derivative(X, U, t),
        lambda X, U, t: derivative(X, t),
    )

    def _matrix_jvp(primals, tangents):
        (X,), (dX,) = primals, tangents
        return matrix(X), derivative(X, dX)

    matrix = custom_rule(tag + ".matrix", lambda X: adpoly.value(alg, X, poly(X, 0)), _matrix_jvp, symbolic_zeros=False)

    def make_eval(transpose: bool):
        kind = "_T" if transpose else ""

        def jacobian_derivative(X, Z, S):
            return adpoly.jacobian_derivative(alg, X, Z, S, poly(X, 2), transpose)

        jacobian = _rule(
            tag + ".jacobian" + kind,
            lambda X, Z: adpoly.jacobian(written_out, X, Z, poly_written_out(X, 1), transpose),
            jacobian_derivative,
            lambda X, Z, t: jacobian(X, t),
        )
        apply = _rule(
            tag + ".apply" + kind,
            lambda X, Z: adpoly.apply(alg, X, Z, poly(X, 0), transpose),
            lambda X, Z, t: jacobian(X, Z) @ t,
            lambda X, Z, t: apply(X, t),
        )
        return apply, jacobian, jacobian_derivative

    apply, jacobian, jacobian_derivative = make_eval(False)
    apply_derivative = _rule(
        tag + ".apply_derivative",
        lambda X, U, Z: adpoly.apply_derivative(alg, X, Z, U, poly(X, 1)),
        lambda X, U, Z, t: jacobian_derivative(X, Z, t) @ U,
        lambda X, U, Z, t: apply_derivative(X, t, Z),
        lambda X, U, Z, t: apply_derivative(X, U, t),
    )
    apply_T, jacobian_T, jacobian_T_derivative = make_eval(True)

    def hessian_blocks(X, Q, Z):
        return adpoly.hessian(alg, X, Q, Z, poly(X, 2))

    def _hessian_jvp(primals, tangents):  # third order: autodiff of the block form, a program a third the size
        return jax.jvp(hessian_blocks, primals, tangents)  # its primal too, rather than a second one written out

    hessian = custom_rule(
        tag + ".hessian",
        lambda X, Q, Z: adpoly.hessian(written_out, X, Q, Z, poly_written_out(X, 2)),
        _hessian_jvp,
        symbolic_zeros=False,
    )

    form_gradient = _rule(  # ∇_X Qᵀ F(X) Z, its X-tangent the Q-contracted Hessian
        tag + ".form_gradient",
        lambda X, Q, Z: jacobian(X, Z).T @ Q,
        lambda X, Q, Z, t: hessian(X, Q, Z) @ t,
        lambda X, Q, Z, t: jacobian(X, Z).T @ t,
        lambda X, Q, Z, t: jacobian(X, t).T @ Q,
    )
    form = _rule(
        tag + ".form",
        lambda X, Q, Z: Q @ apply(X, Z),
        lambda X, Q, Z, t: form_gradient(X, Q, Z) @ t,
        lambda X, Q, Z, t: t @ apply(X, Z),
        lambda X, Q, Z, t: Q @ apply(X, t),
    )

    return SimpleNamespace(
        form=form,
        matrix=matrix,
        derivative=derivative,
        second_derivative=second_derivative,
        apply=apply,
        apply_derivative=apply_derivative,
        jacobian=jacobian,
        jacobian_derivative=jacobian_derivative,
        apply_T=apply_T,
        jacobian_T=jacobian_T,
        jacobian_T_derivative=jacobian_T_derivative,
        hessian=hessian,
    )

"""Batched, shape-checked public functions of the dexp family, built once per algebra for :mod:`so3` and :mod:`se3`."""

from __future__ import annotations

from types import SimpleNamespace

from jaxse3.lie._algebra import Algebra
from jaxse3.lie.rules import make_family
from jaxse3.lie.shapes import batched


def _doc(fn, text: str):
    fn.__doc__ = text
    return fn


def build(alg: Algebra) -> SimpleNamespace:
    """Public dexp/dexp⁻¹ functions for ``alg``: vectors ``(..., n)``, matrices ``(..., n, n)``, n = alg.dim."""
    n = alg.dim
    v, vv, vvv, m = f"({n})", f"({n}),({n})", f"({n}),({n}),({n})", f"({n},{n})"
    fam = {name: make_family(alg, name) for name in ("dexp", "dexp_inv")}
    out = {}
    for name, f in fam.items():
        inv = name == "dexp_inv"
        sym = "dexp_X⁻¹" if inv else "dexp_X"
        eq = (
            {"mat": "(22)", "d": "(29)", "d2": "(40), (43), (45)", "jac": "(37)", "hess": "(51)"}
            if inv
            else {"mat": "(21), (23)", "d": "(28), (30)–(31)", "d2": "(40)–(46)", "jac": "(36)", "hess": "(47)–(50)"}
        )

        out[name] = _doc(
            batched(f"{v}->{m}", ("X",), name)(f.matrix),
            f"""{sym} ({n}×{n}), right-trivialised (seed 000 eq. {eq["mat"]}).

        Args:
            X: algebra coordinates ``(..., {n})``{", rotation part first" if n == 6 else ""}.
        Returns:
            ``(..., {n}, {n})``. Carries a custom_jvp rule whose tangent is ``d_{name}``.""",
        )
        out["d_" + name] = _doc(
            batched(f"{vv}->{m}", ("X", "U"), "d_" + name)(f.derivative),
            f"""(D_X {sym})(U): directional derivative (seed 000 eq. {eq["d"]}).

        Args:
            X, U: ``(..., {n})``.
        Returns:
            ``(..., {n}, {n})``. Its custom_jvp rule evaluates ``d2_{name}`` (closed-form second derivative).""",
        )
        out["d2_" + name] = _doc(
            batched(f"{vvv}->{m}", ("X", "U", "S"), "d2_" + name)(f.second_derivative),
            f"""(D²_X {sym})(U)(S), symmetric in U and S (seed 000 eq. {eq["d2"]}).

        Args:
            X, U, S: ``(..., {n})``.
        Returns:
            ``(..., {n}, {n})``.""",
        )
        out[name + "_apply"] = _doc(
            batched(f"{vv}->{v}", ("X", "Z"), name + "_apply")(f.apply),
            f"""Evaluation map X ↦ {sym} Z.

        Args:
            X, Z: ``(..., {n})``.
        Returns:
            ``(..., {n})``. Custom_jvp rule: ``{name}_jac(X, Z) dX + {name}_apply(X, dZ)``, itself differentiable in
            closed form, so ``jax.jacfwd``/``jacrev``/``hessian`` run the hand-derived formulas.""",
        )
        out["d_" + name + "_apply"] = _doc(
            batched(f"{vvv}->{v}", ("X", "U", "Z"), "d_" + name + "_apply")(f.apply_derivative),
            f"""(D_X {sym})(U) Z = ``d_{name}(X, U) @ Z = {name}_jac(X, Z) @ U``, matrix-free.

        By matrix-vector products only (no {n}×{n} matrix is formed): the cheap way to differentiate
        ``{name}_apply(X, Z)`` along one direction (e.g. the rate of ``{sym} Z`` along a curve X(t)).

        Args:
            X, U, Z: ``(..., {n})``.
        Returns:
            ``(..., {n})``. Custom_jvp rule: ``{name}_jac_dir(X, Z, dX) @ U`` plus itself in dU and dZ (closed
            forms).""",
        )
        out[name + "_jac"] = _doc(
            batched(f"{vv}->{m}", ("X", "Z"), name + "_jac")(f.jacobian),
            f"""∂({sym} Z)/∂X, rows = outputs (seed 000 eq. {eq["jac"]}).

        Args:
            X, Z: ``(..., {n})``.
        Returns:
            ``(..., {n}, {n})``; ``{name}_jac(X, Z) @ U == d_{name}(X, U) @ Z``.""",
        )
        out[name + "_jac_dir"] = _doc(
            batched(f"{vvv}->{m}", ("X", "Z", "S"), name + "_jac_dir")(f.jacobian_derivative),
            f"""Directional derivative of ``{name}_jac(X, Z)`` along S: the matrix U ↦ (D²_X {sym})(U)(S) Z.

        The S-contraction of the Hessian (seed 000 eq. {eq["hess"]}): ``Q @ {name}_jac_dir(X, Z, S) == {name}_hess(X,
        Q, Z) @ S``.
        Used as the custom_jvp tangent of ``{name}_jac``.""",
        )
        out[name + "_hess"] = _doc(
            batched(f"{vvv}->{m}", ("X", "Q", "Z"), name + "_hess")(f.hessian),
            f"""Hessian of h(X) = Qᵀ {sym} Z (seed 000 eq. {eq["hess"]}), symmetric.

        Args:
            X, Q, Z: ``(..., {n})``.
        Returns:
            ``(..., {n}, {n})`` with ``H[i, j] = ∂²h/∂X_i∂X_j`` and ``Sᵀ H U = Qᵀ (D²{sym})(U)(S) Z``.""",
        )
        out[name + "_form"] = _doc(
            batched(f"{vvv}->()", ("X", "Q", "Z"), name + "_form")(f.form),
            f"""h(X, Q, Z) = Qᵀ {sym} Z, whose second derivatives are closed forms (seed 000 eq. {eq["hess"]}).

        Write a scalar of the map with this function rather than ``Q @ {name}_apply(X, Z)`` when its Hessian is
        wanted: ``jax.grad`` runs ``{name}_jac(X, Z)ᵀ Q`` and ``jax.hessian`` (forward over reverse) the Q-contracted
        ``{name}_hess(X, Q, Z)`` through a rule on that gradient, where through ``{name}_apply`` it would form six
        directional Jacobians first. Derivatives in Q and Z are linear.

        Args:
            X, Q, Z: ``(..., {n})``.
        Returns:
            ``(...)``.""",
        )
        tname = "dexp_invT" if inv else "dexpT"
        out[tname + "_apply"] = _doc(
            batched(f"{vv}->{v}", ("X", "Z"), tname + "_apply")(f.apply_T),
            f"""Evaluation map X ↦ {sym}ᵀ Z (custom_jvp, like ``{name}_apply``).""",
        )
        out[tname + "_jac"] = _doc(
            batched(f"{vv}->{m}", ("X", "Z"), tname + "_jac")(f.jacobian_T),
            f"""∂({sym}ᵀ Z)/∂X (seed 000 eq. (39){" with a → b" if inv else ""});
            custom_jvp via ``{tname}_jac_dir``.""",
        )
        out[tname + "_jac_dir"] = _doc(
            batched(f"{vvv}->{m}", ("X", "Z", "S"), tname + "_jac_dir")(f.jacobian_T_derivative),
            f"""Directional derivative of ``{tname}_jac(X, Z)`` along S.""",
        )
    return SimpleNamespace(**out)

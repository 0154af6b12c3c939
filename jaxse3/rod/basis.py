"""Strain bases Φ(X) of the Geometric Variable Strain (GVS) model: ξ(X) = Φ(X) q + ξ*(X) (seed 003, eq. (1)).

The six strain components are ordered angular first (docs/conventions.md): ``(torsion, bend y, bend z, elongation,
shear y,
shear z)`` — the paper's order too (digest 003 §1.1). Each component gets its own polynomial order; order ``n`` gives
``n + 1`` modes and ``None`` switches the component off (Kirchhoff rods: no shear; inextensible Kirchhoff rods: angular
components only). Φ(X) is block-diagonal: the modes of component i fill row i, components stacked in the order above.

* :class:`LegendreBasis` — unnormalised Legendre polynomials P_j(2X/L − 1), the basis of the paper's examples (SoRoSim's
  ``Phi_LegendrePolynomial``).
* :class:`MonomialBasis` — (X/L)^j.
* :class:`UserBasis` — any function ``X ↦ Φ(X)`` of shape (6, n_dof), given with its n_dof.

A basis is a static object (its orders are structure); ``basis(X, length)`` evaluates Φ at an array of abscissae.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import equinox as eqx
import jax
import jax.numpy as jnp

__all__ = ["StrainBasis", "LegendreBasis", "MonomialBasis", "UserBasis", "STRAIN_NAMES"]

STRAIN_NAMES = ("torsion", "bend_y", "bend_z", "elongation", "shear_y", "shear_z")


def _check_orders(orders: Sequence[int | None], who: str) -> tuple[int | None, ...]:
    orders = tuple(orders)
    if len(orders) != 6:
        raise ValueError(f"{who}: 'orders' must give one order per strain component {STRAIN_NAMES}, got {orders}")
    for o in orders:
        if o is not None and (not isinstance(o, int) or o < 0):
            raise ValueError(f"{who}: each order must be a non-negative int or None (switched off), got {orders}")
    if all(o is None for o in orders):
        raise ValueError(f"{who}: at least one strain component must be active")
    return orders


def _legendre(s: jax.Array, n: int) -> jax.Array:
    """P_0..P_n at s (Bonnet's recursion), shape (n + 1,) + s.shape."""
    p = [jnp.ones_like(s), s]
    for k in range(1, n):
        p.append(((2 * k + 1) * s * p[k] - k * p[k - 1]) / (k + 1))
    return jnp.stack(p[: n + 1])


def _monomials(s: jax.Array, n: int) -> jax.Array:
    return jnp.stack([s**j for j in range(n + 1)])


class StrainBasis(eqx.Module):
    """Abstract strain basis: ``__call__(X, length) -> Φ`` of shape ``X.shape + (6, n_dof)``."""

    n_dof: eqx.AbstractVar[int]

    def __call__(self, X: jax.Array, length: jax.Array) -> jax.Array:
        raise NotImplementedError


class _PolynomialBasis(StrainBasis):
    orders: tuple[int | None, ...] = eqx.field(static=True)
    n_dof: int = eqx.field(static=True)

    def __init__(self, orders: Sequence[int | None]):
        self.orders = _check_orders(orders, type(self).__name__)
        self.n_dof = sum(o + 1 for o in self.orders if o is not None)

    def _modes(self, s: jax.Array, n: int) -> jax.Array:
        raise NotImplementedError

    def _abscissa(self, X: jax.Array, length: jax.Array) -> jax.Array:
        raise NotImplementedError

    def __call__(self, X: jax.Array, length: jax.Array) -> jax.Array:
        X = jnp.asarray(X, dtype=jnp.result_type(float))
        s = self._abscissa(X, length)
        Phi = jnp.zeros(X.shape + (6, self.n_dof), X.dtype)
        col = 0
        for i, o in enumerate(self.orders):
            if o is None:
                continue
            Phi = Phi.at[..., i, col : col + o + 1].set(jnp.moveaxis(self._modes(s, o), 0, -1))
            col += o + 1
        return Phi


class LegendreBasis(_PolynomialBasis):
    """Legendre basis P_j(2X/L − 1), j = 0..order, per strain component (seed 003 examples; digest §1.1).

    Args:
        orders: six orders ``(torsion, bend_y, bend_z, elongation, shear_y, shear_z)``; ``None`` switches one off.
            The CDM of seed 003 §4.5 uses ``(4, 4, 4, 2, 2, 2)`` (24 DoF).
    """

    def _abscissa(self, X, length):
        return 2.0 * X / length - 1.0

    def _modes(self, s, n):
        return _legendre(s, n)


class MonomialBasis(_PolynomialBasis):
    """Monomial basis (X/L)^j, j = 0..order, per strain component; ``None`` switches one off."""

    def _abscissa(self, X, length):
        return X / length

    def _modes(self, s, n):
        return _monomials(s, n)


class UserBasis(StrainBasis):
    """A user-supplied basis: ``fn(X, length) -> (6, n_dof)`` for a scalar X (vectorised here).

    ``fn`` must be a pure JAX function (it is traced); it is a static field, so use a module-level function or a
    callable that compares equal across calls to avoid recompilation.
    """

    fn: Callable = eqx.field(static=True)
    n_dof: int = eqx.field(static=True)

    def __init__(self, fn: Callable, n_dof: int):
        if not callable(fn):
            raise TypeError(f"UserBasis: 'fn' must be callable (X, length) -> (6, n_dof), got {type(fn).__name__}")
        if isinstance(n_dof, bool) or not isinstance(n_dof, int) or n_dof < 1:
            raise ValueError(f"UserBasis: 'n_dof' must be a positive int, got {n_dof!r}")
        self.fn, self.n_dof = fn, int(n_dof)

    def __call__(self, X: jax.Array, length: jax.Array) -> jax.Array:
        X = jnp.asarray(X, dtype=jnp.result_type(float))
        out_shape = jax.eval_shape(self.fn, X.reshape(-1)[0], length).shape
        if out_shape != (6, self.n_dof):
            raise ValueError(f"UserBasis: fn(X, length) must return shape (6, {self.n_dof}), got {out_shape}")
        flat = jax.vmap(lambda x: self.fn(x, length))(X.reshape(-1))
        return flat.reshape(X.shape + (6, self.n_dof))

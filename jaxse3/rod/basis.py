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
* :class:`PiecewiseConstantBasis` — the piecewise constant strain (PCS) model: one indicator per segment and active
  component (use it with ``Rod(..., n_segments=...)`` so that the quadrature and the Magnus intervals follow the
  segments).

A basis is a static object (its orders are structure); ``basis(X, length)`` evaluates Φ at an array of abscissae.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["StrainBasis", "LegendreBasis", "MonomialBasis", "UserBasis", "PiecewiseConstantBasis", "STRAIN_NAMES"]

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


def _check_components(components: Sequence[str | int], who: str) -> tuple[int, ...]:
    if isinstance(components, (str, int)):
        components = (components,)
    out = []
    for c in components:
        if isinstance(c, str) and c in STRAIN_NAMES:
            out.append(STRAIN_NAMES.index(c))
        elif isinstance(c, int) and not isinstance(c, bool) and 0 <= c < 6:
            out.append(c)
        else:
            raise ValueError(
                f"{who}: each of 'components' must be a strain name {STRAIN_NAMES} or an index 0..5, got {c!r}"
            )
    if not out:
        raise ValueError(f"{who}: 'components' must name at least one strain component")
    if len(set(out)) != len(out):
        raise ValueError(f"{who}: 'components' must not repeat a strain component, got {tuple(components)}")
    return tuple(out)


class PiecewiseConstantBasis(StrainBasis):
    """Piecewise constant strain (PCS): the rod is cut into ``n_segments`` equal segments and every active strain
    component is constant on each of them.

    Segment i covers ``[i L/n, (i + 1) L/n)``; the tip X = L belongs to the last segment. A segment end
    ``X = i L/n`` (0 < i < n), where the strain jumps, therefore takes the value of the segment it opens (the one on its
    right); the segment ends are compared with the same floating-point expression ``i * L / n`` that
    :func:`~jaxse3.rod.geometry.segment_gauss_points` uses, so a computational point at a segment end is classified
    consistently. Only the Gauss and Magnus collocation points enter the model: on a rod built with the same
    ``n_segments`` (``Rod(..., n_segments=n)``) every Magnus interval lies inside one segment and its collocation
    nodes lie strictly inside the interval, so they pick the segment of their interval; the value at a segment end
    has zero quadrature weight.

    Columns are ordered segment by segment, the components of a segment in the order given: mode
    ``i * len(components) + j`` is component ``components[j]`` on segment i (as SoRoMoX orders its PCS coordinates).

    Args:
        n_segments: number of segments n ≥ 1.
        components: the active strain components, names from :data:`STRAIN_NAMES` (``"torsion"``, ``"bend_y"``,
            ``"bend_z"``, ``"elongation"``, ``"shear_y"``, ``"shear_z"``) or indices 0..5, e.g.
            ``("bend_z", "elongation", "shear_y")`` for a planar rod; default all six.
    """

    n_segments: int = eqx.field(static=True)
    components: tuple[int, ...] = eqx.field(static=True)
    n_dof: int = eqx.field(static=True)

    def __init__(self, n_segments: int, components: Sequence[str | int] = STRAIN_NAMES):
        if isinstance(n_segments, bool) or not isinstance(n_segments, int) or n_segments < 1:
            raise ValueError(f"PiecewiseConstantBasis: 'n_segments' must be a positive int, got {n_segments!r}")
        self.n_segments = n_segments
        self.components = _check_components(components, "PiecewiseConstantBasis")
        self.n_dof = n_segments * len(self.components)

    def segment_index(self, X: jax.Array, length: jax.Array) -> jax.Array:
        """The segment (int, X.shape) each abscissa belongs to: the number of interior segment ends ``i L/n <= X``."""
        X = jnp.asarray(X, dtype=jnp.result_type(float))
        ends = jnp.arange(1, self.n_segments, dtype=X.dtype) * length / self.n_segments
        return jnp.sum(X[..., None] >= ends, axis=-1)

    def __call__(self, X: jax.Array, length: jax.Array) -> jax.Array:
        X = jnp.asarray(X, dtype=jnp.result_type(float))
        on = jax.nn.one_hot(self.segment_index(X, length), self.n_segments, dtype=X.dtype)  # X.shape + (n,)
        m = len(self.components)
        pick = np.zeros((6, m))
        pick[list(self.components), np.arange(m)] = 1.0
        Phi = on[..., None, :, None] * jnp.asarray(pick, X.dtype)[:, None, :]  # X.shape + (6, n, m)
        return Phi.reshape(X.shape + (6, self.n_dof))

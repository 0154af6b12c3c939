"""Small vectors and matrices held entry by entry, for the closed-form Jacobians and Hessians of the Lie maps.

The recursions of :mod:`jaxse3.lie.adpoly` multiply 3×3 and 6×6 matrices. Under ``jax.vmap`` each such product is a
batched ``dot_general`` (or, written out, a loop over (batch, 3, 3) arrays with broadcast operands), and XLA:CPU runs
neither well at small sizes: a batch of 10⁵ Jacobians of dexp_X Z spent ~1 µs per element in a handful of such loops.
:class:`Entries` holds the same matrices as nested tuples of scalars instead, so every product is written out as
scalar multiply–adds. Under ``vmap`` each scalar is a contiguous (batch,) array, and XLA fuses the whole recursion into
a few elementwise loops that vectorise along the batch. Known zeros are Python ``0.0`` and their products are skipped
while tracing, so the sparsity of ad_X (18 of 36 entries on se(3)) and of the first terms of the recursions costs
nothing. Only the result is stacked into an array (:meth:`Entries.dense`).

The price is a longer traced program (each entry is an operation), so the library uses this form only where the
speed of the closed forms is the point and autodiff rarely passes through it: the Jacobians of the evaluation maps
(whose derivatives are rules of their own) and the Hessians (:mod:`jaxse3.lie.rules`). Internal to a function: never
passed across ``jit`` or returned.
"""

from __future__ import annotations

from collections.abc import Sequence

import jax.numpy as jnp

Entry = float | jnp.ndarray  # a scalar; the Python float 0.0 is a known zero


def _zero(a: Entry) -> bool:
    return isinstance(a, (int, float)) and a == 0


def _mul(a: Entry, b: Entry) -> Entry:
    return 0.0 if _zero(a) or _zero(b) else a * b


def _add(a: Entry, b: Entry) -> Entry:
    return b if _zero(a) else a if _zero(b) else a + b


def _sum(terms: Sequence[Entry]) -> Entry:
    out: Entry = 0.0
    for t in terms:
        out = _add(out, t)
    return out


def _neg(a: Entry) -> Entry:
    return 0.0 if _zero(a) else -a


class Entries:
    """A vector (tuple of entries) or a matrix (tuple of rows) of scalar entries, with the arithmetic that the
    ad-polynomial recursions use: ``@`` (with another :class:`Entries` or an array), ``+``, ``−``, scalar ``*``,
    ``.T``, integer and slice indexing of vectors, and :meth:`dense`."""

    __slots__ = ("dtype", "e")

    def __init__(self, e: tuple, dtype: jnp.dtype):
        self.e, self.dtype = e, dtype

    @classmethod
    def of(cls, x: jnp.ndarray | Entries) -> Entries:
        """The entries of a 1-D or 2-D array (an :class:`Entries` is returned unchanged)."""
        if isinstance(x, Entries):
            return x
        if x.ndim == 1:
            return cls(tuple(x[i] for i in range(x.shape[0])), x.dtype)
        return cls(tuple(tuple(x[i, j] for j in range(x.shape[1])) for i in range(x.shape[0])), x.dtype)

    @property
    def matrix(self) -> bool:
        return isinstance(self.e[0], tuple)

    @property
    def shape(self) -> tuple[int, ...]:
        return (len(self.e), len(self.e[0])) if self.matrix else (len(self.e),)

    def dense(self) -> jnp.ndarray:
        """The entries stacked into an array (known zeros filled in)."""
        z = jnp.zeros((), self.dtype)

        def vec(row):
            return jnp.stack([z if _zero(a) else jnp.asarray(a, self.dtype) for a in row])

        return jnp.stack([vec(r) for r in self.e]) if self.matrix else vec(self.e)

    @property
    def T(self) -> Entries:
        return Entries(tuple(zip(*self.e)), self.dtype)

    def __getitem__(self, i):
        return Entries(self.e[i], self.dtype) if isinstance(i, slice) else self.e[i]

    def _map(self, f) -> Entries:
        if self.matrix:
            return Entries(tuple(tuple(f(a) for a in r) for r in self.e), self.dtype)
        return Entries(tuple(f(a) for a in self.e), self.dtype)

    def _zip(self, other: Entries, f) -> Entries:
        if self.matrix:
            return Entries(tuple(tuple(map(f, r, s)) for r, s in zip(self.e, other.e)), self.dtype)
        return Entries(tuple(map(f, self.e, other.e)), self.dtype)

    def __matmul__(self, other):
        o = Entries.of(other)
        if o.matrix:
            cols = o.T.e
            return Entries(tuple(tuple(_dot(r, c) for c in cols) for r in self.e), self.dtype)
        return Entries(tuple(_dot(r, o.e) for r in self.e), self.dtype)

    def __rmatmul__(self, other):  # array @ Entries
        o = Entries.of(other)
        if o.matrix:
            return o @ self
        return self.T @ o if self.matrix else _dot(o.e, self.e)

    def __add__(self, other):
        if isinstance(other, Entries):
            return self._zip(other, _add)
        if _zero(other):
            return self
        return self.dense() + other

    __radd__ = __add__

    def __sub__(self, other):
        return self + (-other)

    def __neg__(self) -> Entries:
        return self._map(_neg)

    def __mul__(self, c) -> Entries:  # by a scalar
        return self._map(lambda a: _mul(c, a))

    __rmul__ = __mul__


def _dot(a: Sequence[Entry], b: Sequence[Entry]) -> Entry:
    return _sum([_mul(x, y) for x, y in zip(a, b)])


def skew(x: jnp.ndarray | Entries) -> tuple:
    """The rows of x̃ from the three entries x[0], x[1], x[2] (x an array or an :class:`Entries` vector)."""
    x0, x1, x2 = x[0], x[1], x[2]
    return ((0.0, _neg(x2), x1), (x2, 0.0, _neg(x0)), (_neg(x1), x0, 0.0))


def blocks(m11: tuple, m12: tuple, m21: tuple, m22: tuple) -> tuple:
    """The rows of the 6×6 matrix [[m11, m12], [m21, m22]] from the rows of its 3×3 blocks."""
    return tuple(r + s for r, s in zip(m11, m12)) + tuple(r + s for r, s in zip(m21, m22))


ZERO3 = ((0.0,) * 3,) * 3

"""The two Lie algebras as data: so(3) (3 coordinates) and se(3) (6 coordinates, rotation first).

Everything in :mod:`jaxse3.lie.adpoly` is written once for "a matrix Lie algebra whose ad-matrix satisfies
ad⁵ = −2φ²ad³ − φ⁴ad with φ = ‖rotation part‖" (seed 000 §3); so(3) (ad_x = x̃) and se(3) (ad_X = [[x̃,0],[ỹ,x̃]])
both do. This module holds the few algebra-specific pieces: ad, adbar, and the embedding of the rotation part.
All functions here act on single (unbatched) vectors; batching is done by :func:`jaxse3.lie.shapes.batched`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from jaxse3.lie import _entries
from jaxse3.lie._entries import Entries

_PICK = jax.lax.GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(0,), start_index_map=(0,))


def _signed_entries(x: jnp.ndarray, index: np.ndarray) -> jnp.ndarray:
    """The entries ``(x, −x, 0)[index]`` as one gather: a matrix whose entries are coordinates of x, their negatives or
    zeros (``index`` a constant into the 2n + 1 values).

    skew, ad and adbar are in nearly every program jaxse3 builds, and the size of a program is what tracing and XLA
    compile. Gathered, ad_X lowers to 8 operations instead of 41 as blocks of x₁E₁ + x₂E₂ + x₃E₃ (constant generators
    Eₖ), its gradient to 22 instead of 97, and the fin-ray finger's Jacobian program to 15.4k operations instead of
    20.9k (trace and lowering 4.5 → 3.4 s). The programs run as fast: interleaved in one process, the vmapped rods'
    forward dynamics and Jacobians within 2 %, the CDM's and the finger's at batch 1 within the noise (±5 %). (A
    product with a constant (n, 3, 3) tensor is as short, but XLA:CPU cannot fuse it into the products it feeds.)"""
    values = jnp.concatenate([x, -x, jnp.zeros(1, x.dtype)])
    return jax.lax.gather(
        values,
        index.reshape(-1, 1),
        _PICK,
        slice_sizes=(1,),
        mode=jax.lax.GatherScatterMode.PROMISE_IN_BOUNDS,
    ).reshape(index.shape)


def _skew_index(n: int, offset: int) -> list[list[int]]:
    """Indices into (x, −x, 0) (x of size n) of the skew matrix of x[offset : offset + 3]."""
    zero, a, b, c = 2 * n, offset, offset + 1, offset + 2
    return [[zero, n + c, b], [c, zero, n + a], [n + b, a, zero]]


def _blocks(*rows: list) -> np.ndarray:
    """The index matrix of a 6×6 matrix of 3×3 blocks into a 6-vector's (x, −x, 0) (None: a zero block)."""
    zero = np.full((3, 3), 12)
    return np.block([[zero if b is None else np.asarray(b) for b in row] for row in rows]).astype(np.int32)


_SKEW_INDEX = np.asarray(_skew_index(3, 0), np.int32)
_AD6_INDEX = _blocks([_skew_index(6, 0), None], [_skew_index(6, 3), _skew_index(6, 0)])  # [[x̃, 0], [ỹ, x̃]]
_ADBAR6_INDEX = _blocks([_skew_index(6, 0), _skew_index(6, 3)], [_skew_index(6, 3), None])  # [[ũ, ṽ], [ṽ, 0]]


def skew(x: jnp.ndarray) -> jnp.ndarray:
    """x̃ with x̃ z = x × z (seed 000 eq. (3)); x has shape (3,)."""
    return _signed_entries(x, _SKEW_INDEX)


def unskew(m: jnp.ndarray) -> jnp.ndarray:
    """Inverse of :func:`skew` applied to the skew-symmetric part of m (3×3)."""
    return 0.5 * jnp.array([m[2, 1] - m[1, 2], m[0, 2] - m[2, 0], m[1, 0] - m[0, 1]])


def _ad6(X: jnp.ndarray) -> jnp.ndarray:
    """ad_X = [[x̃, 0], [ỹ, x̃]] (seed 000 eq. (19)): ad_X Y = vee([X̂, Ŷ])."""
    return _signed_entries(X, _AD6_INDEX)


def _adbar6(U: jnp.ndarray) -> jnp.ndarray:
    """adbar_U = [[ũ, ṽ], [ṽ, 0]] (seed 000 eq. (38)), defined by ad_Xᵀ U = adbar_U X."""
    return _signed_entries(U, _ADBAR6_INDEX)


class AdForm:
    """A 6×6 matrix of the form [[a, 0], [b, a]] (3×3 blocks a, b), as every polynomial in ad_X and ad_U on se(3) is.

    Products of such matrices stay in the form and cost three 3×3 products instead of a dense 6×6 one
    ((a, b)(c, d) = (ac, bc + ad)); applied to a vector Z = (z₁, z₂) it gives (a z₁, b z₁ + a z₂). The ad-polynomial
    recursions of :mod:`jaxse3.lie.adpoly` run unchanged on it (``@``, ``+``, ``−``, scalar ``*``); anything else
    (a dense matrix, ``.T``) falls back to :meth:`dense`. Internal to a function: never passed across ``jit``.
    """

    __slots__ = ("a", "b")
    shape = (6, 6)

    def __init__(self, a: jnp.ndarray, b: jnp.ndarray):
        self.a, self.b = a, b

    @property
    def dtype(self) -> jnp.dtype:
        return self.a.dtype

    def dense(self) -> jnp.ndarray:
        return jnp.block([[self.a, jnp.zeros_like(self.a)], [self.b, self.a]])

    @property
    def T(self) -> jnp.ndarray:
        return self.dense().T

    def __matmul__(self, other):
        if isinstance(other, AdForm):
            return AdForm(self.a @ other.a, self.b @ other.a + self.a @ other.b)
        top, low = other[:3], other[3:]
        return jnp.concatenate([self.a @ top, self.b @ top + self.a @ low])

    def __rmatmul__(self, other):
        return other @ self.dense()

    def __add__(self, other):
        if isinstance(other, AdForm):
            return AdForm(self.a + other.a, self.b + other.b)
        if isinstance(other, (int, float)) and other == 0:
            return self
        return self.dense() + other

    __radd__ = __add__

    def __sub__(self, other):
        return self + (-other)

    def __neg__(self):
        return AdForm(-self.a, -self.b)

    def __mul__(self, c):  # by a scalar
        return AdForm(c * self.a, c * self.b)

    __rmul__ = __mul__


def dense(m: AdForm | Entries | jnp.ndarray) -> jnp.ndarray:
    """``m`` as a dense array (an :class:`AdForm` or :class:`Entries` expanded, anything else unchanged)."""
    return m.dense() if isinstance(m, (AdForm, Entries)) else m


def _ad6_form(X: jnp.ndarray) -> AdForm:
    """ad_X as an :class:`AdForm`: (x̃, ỹ)."""
    return AdForm(skew(X[:3]), skew(X[3:]))


def _rot6(X: jnp.ndarray) -> jnp.ndarray:
    """x₀ = (x, 0) ∈ R⁶: the rotation part, padded (seed 000 Lemma 4.6)."""
    return jnp.concatenate([X[:3], jnp.zeros_like(X[3:])])


@dataclass(frozen=True)
class Algebra:
    """Algebra-specific pieces used by the generic ad-polynomial formulas."""

    name: str
    dim: int
    ad: Callable[[jnp.ndarray], jnp.ndarray]
    adbar: Callable[[jnp.ndarray], jnp.ndarray]
    rot: Callable[[jnp.ndarray], jnp.ndarray]  # x₀: the rotation part embedded in the algebra's coordinates
    rot_projector: Callable[[jnp.ndarray], jnp.ndarray]  # I₀ = ∂x₀/∂X (dtype taken from the argument)
    ad_form: Callable  # ad_X in the structured form the recursions multiply (se(3): AdForm; so(3): x̃)

    def angle2(self, X: jnp.ndarray) -> jnp.ndarray:
        """t = φ² = ‖x‖², the only quantity the coefficients depend on."""
        x = X[:3]
        return jnp.dot(x, x)


# so(3): ad_x = x̃ and ad_xᵀ u = −x̃u = ũx, so adbar_u = ũ.
SO3 = Algebra(
    name="so3",
    dim=3,
    ad=skew,
    adbar=skew,
    rot=lambda x: x,
    rot_projector=lambda x: jnp.eye(3, dtype=x.dtype),
    ad_form=skew,
)

SE3 = Algebra(
    name="se3",
    dim=6,
    ad=_ad6,
    adbar=_adbar6,
    rot=_rot6,
    rot_projector=lambda X: jnp.diag(jnp.array([1, 1, 1, 0, 0, 0], dtype=X.dtype)),
    ad_form=_ad6_form,
)


def _ad3_entries(x) -> Entries:
    return Entries(_entries.skew(x), x.dtype)


def _ad6_entries(X) -> Entries:
    xt, yt = _entries.skew(X[:3]), _entries.skew(X[3:])
    return Entries(_entries.blocks(xt, _entries.ZERO3, yt, xt), X.dtype)


def _adbar6_entries(U) -> Entries:
    ut, vt = _entries.skew(U[:3]), _entries.skew(U[3:])
    return Entries(_entries.blocks(ut, vt, vt, _entries.ZERO3), U.dtype)


#: The same algebras with ad and adbar held entry by entry (:mod:`jaxse3.lie._entries`): the recursions of
#: :mod:`jaxse3.lie.adpoly` run unchanged on them as written-out scalar arithmetic.
ENTRIES = {
    "so3": dataclasses.replace(SO3, ad=_ad3_entries, adbar=_ad3_entries, ad_form=_ad3_entries),
    "se3": dataclasses.replace(SE3, ad=_ad6_entries, adbar=_adbar6_entries, ad_form=_ad6_entries),
}

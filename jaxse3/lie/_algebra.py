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

import jax.numpy as jnp
import numpy as np

from jaxse3.lie import _entries
from jaxse3.lie._entries import Entries

#: the generators E₁, E₂, E₃ of so(3) (Eₖ = ẽₖ, the skew matrix of the k-th unit vector)
_GENERATORS = np.array(
    [
        [[0.0, 0.0, 0.0], [0.0, 0.0, -1.0], [0.0, 1.0, 0.0]],
        [[0.0, 0.0, 1.0], [0.0, 0.0, 0.0], [-1.0, 0.0, 0.0]],
        [[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 0.0]],
    ]
)


def skew(x: jnp.ndarray) -> jnp.ndarray:
    """x̃ with x̃ z = x × z (seed 000 eq. (3)); x has shape (3,).

    Written as x₁E₁ + x₂E₂ + x₃E₃ with the constant generators Eₖ: 17 operations that XLA fuses into its consumers,
    where the literal 3×3 array of entries traces to 34 (a slice, reshape and broadcast per entry, then
    concatenations). skew is in nearly every program jaxse3 builds, and the size of a program is what tracing and XLA
    compile. (A sum over k or a product with the (3, 3, 3) constant is shorter still, but XLA:CPU then cannot fuse it
    into the products it feeds: the rod's forward dynamics and its Jacobian ran 10–20 % slower.)"""
    E1, E2, E3 = (jnp.asarray(E, dtype=x.dtype) for E in _GENERATORS)
    return x[0] * E1 + x[1] * E2 + x[2] * E3


def unskew(m: jnp.ndarray) -> jnp.ndarray:
    """Inverse of :func:`skew` applied to the skew-symmetric part of m (3×3)."""
    return 0.5 * jnp.array([m[2, 1] - m[1, 2], m[0, 2] - m[2, 0], m[1, 0] - m[0, 1]])


def _ad6(X: jnp.ndarray) -> jnp.ndarray:
    """ad_X = [[x̃, 0], [ỹ, x̃]] (seed 000 eq. (19)): ad_X Y = vee([X̂, Ŷ])."""
    xt, yt = skew(X[:3]), skew(X[3:])
    z = jnp.zeros_like(xt)
    return jnp.block([[xt, z], [yt, xt]])


def _adbar6(U: jnp.ndarray) -> jnp.ndarray:
    """adbar_U = [[ũ, ṽ], [ṽ, 0]] (seed 000 eq. (38)), defined by ad_Xᵀ U = adbar_U X."""
    ut, vt = skew(U[:3]), skew(U[3:])
    return jnp.block([[ut, vt], [vt, jnp.zeros_like(ut)]])


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

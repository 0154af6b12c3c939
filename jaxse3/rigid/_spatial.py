"""Spatial-vector algebra, angular part first (Featherstone; docs/conventions.md; seed 002 digest §1.1).

Everything the rigid algorithms need from spatial algebra, in one place: cross products of motion and force vectors
and the changes of frame (:func:`cross_motion`, :func:`cross_force`, :func:`motion_to_child`, :func:`motion_to_parent`,
:func:`force_to_parent`), spatial inertias by their parts (:class:`Inertia`), and the cross-product matrices of IDSVA
(seed 002 eqs. (3)–(4), (6): :func:`crf_bar`, :func:`crf_times`, :func:`cross_sandwich`, :class:`CoriolisBlocks`).

For the pose ``H = (R, p)`` of a child frame in its parent frame, ``Ad_{H⁻¹}`` maps motion vectors from parent to
child coordinates and ``Ad_{H⁻¹}ᵀ`` maps wrenches from child to parent coordinates. The vector functions work on
(..., 6) arrays (the last axis holds the spatial vector, so a (k, 6) array is k vectors) and are written with 3×3
blocks, which is cheaper than 6×6 products.
"""

from __future__ import annotations

from typing import NamedTuple

import jax.numpy as jnp
from jaxtyping import Array, Float

from jaxse3.lie import se3 as _se3


def skew(x: Float[Array, "... 3"]) -> Float[Array, "... 3 3"]:
    """x̃ (..., 3, 3) with x̃ y = x × y, for a 3-vector or a stack of them (..., 3)."""
    z = jnp.zeros_like(x[..., 0])
    return jnp.stack(
        [
            jnp.stack([z, -x[..., 2], x[..., 1]], -1),
            jnp.stack([x[..., 2], z, -x[..., 0]], -1),
            jnp.stack([-x[..., 1], x[..., 0], z], -1),
        ],
        -2,
    )


def _rot(R, x):
    return jnp.einsum("...ij,...j->...i", R, x)


def cross_motion(v: Float[Array, "... 6"], m: Float[Array, "... 6"]) -> Float[Array, "... 6"]:
    """v × m = (ω × m_ω, ω × m_v + v_lin × m_ω) on trailing axes."""
    w, u, mw, mu = v[..., :3], v[..., 3:], m[..., :3], m[..., 3:]
    return jnp.concatenate([jnp.cross(w, mw), jnp.cross(w, mu) + jnp.cross(u, mw)], axis=-1)


def cross_force(v: Float[Array, "... 6"], f: Float[Array, "... 6"]) -> Float[Array, "... 6"]:
    """v ×* f = (ω × n + v_lin × f_lin, ω × f_lin) on trailing axes."""
    w, u, n, fl = v[..., :3], v[..., 3:], f[..., :3], f[..., 3:]
    return jnp.concatenate([jnp.cross(w, n) + jnp.cross(u, fl), jnp.cross(w, fl)], axis=-1)


def motion_to_child(
    R: Float[Array, "... 3 3"], p: Float[Array, "... 3"], m: Float[Array, "... 6"]
) -> Float[Array, "... 6"]:
    """Ad_{H⁻¹} m: a motion vector in parent coordinates expressed in the child frame H = (R, p)."""
    w, u = m[..., :3], m[..., 3:]
    Rt = jnp.swapaxes(R, -1, -2)
    return jnp.concatenate([_rot(Rt, w), _rot(Rt, u - jnp.cross(p, w))], axis=-1)


def motion_to_parent(
    R: Float[Array, "... 3 3"], p: Float[Array, "... 3"], m: Float[Array, "... 6"]
) -> Float[Array, "... 6"]:
    """Ad_H m: a motion vector in child coordinates expressed in the parent frame."""
    Rw = _rot(R, m[..., :3])
    return jnp.concatenate([Rw, _rot(R, m[..., 3:]) + jnp.cross(p, Rw)], axis=-1)


def force_to_parent(
    R: Float[Array, "... 3 3"], p: Float[Array, "... 3"], f: Float[Array, "... 6"]
) -> Float[Array, "... 6"]:
    """Ad_{H⁻¹}ᵀ f: a wrench (moment, force) in child coordinates expressed in the parent frame."""
    Rf = _rot(R, f[..., 3:])
    return jnp.concatenate([_rot(R, f[..., :3]) + jnp.cross(p, Rf), Rf], axis=-1)


class Inertia(NamedTuple):
    """A spatial inertia ``[[A, h̃], [h̃ᵀ, m 1]]`` (angular first) by its parts: the rotational inertia ``A`` about the
    frame origin (``I_c + m c̃c̃ᵀ``, (..., 3, 3)), the first moment of mass ``h = m c`` (..., 3) and the mass ``m`` (...).
    Sums of inertias are sums of parts; the 10 numbers replace 36 in transforms, composites and products."""

    A: Float[Array, "... 3 3"]
    h: Float[Array, "... 3"]
    m: Float[Array, "..."]

    def matrix(self) -> Float[Array, "... 6 6"]:
        """The 6×6 matrix."""
        H = skew(self.h)
        m = self.m[..., None, None] * jnp.eye(3, dtype=self.A.dtype)
        return jnp.concatenate([jnp.concatenate([self.A, H], -1), jnp.concatenate([-H, m], -1)], -2)

    def apply(self, x: Float[Array, "... 6"]) -> Float[Array, "... 6"]:
        """I x for motion vectors x (..., 6) (broadcast over leading axes): ``(A ω + h × u, ω × h + m u)``."""
        w, u = x[..., :3], x[..., 3:]
        return jnp.concatenate(
            [_rot(self.A, w) + jnp.cross(self.h, u), jnp.cross(w, self.h) + self.m[..., None] * u], axis=-1
        )


def inertia_parts(inertia: Float[Array, "... 6 6"]) -> Inertia:
    """The :class:`Inertia` parts of 6×6 spatial inertias (..., 6, 6) (h from the skew part of the upper-right block,
    m from the trace of the lower-right one)."""
    H = inertia[..., :3, 3:]
    h = 0.5 * jnp.stack([H[..., 2, 1] - H[..., 1, 2], H[..., 0, 2] - H[..., 2, 0], H[..., 1, 0] - H[..., 0, 1]], -1)
    return Inertia(inertia[..., :3, :3], h, jnp.trace(inertia[..., 3:, 3:], axis1=-2, axis2=-1) / 3.0)


def inertia_to_parent(R: Float[Array, "... 3 3"], p: Float[Array, "... 3"], inertia: Inertia) -> Inertia:
    """Ad_{H⁻¹}ᵀ I Ad_{H⁻¹} for the child pose H = (R, p), by parts (batched): with ``h_R = R h``,
    ``h' = h_R + m p`` and ``A' = R A Rᵀ − p̃ h̃_R − h̃' p̃`` (one 3×3 sandwich instead of two 6×6 products)."""
    hR = _rot(R, inertia.h)
    h = hR + inertia.m[..., None] * p
    RA = jnp.einsum("...ij,...jk->...ik", R, inertia.A)
    A = jnp.einsum("...ij,...kj->...ik", RA, R) - skew(p) @ skew(hR) - skew(h) @ skew(p)
    return Inertia(A, h, inertia.m)


# ---------------------------------------------------------------------------------------------------------------------
# spatial cross-product matrices (seed 002 eqs. (3)–(4) and the swapped force cross of digest §1.1)


def crf_bar(f: Float[Array, "... 6"]) -> Float[Array, "... 6 6"]:
    """f×̄*, defined by (f×̄*) v = (v×*) f; equals −adbar_f and is skew-symmetric (digest §1.1)."""
    return -_se3.adbar(f)


def crf_times(x: Float[Array, "... 6"], M: Float[Array, "... 6 6"]) -> Float[Array, "... 6 6"]:
    """(x×*) M for any 6×6 ``M`` (batched), as cross products on the columns of M (cheaper than a 6×6 product)."""
    return jnp.swapaxes(cross_force(x[..., None, :], jnp.swapaxes(M, -1, -2)), -1, -2)


def cross_sandwich(x: Float[Array, "... 6"], M: Float[Array, "... 6 6"]) -> Float[Array, "... 6 6"]:
    """(x×*) M − M (x×) for any 6×6 ``M`` (batched); ``M (x×)`` has rows ``−(x×*) M[r, :]`` since ``(x×)ᵀ = −x×*``."""
    return crf_times(x, M) + cross_force(x[..., None, :], M)


class CoriolisBlocks(NamedTuple):
    """B(I, x) = (x×*) I − I (x×) + (I x)×̄*, **twice** the body Coriolis factor of eq. (6) (Algorithm 1 lines 9,
    15), for a spatial inertia I = (A, h, m) (:class:`Inertia`). Its right block column
    vanishes: ``B = [[X, 0], [−2 f̃, 0]]`` with ``X = [ω̃, A] − ũh̃ − h̃ũ − ñ`` and
    ``(n, f) = I x`` for x = (ω, u) (the m terms cancel, and the upper-right block is ``(ω × h + m u − f)~ = 0``).
    B is linear in (X, f), so composites are sums of blocks."""

    X: Float[Array, "... 3 3"]
    f: Float[Array, "... 3"]

    @classmethod
    def of(cls, inertia: Inertia, x: Float[Array, "... 6"], momentum: Float[Array, "... 6"]) -> CoriolisBlocks:
        """The blocks of B(I, x), given ``momentum = I x``."""
        W, U, H = skew(x[..., :3]), skew(x[..., 3:]), skew(inertia.h)
        WA, UH = W @ inertia.A, U @ H
        return cls(
            WA + jnp.swapaxes(WA, -1, -2) - UH - jnp.swapaxes(UH, -1, -2) - skew(momentum[..., :3]), momentum[..., 3:]
        )

    def matrix(self) -> Float[Array, "... 6 6"]:
        """The 6×6 matrix."""
        z = jnp.zeros_like(self.X)
        return jnp.concatenate([jnp.concatenate([self.X, z], -1), jnp.concatenate([-2.0 * skew(self.f), z], -1)], -2)

    def apply(self, y: Float[Array, "... 6"]) -> Float[Array, "... 6"]:
        """B y = (X y_ω, −2 f × y_ω)."""
        return jnp.concatenate([_rot(self.X, y[..., :3]), -2.0 * jnp.cross(self.f, y[..., :3])], -1)

    def apply_transpose(self, y: Float[Array, "... 6"]) -> Float[Array, "... 6"]:
        """Bᵀ y = (Xᵀ y_ω + 2 f × y_v, 0)."""
        return jnp.concatenate(
            [
                _rot(jnp.swapaxes(self.X, -1, -2), y[..., :3]) + 2.0 * jnp.cross(self.f, y[..., 3:]),
                jnp.zeros_like(y[..., 3:]),
            ],
            -1,
        )

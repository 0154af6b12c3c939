"""Cross-sections, material and quadrature of a Cosserat rod: the screw inertia, stiffness and damping densities.

Seed 003 (digest §1.2, §1.7): the computational points are the base X = 0, ``n_gauss`` Gauss–Legendre points and the
tip X = L (eq. (3)); the end points carry zero weight. With segments (:func:`segment_gauss_points`, for piecewise
constant strain) every segment gets its own ``n_gauss`` Gauss points and the segment ends are points of zero weight.
With the section's area A and second moments J_x (polar), J_y, J_z (about the section's y and z axes), all densities
are diagonal, angular components first:

* screw inertia 𝓜̄ = ρ diag(J_x, J_y, J_z, A, A, A) (standard GVS; the paper does not print it); without rotary
  inertia (``rotary_inertia=False``) the bending entries ρJ_y, ρJ_z are zero (the Euler–Bernoulli and Rayleigh
  limits; the polar ρJ_x stays, as torsion has no other inertia);
* screw elasticity Σ = diag(G J_x, E J_y, E J_z, E A, k G A, k G A) (D64, with Timoshenko's shear-correction factor k);
* screw damping Υ = υ diag(J_x, 3J_y, 3J_z, 3A, k A, k A) (D65; υ is the material damping, Pa·s; k as in Σ, so that
  Υ stays proportional to Σ for G = E/3).

G = E / (2(1 + ν)) unless G is given. The shear-correction factor k defaults to 1 (the paper); Cowper's values are
:func:`cowper_shear_factor`. No torsion constant other than the polar moment (as in the paper). Every quantity is a
JAX array (leaves), so a batch of sections or materials vmaps.

Constructors reject nonsense values (a non-positive size or modulus, ν outside (−1, ½]) with a ValueError naming the
argument; values traced by ``jit``/``vmap`` are not checked, so construction stays traceable.
"""

from __future__ import annotations

from collections.abc import Callable

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Float

__all__ = [
    "CircularSection",
    "RectangularSection",
    "Material",
    "gauss_points",
    "segment_gauss_points",
    "screw_inertia",
    "screw_stiffness",
    "screw_damping",
    "cowper_shear_factor",
]


def _f(x) -> jax.Array:
    return jnp.asarray(x, dtype=jnp.result_type(float))


def check_values(
    who: str, name: str, value: ArrayLike, valid: Callable[[np.ndarray], np.ndarray], expected: str
) -> None:
    """Raise ``ValueError("<who>: '<name>' must be <expected>, got <value>")`` unless every entry of ``value`` is
    ``valid``. A value traced by ``jit``/``vmap`` (a ``jax.core.Tracer``) cannot be inspected and is not checked."""
    if isinstance(value, jax.core.Tracer):
        return
    v = np.asarray(value, dtype=float)
    if not np.all(valid(v)):
        raise ValueError(f"{who}: '{name}' must be {expected}, got {v.item() if v.ndim == 0 else v}")


def _positive(v: np.ndarray) -> np.ndarray:
    return v > 0


class CircularSection(eqx.Module):
    """Circular cross-section of radius r(X).

    Args:
        radius: the radius at the base (a number > 0), or a callable ``r(X, length)`` (static; pure JAX) for any
            profile (:class:`~jaxse3.rod.model.Rod` checks r > 0 at its computational points).
        radius_tip: optional radius (> 0) at the tip for a linear taper ``r(X) = r_b + (r_t − r_b) X / L`` (seed 003
            CDM).
    """

    radius: jax.Array | None
    radius_tip: jax.Array | None
    profile: Callable | None = eqx.field(static=True)

    def __init__(
        self,
        radius: Float[ArrayLike, ""] | Callable[[Float[Array, ""], Float[Array, ""]], Float[Array, ""]],
        radius_tip: Float[ArrayLike, ""] | None = None,
    ):
        if callable(radius):
            if radius_tip is not None:
                raise ValueError("CircularSection: give either a callable 'radius' or 'radius_tip', not both")
            self.radius, self.radius_tip, self.profile = None, None, radius
        else:
            check_values("CircularSection", "radius", radius, _positive, "positive")
            if radius_tip is not None:
                check_values(
                    "CircularSection",
                    "radius_tip",
                    radius_tip,
                    _positive,
                    "positive (a taper to a point has no stiffness at the tip)",
                )
            self.radius, self.profile = _f(radius), None
            self.radius_tip = None if radius_tip is None else _f(radius_tip)

    def radius_at(self, X: Float[Array, "..."], length: Float[Array, ""]) -> Float[Array, "..."]:
        """r(X) (same shape as X)."""
        if self.profile is not None:
            return jnp.vectorize(lambda x: self.profile(x, length))(X)
        if self.radius_tip is None:
            return jnp.broadcast_to(self.radius, jnp.shape(X))
        return self.radius + (self.radius_tip - self.radius) * X / length

    def moments(
        self, X: Float[Array, "..."], length: Float[Array, ""]
    ) -> tuple[Float[Array, "..."], Float[Array, "..."], Float[Array, "..."], Float[Array, "..."]]:
        """(A, J_x, J_y, J_z) = (πr², πr⁴/2, πr⁴/4, πr⁴/4)."""
        r = self.radius_at(X, length)
        A, Jb = jnp.pi * r**2, jnp.pi * r**4 / 4
        return A, 2 * Jb, Jb, Jb

    def contact_radius(self, X: Float[Array, "..."], length: Float[Array, ""]) -> Float[Array, "..."]:
        """Radius of the contact sphere at X (seed 003 §6.2 (i)): r(X)."""
        return self.radius_at(X, length)


class RectangularSection(eqx.Module):
    """Rectangular cross-section, ``width`` along the local y axis and ``height`` along z (constant along X).

    A = wh, J_y = w h³/12 (about y), J_z = h w³/12, J_x = J_y + J_z (polar, as in the paper). Both sides > 0.
    """

    width: jax.Array
    height: jax.Array

    def __init__(self, width: Float[ArrayLike, ""], height: Float[ArrayLike, ""]):
        check_values("RectangularSection", "width", width, _positive, "positive")
        check_values("RectangularSection", "height", height, _positive, "positive")
        self.width, self.height = _f(width), _f(height)

    def moments(
        self, X: Float[ArrayLike, "..."], length: Float[Array, ""]
    ) -> tuple[Float[Array, "..."], Float[Array, "..."], Float[Array, "..."], Float[Array, "..."]]:
        ones = jnp.ones_like(jnp.asarray(X, dtype=self.width.dtype))
        w, h = self.width * ones, self.height * ones
        Jy, Jz = w * h**3 / 12, h * w**3 / 12
        return w * h, Jy + Jz, Jy, Jz

    def contact_radius(self, X: Float[ArrayLike, "..."], length: Float[Array, ""]) -> Float[Array, "..."]:
        """Half the diagonal (a sphere that contains the section)."""
        return 0.5 * jnp.hypot(self.width, self.height) * jnp.ones_like(jnp.asarray(X, dtype=self.width.dtype))


class Material(eqx.Module):
    """Linear elastic, linearly viscous material (seed 003 §4.4).

    Args:
        E: Young's modulus (Pa), > 0. rho: density (kg/m³), > 0 (a massless rod has a singular mass matrix).
        nu: Poisson's ratio in (−1, ½] (used for G = E/(2(1+ν)) when G is not given); default 0.5 (incompressible, as
            the paper).
        G: shear modulus (Pa), > 0, overrides nu.
        damping: material damping υ (Pa·s) of eq. (D65), ≥ 0; 0 disables damping.
    """

    E: jax.Array
    rho: jax.Array
    G: jax.Array
    damping: jax.Array

    def __init__(
        self,
        E: Float[ArrayLike, ""],
        rho: Float[ArrayLike, ""],
        nu: Float[ArrayLike, ""] = 0.5,
        G: Float[ArrayLike, ""] | None = None,
        damping: Float[ArrayLike, ""] = 0.0,
    ):
        check_values("Material", "E", E, _positive, "positive")
        check_values("Material", "rho", rho, _positive, "positive")
        if G is None:
            check_values("Material", "nu", nu, lambda v: (v > -1) & (v <= 0.5), "in (-1, 0.5]")
        else:
            check_values("Material", "G", G, _positive, "positive")
        check_values("Material", "damping", damping, lambda v: v >= 0, "non-negative")
        self.E, self.rho, self.damping = _f(E), _f(rho), _f(damping)
        self.G = self.E / (2 * (1 + _f(nu))) if G is None else _f(G)


def gauss_points(n_gauss: int, length: Float[ArrayLike, ""]) -> tuple[Float[Array, " n_p"], Float[Array, " n_p"]]:
    """Computational points and weights: base, ``n_gauss`` Gauss–Legendre points on [0, L], tip (seed 003 eq. (3)).

    Returns ``(X, w)`` of shape ``(n_gauss + 2,)``; ``w[0] = w[-1] = 0``.
    """
    if not isinstance(n_gauss, int) or n_gauss < 1:
        raise ValueError(f"gauss_points: 'n_gauss' must be a positive int, got {n_gauss!r}")
    s, ws = np.polynomial.legendre.leggauss(n_gauss)
    length = _f(length)
    X = jnp.concatenate([jnp.zeros(1), (s + 1) / 2 * length, length[None]])
    w = jnp.concatenate([jnp.zeros(1), ws / 2 * length, jnp.zeros(1)])
    return X, w


def segment_gauss_points(
    n_segments: int, n_gauss: int, length: Float[ArrayLike, ""]
) -> tuple[Float[Array, " n_p"], Float[Array, " n_p"]]:
    """Computational points and weights with per-segment quadrature: the rod is cut into ``n_segments`` equal
    segments ``[i L/n, (i + 1) L/n]``, each with ``n_gauss`` Gauss–Legendre points and weights mapped to it.

    Returns ``(X, w)`` of shape ``(n_segments (n_gauss + 1) + 1,)``, in increasing X: the base (weight 0), the Gauss
    points of segment 0, the segment end L/n (weight 0), the Gauss points of segment 1, ..., the tip (weight 0). The
    interior segment ends are ``i * L / n`` (the expression :class:`~jaxse3.rod.basis.PiecewiseConstantBasis`
    compares with), the tip is L itself. Every segment's sum of ``w f(X)`` is exact for polynomials of degree
    ``2 n_gauss − 1`` on that segment, and ``n_segments = 1`` gives :func:`gauss_points` bit for bit.
    """
    if isinstance(n_segments, bool) or not isinstance(n_segments, int) or n_segments < 1:
        raise ValueError(f"segment_gauss_points: 'n_segments' must be a positive int, got {n_segments!r}")
    if isinstance(n_gauss, bool) or not isinstance(n_gauss, int) or n_gauss < 1:
        raise ValueError(f"segment_gauss_points: 'n_gauss' must be a positive int, got {n_gauss!r}")
    s, ws = np.polynomial.legendre.leggauss(n_gauss)
    length = _f(length)
    h = length / n_segments
    ends = jnp.arange(n_segments, dtype=length.dtype) * length / n_segments  # segment starts i L / n
    Xg = ends[:, None] + (s + 1) / 2 * h  # (n_segments, n_gauss)
    X = jnp.concatenate([jnp.concatenate([ends[:, None], Xg], axis=1).reshape(-1), length[None]])
    wg = jnp.broadcast_to(ws / 2 * h, (n_segments, n_gauss))
    w = jnp.concatenate([jnp.concatenate([jnp.zeros((n_segments, 1)), wg], axis=1).reshape(-1), jnp.zeros(1)])
    return X, w


def _diag6(*entries) -> jax.Array:
    d = jnp.stack(jnp.broadcast_arrays(*entries), axis=-1)
    return d[..., None] * jnp.eye(6, dtype=d.dtype)


def cowper_shear_factor(section: CircularSection | RectangularSection, material: Material) -> jax.Array:
    """Cowper's (1966) shear-correction factor k of a solid section: 6(1 + ν)/(7 + 6ν) (circle), 10(1 + ν)/(12 + 11ν)
    (rectangle), with ν = E/(2G) − 1 from the material; e.g. 0.886 and 0.850 for ν = 0.3. Pass it to
    :class:`~jaxse3.rod.model.Rod` as ``shear_factor`` (k multiplies the shear stiffness G A; PyElastica's default
    for its circular rods is 4/3)."""
    nu = material.E / (2 * material.G) - 1
    if isinstance(section, CircularSection):
        return 6 * (1 + nu) / (7 + 6 * nu)
    if isinstance(section, RectangularSection):
        return 10 * (1 + nu) / (12 + 11 * nu)
    raise TypeError(f"cowper_shear_factor: 'section' must be circular or rectangular, got {type(section).__name__}")


def screw_inertia(
    section: CircularSection | RectangularSection,
    material: Material,
    X: Float[Array, "..."],
    length: Float[Array, ""],
    rotary_inertia: bool = True,
) -> Float[Array, "... 6 6"]:
    """𝓜̄(X) = ρ diag(J_x, J_y, J_z, A, A, A), shape ``X.shape + (6, 6)``; ``rotary_inertia=False``: J_y = J_z = 0."""
    A, Jx, Jy, Jz = section.moments(X, length)
    if not rotary_inertia:
        Jy = Jz = jnp.zeros_like(A)
    return material.rho * _diag6(Jx, Jy, Jz, A, A, A)


def screw_stiffness(
    section: CircularSection | RectangularSection,
    material: Material,
    X: Float[Array, "..."],
    length: Float[Array, ""],
    shear_factor: Float[ArrayLike, ""] = 1.0,
) -> Float[Array, "... 6 6"]:
    """Σ(X) = diag(G J_x, E J_y, E J_z, E A, k G A, k G A) (seed 003 eq. (D64); k = ``shear_factor``)."""
    A, Jx, Jy, Jz = section.moments(X, length)
    E, G = material.E, material.G
    return _diag6(G * Jx, E * Jy, E * Jz, E * A, shear_factor * G * A, shear_factor * G * A)


def screw_damping(
    section: CircularSection | RectangularSection,
    material: Material,
    X: Float[Array, "..."],
    length: Float[Array, ""],
    shear_factor: Float[ArrayLike, ""] = 1.0,
) -> Float[Array, "... 6 6"]:
    """Υ(X) = υ diag(J_x, 3J_y, 3J_z, 3A, k A, k A) (seed 003 eq. (D65); k = ``shear_factor``)."""
    A, Jx, Jy, Jz = section.moments(X, length)
    return material.damping * _diag6(Jx, 3 * Jy, 3 * Jz, 3 * A, shear_factor * A, shear_factor * A)

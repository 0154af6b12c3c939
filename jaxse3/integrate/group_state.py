"""Lie-group-valued leaves of an integrator state, and the operations the Lie-group integrators need on them.

A state pytree for :mod:`jaxse3.integrate` may mix

* :class:`SE3Element` nodes (``matrix`` of shape ``(..., 4, 4)``, homogeneous transforms; leading axes = bodies),
* :class:`SO3Element` nodes (``matrix`` of shape ``(..., 3, 3)``, rotations),
* plain arrays (vector-space states: velocities, positions, ...).

The vector field of such a state returns the same pytree with every group node replaced by a plain array of twists
(``(..., 6)`` for SE(3), ``(..., 3)`` for SO(3), rotation/angular part first, docs/conventions.md), either spatial
(``Ċ = V̂ C``) or body (``Ċ = C V̂``) according to the integrator's ``side``.

Local coordinates (seed 001 digest §7.2, pitfall 4): ``ψ = exp`` with ``dψ⁻¹ = dexp⁻¹``, or the half-scaled Cayley
map ``ψ = cay_half`` (``cay(X/2)``, so that ``ψ(hV) = I + hV̂ + O(h²)``) with ``dψ⁻¹ = dcay_half⁻¹``. A point near
``C`` is ``ψ(Θ) C`` (spatial) or ``C ψ(Θ)`` (body), and the local-coordinate ODE reads (seed 001 eqs. (1.2), (1.5),
(1.7))

    spatial:  Θ' = dψ⁻¹_{Θ} V,        body:  Θ' = dψ⁻¹_{−Θ} V.

The functions below map over the *nodes* of a state (a group element or a vector array) with
:func:`map_nodes`, so that an integrator is written once for every mixture of leaves.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, Literal

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import jax.tree_util as jtu
from jaxtyping import Array, ArrayLike, Float, PyTree, Real

from jaxse3.lie import se3, so3

__all__ = [
    "LieGroupElement",
    "SE3Element",
    "SO3Element",
    "LieODETerm",
    "Coordinates",
    "Side",
    "is_group",
    "map_nodes",
    "check_options",
    "retract",
    "local_field",
    "ambient_derivative",
    "algebra_matrix",
]

Coordinates = Literal["exp", "cayley"]
Side = Literal["spatial", "body"]


class LieGroupElement(eqx.Module):
    """Base class of the group-valued state nodes: a matrix ``(..., n, n)`` and its Lie-group operations."""

    matrix: jax.Array
    lie: ClassVar = None  # the jaxse3.lie module of the group (se3 or so3)
    size: ClassVar[int] = 0  # matrix size n
    dim: ClassVar[int] = 0  # algebra dimension

    def __check_init__(self):
        shape = getattr(self.matrix, "shape", None)
        if shape is not None and (len(shape) < 2 or tuple(shape[-2:]) != (self.size, self.size)):
            raise ValueError(
                f"{type(self).__name__}: argument 'matrix' must have shape (..., {self.size}, {self.size}), got {shape}"
            )


class SE3Element(LieGroupElement):
    """Marks a pytree node as SE(3)-valued: ``matrix`` ``(..., 4, 4)`` homogeneous transforms; twists are ``(...,
    6)``."""

    lie: ClassVar = se3
    size: ClassVar[int] = 4
    dim: ClassVar[int] = 6


class SO3Element(LieGroupElement):
    """Marks a pytree node as SO(3)-valued: ``matrix`` ``(..., 3, 3)`` rotations; angular velocities are ``(...,
    3)``."""

    lie: ClassVar = so3
    size: ClassVar[int] = 3
    dim: ClassVar[int] = 3


def is_group(node: Any) -> bool:
    """True for a :class:`LieGroupElement` node."""
    return isinstance(node, LieGroupElement)


def map_nodes(fn: Callable[..., Any], y: PyTree[Any], *rest: PyTree[Any]) -> PyTree[Any]:
    """``jtu.tree_map`` over the nodes of the state ``y`` (group elements and arrays); ``rest`` have ``y``'s node
    structure as a prefix (e.g. vector-field outputs, where each group node is an array of twists)."""
    return jtu.tree_map(fn, y, *rest, is_leaf=is_group)


def check_options(coordinates: str, side: str) -> None:
    """Raise a clear error for an unknown coordinate map or side (called in the solvers' ``__check_init__``)."""
    if coordinates not in ("exp", "cayley"):
        raise ValueError(f"argument 'coordinates' must be 'exp' or 'cayley', got {coordinates!r}")
    if side not in ("spatial", "body"):
        raise ValueError(f"argument 'side' must be 'spatial' or 'body', got {side!r}")


def _psi(node: LieGroupElement, coordinates: str, theta: jax.Array) -> jax.Array:
    return node.lie.exp(theta) if coordinates == "exp" else node.lie.cay_half(theta)


def retract(
    node: LieGroupElement | Array, theta: Float[Array, "..."], coordinates: Coordinates, side: Side
) -> LieGroupElement | Array:
    """The point with local coordinates ``theta`` around ``node``: ``ψ(Θ) C`` (spatial) or ``C ψ(Θ)`` (body); for a
    vector node, ``y + Θ``."""
    if not is_group(node):
        return node + theta
    psi = _psi(node, coordinates, theta)
    C = node.matrix
    new = node.lie.compose(psi, C) if side == "spatial" else node.lie.compose(C, psi)
    return type(node)(new)


def local_field(
    node: LieGroupElement | Array,
    theta: Float[Array, "..."],
    velocity: Float[Array, "..."],
    coordinates: Coordinates,
    side: Side,
) -> Float[Array, "..."]:
    """Right-hand side of the local-coordinate ODE (seed 001 eq. (1.7)): ``dψ⁻¹_{±Θ} V`` with + spatial, − body.

    ``dexp⁻¹`` goes through :func:`jaxse3.se3.dexp_inv_apply` (custom_jvp rule: the Newton Jacobians and gradients of
    implicit/adjoint solvers run the closed-form ``D dexp⁻¹``); ``dcay_half⁻¹`` is a rational closed form. For a
    vector node this is the identity (its derivative is ``velocity``)."""
    if not is_group(node):
        return velocity
    arg = theta if side == "spatial" else -theta
    if coordinates == "exp":
        return node.lie.dexp_inv_apply(arg, velocity)
    return jnp.einsum("...ij,...j->...i", node.lie.dcay_half_inv(arg), velocity)


def ambient_derivative(
    node: LieGroupElement | Array, velocity: Float[Array, "..."], side: Side = "spatial"
) -> LieGroupElement | Array:
    """Time derivative of a node in its matrix embedding: ``Ċ = V̂ C`` (spatial) or ``C V̂`` (body), wrapped in the
    node's type (so that it has the state's structure); for a vector node, ``velocity`` itself."""
    if not is_group(node):
        return velocity
    Vhat = node.lie.hat(velocity)
    C = node.matrix
    return type(node)(Vhat @ C if side == "spatial" else C @ Vhat)


def algebra_matrix(node: LieGroupElement | Array, theta: Float[Array, "..."]) -> LieGroupElement | Array:
    """``Θ̂`` wrapped in the node's type (a group node) or ``Θ`` itself (a vector node): how a local-coordinate
    quantity (an error estimate) is given the state's structure."""
    if not is_group(node):
        return theta
    return type(node)(node.lie.hat(theta))


class LieODETerm(diffrax.ODETerm):
    """A :class:`diffrax.ODETerm` for states with group nodes: ``vector_field(t, y, args)`` returns ``y``'s pytree with
    every :class:`SE3Element`/:class:`SO3Element` node replaced by its twists ``matrix.shape[:-2] + (dim,)``.

    diffrax's ``ODETerm.vf`` requires the output to have ``y``'s exact structure (and calls it for a compatibility
    check inside ``diffeqsolve``), which a twist field cannot have; this term checks the Lie structure instead, with an
    error naming the node and the expected twist shape, and broadcasts vector outputs to their leaf's shape as
    ``ODETerm`` does.
    """

    def vf(self, t: Real[ArrayLike, ""], y: PyTree[Any], args: PyTree[Any]) -> PyTree[Array]:
        out = self.vector_field(t, y, args)
        expected, got = jtu.tree_structure(y, is_leaf=is_group), jtu.tree_structure(out)
        if expected != got:
            raise ValueError(
                "LieODETerm: the vector field must return the state's pytree with every SE3Element/SO3Element node "
                f"replaced by an array of twists; expected structure {expected}, got {got}"
            )

        def fix(node, v):
            if is_group(node):
                shape = node.matrix.shape[:-2] + (node.dim,)
                if jnp.shape(v) != shape:
                    raise ValueError(
                        f"LieODETerm: the vector field must return twists of shape {shape} for a "
                        f"{type(node).__name__} node of matrix shape {node.matrix.shape}, got {jnp.shape(v)}"
                    )
                return jnp.asarray(v, node.matrix.dtype)
            return jnp.broadcast_to(jnp.asarray(v, jnp.result_type(node)), jnp.shape(node))

        return map_nodes(fix, y, out)

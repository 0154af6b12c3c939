"""Closed-form SO(3)/SE(3) mathematics: maps, derivatives, Jacobians and Hessians, with custom_jvp rules."""

from jaxse3.lie import approx, cayley, coefficients, se2, se3, shapes, so3
from jaxse3.lie._algebra import SE3, SO3  # the algebras, as the ad-polynomial recursions of adpoly take them

__all__ = ["approx", "cayley", "coefficients", "se2", "se3", "shapes", "so3", "SE3", "SO3"]

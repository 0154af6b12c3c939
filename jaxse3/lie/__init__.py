"""Closed-form SO(3)/SE(3) mathematics: maps, derivatives, Jacobians and Hessians, with custom_jvp rules."""

from jaxse3.lie import approx, cayley, coefficients, se3, shapes, so3

__all__ = ["approx", "cayley", "coefficients", "se3", "shapes", "so3"]

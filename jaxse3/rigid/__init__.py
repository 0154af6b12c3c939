"""Rigid multibody dynamics on kinematic trees (issue 4; seed 002): model, URDF import, the robots of
example-robot-data, kinematics, RNEA, CRBA, forward dynamics, and the analytical derivatives of inverse/forward dynamics.

Conventions (docs/conventions.md): spatial vectors angular first (twists (ω, v), wrenches (moment, force)); spherical joints
store unit quaternions (w, x, y, z), free joints position (3) then quaternion (w, x, y, z); their velocities are body
twists in the child frame; derivatives with respect to q are taken in the tangent space with the right perturbation
``q ⊕ δ = q·exp(δ̂)`` (:func:`integrate`). Pinocchio conventions are converted in :mod:`jaxse3.rigid.interop` only.
"""

from jaxse3.rigid import absolute, interop
from jaxse3.rigid.builders import ModelBuilder, auto_tree
from jaxse3.rigid.configuration import difference, integrate, neutral_configuration, random_configuration
from jaxse3.rigid.crba import crba
from jaxse3.rigid.forward_dynamics import nonlinear_effects
from jaxse3.rigid.forward_dynamics_derivatives import (
    forward_dynamics,
    forward_dynamics_derivatives,
    forward_dynamics_second_order_derivatives,
)
from jaxse3.rigid.kinematics import body_jacobians, forward_kinematics
from jaxse3.rigid.model import Model, spatial_inertia
from jaxse3.rigid.rnea_derivatives import rnea, rnea_derivatives  # rnea with its custom_jvp rule (IDSVA FO)
from jaxse3.rigid.rnea_second_order_derivatives import rnea_second_order_derivatives
from jaxse3.rigid.robots import EXAMPLE_ROBOTS, example_robot, example_robot_path
from jaxse3.rigid.urdf import from_urdf

__all__ = [
    "absolute", "Model", "ModelBuilder", "auto_tree", "from_urdf", "spatial_inertia", "interop",
    "example_robot", "example_robot_path", "EXAMPLE_ROBOTS",
    "integrate", "difference", "neutral_configuration", "random_configuration",
    "forward_kinematics", "body_jacobians", "rnea", "crba", "nonlinear_effects", "forward_dynamics",
    "rnea_derivatives", "rnea_second_order_derivatives", "forward_dynamics_derivatives",
    "forward_dynamics_second_order_derivatives",
]  # fmt: skip

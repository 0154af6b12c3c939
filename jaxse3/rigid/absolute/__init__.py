"""Constrained multibody systems in absolute coordinates, each body in SE(3) or SO(3)×R³ (seed 004, Müller & Terze).

- :mod:`~jaxse3.rigid.absolute.bodies`: :class:`RigidBody` (mass matrix, gyroscopic/gravity terms and point
  kinematics in either configuration space), :func:`box`;
- :mod:`~jaxse3.rigid.absolute.joints`: :class:`SphericalJoint` (constraint, Jacobian, index-1 acceleration terms),
  :func:`ground_joint`, :func:`body_joint`;
- :mod:`~jaxse3.rigid.absolute.system`: :class:`MultibodySystem` (index-1 KKT accelerations as a left-trivialised
  vector field for the RKMK solvers, energy and constraint monitors, body poses ↔ state);
- :mod:`~jaxse3.rigid.absolute.examples`: the paper's four systems (heavy top, spherical double pendulum, floating
  pair, spherical 3-bar linkage) with consistent initial conditions.

The models do not drive solvers: :func:`jaxse3.sim.simulate_multibody` integrates a :class:`MultibodySystem` and
returns a :class:`jaxse3.sim.Trajectory`.
"""

from jaxse3.rigid.absolute.bodies import SPACES, RigidBody, box
from jaxse3.rigid.absolute.examples import EXAMPLES, Example, double_pendulum, floating_pair, heavy_top, three_bar
from jaxse3.rigid.absolute.joints import SphericalJoint, body_joint, ground_joint
from jaxse3.rigid.absolute.system import MultibodySystem

__all__ = [
    "SPACES",
    "RigidBody",
    "box",
    "SphericalJoint",
    "ground_joint",
    "body_joint",
    "MultibodySystem",
    "Example",
    "EXAMPLES",
    "heavy_top",
    "double_pendulum",
    "floating_pair",
    "three_bar",
]

"""Rigid multibody dynamics on kinematic trees (issue 4; seed 002): model, URDF import, the robots of
example-robot-data, kinematics, RNEA, CRBA, forward dynamics, and the analytical derivatives of inverse/forward
dynamics.

Conventions (docs/conventions.md): spatial vectors angular first (twists (ω, v), wrenches (moment, force)); spherical
joints
store unit quaternions (w, x, y, z), free joints position (3) then quaternion (w, x, y, z); their velocities are body
twists in the child frame; derivatives with respect to q are taken in the tangent space with the right perturbation
``q ⊕ δ = q·exp(δ̂)`` (:func:`integrate`). Pinocchio conventions are converted in :mod:`jaxse3.rigid.interop` only.

Layout (as diffrax): the functions and classes are used from this flat namespace and live in private modules, one
algorithm per module with its derivatives next to it under the same name (Pinocchio); each module imports only the
ones listed before it, and first-order derivatives never import second-order ones:

* ``_spatial``: spatial algebra (cross products, changes of frame, ``Inertia`` by parts, IDSVA's cross-product
  matrices ``crf_bar``, ``crf_times``, ``cross_sandwich``, ``CoriolisBlocks``); then the public ``joints``;
* ``_model``: :class:`Model`, :func:`spatial_inertia` and the trace-time checks of states;
* ``_topology``: the static tables of the tree (support and subtree matrices, DoF-pair masks, chains);
* ``_builders``, ``_urdf``, ``_robots``: :class:`ModelBuilder` and :func:`auto_tree`, :func:`from_urdf`,
  :func:`example_robot`;
* ``_configuration``: :func:`integrate`, :func:`difference`, neutral and random configurations;
* ``_kinematics``: :func:`forward_kinematics`, :func:`body_jacobians`;
* ``_rnea``, ``_crba``, ``_forward_dynamics``: the plain algorithms, differentiated by ordinary autodiff
  (:func:`rnea_autodiff`, :func:`crba`, :func:`nonlinear_effects`);
* ``_rnea_derivatives``: IDSVA FO; ``_rnea_second_order_derivatives``: IDSVA SO
  (:func:`rnea_second_order_derivatives`);
* ``_forward_dynamics_derivatives``, ``_forward_dynamics_second_order_derivatives``: the chain rule on them
  (:func:`forward_dynamics_derivatives`, :func:`forward_dynamics_second_order_derivatives`);
* ``_rules``: :func:`rnea`, :func:`rnea_derivatives` and :func:`forward_dynamics` with their ``custom_jvp`` rules,
  which combine first- and second-order code and are therefore registered above both.

Public modules are the ones used as modules, as namespaces of their own: :mod:`jaxse3.rigid.absolute` (the seed 004
absolute-coordinate study, a subpackage), :mod:`jaxse3.rigid.interop` (conversions to and from Pinocchio's
conventions, used as ``interop.from_pinocchio``) and :mod:`jaxse3.rigid.joints` (the joint types and per-type
functions, ``joints.NV``, ``joints.quat_to_rotation``; its ``integrate``/``difference`` act on one joint and would
clash with the model-wide ones here). URDF import, the robots, the builders, the model and the algorithms are
private modules whose public names are re-exported below.
"""

from . import absolute as absolute, interop as interop, joints as joints
from ._builders import ModelBuilder as ModelBuilder, auto_tree as auto_tree
from ._configuration import (
    difference as difference,
    integrate as integrate,
    neutral_configuration as neutral_configuration,
    random_configuration as random_configuration,
)
from ._crba import crba as crba
from ._forward_dynamics import nonlinear_effects as nonlinear_effects
from ._forward_dynamics_derivatives import forward_dynamics_derivatives as forward_dynamics_derivatives
from ._forward_dynamics_second_order_derivatives import (
    forward_dynamics_second_order_derivatives as forward_dynamics_second_order_derivatives,
)
from ._kinematics import body_jacobians as body_jacobians, forward_kinematics as forward_kinematics
from ._model import Model as Model, spatial_inertia as spatial_inertia
from ._rnea import rnea_autodiff as rnea_autodiff
from ._rnea_second_order_derivatives import rnea_second_order_derivatives as rnea_second_order_derivatives
from ._robots import (
    EXAMPLE_ROBOTS as EXAMPLE_ROBOTS,
    example_robot as example_robot,
    example_robot_path as example_robot_path,
)
from ._rules import forward_dynamics as forward_dynamics, rnea as rnea, rnea_derivatives as rnea_derivatives
from ._urdf import from_urdf as from_urdf

__all__ = [
    "absolute",
    "interop",
    "joints",
    "Model",
    "ModelBuilder",
    "auto_tree",
    "from_urdf",
    "spatial_inertia",
    "example_robot",
    "example_robot_path",
    "EXAMPLE_ROBOTS",
    "integrate",
    "difference",
    "neutral_configuration",
    "random_configuration",
    "forward_kinematics",
    "body_jacobians",
    "rnea",
    "rnea_autodiff",
    "crba",
    "nonlinear_effects",
    "forward_dynamics",
    "rnea_derivatives",
    "rnea_second_order_derivatives",
    "forward_dynamics_derivatives",
    "forward_dynamics_second_order_derivatives",
]

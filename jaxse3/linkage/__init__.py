"""Linkages: trees of rigid and soft links with fixed or floating bases (seed 003 §5; hybrid soft–rigid robots).

One model for rods and rigid bodies: a :class:`Linkage` is a tree of :class:`Link` s, each a joint (fixed, the rigid
joints of :mod:`jaxse3.rigid.joints`, or soft: a GVS rod's strains) followed by its body (a rigid spatial inertia, or
a :class:`jaxse3.rod.Rod`). A rigid robot (:meth:`Linkage.from_rigid`, e.g. from URDF), one rod
(:meth:`Linkage.from_rod`) and hybrid robots (rods attached to named frames with :meth:`Linkage.attach`) share one
vocabulary and one set of functions ``(linkage, q, q̇, …)``.

Layout (as :mod:`jaxse3.rigid`, a flat namespace over private modules, each importing only the ones before it):
``_model`` (:class:`Link`, :class:`Linkage`); ``_dynamics`` (the forward pass over the links' computational points,
the plain inverse dynamics :func:`inverse_dynamics_autodiff`, mass matrix, :func:`energy`, generalised forces);
``_derivatives`` (the recursions of seed 003 over the tree: ID, ∂ID/∂q, ∂ID/∂q̇, M in one forward and one backward
pass); ``_rules`` (:func:`inverse_dynamics` and :func:`forward_dynamics` with their ``custom_jvp`` rules, the
Jacobians of τ and FD; a linkage of rigid links alone runs on :mod:`jaxse3.rigid` through :meth:`Linkage.to_rigid`);
``_control`` (joint-coordinate control, seed 003 §5.1: :class:`JointControl`, the reduced forward dynamics with its
rule, the residual, the prescribed joints' efforts); ``_closure`` (loop-closure constraints of closed chains, seed
003 §5.2: :class:`Closure`, the error, constraint matrix, its rate, the Baumgarte-stabilised forward dynamics with
the multipliers and the residual of the same motion for Newmark-β and statics, with their ``custom_jvp`` rules and
the Jacobians of eqs. (50), (51)); ``_files`` (linkages from TOML files, :func:`from_toml`).
"""

from ._closure import (
    CLOSURE_KINDS as CLOSURE_KINDS,
    Closure as Closure,
    baumgarte_residual as baumgarte_residual,
    check_closures as check_closures,
    closure_basis as closure_basis,
    closure_bias as closure_bias,
    closure_error as closure_error,
    closure_error_bias as closure_error_bias,
    closure_error_jacobian as closure_error_jacobian,
    closure_jacobian as closure_jacobian,
    constrained_forward_dynamics as constrained_forward_dynamics,
    constrained_forward_dynamics_jacobians as constrained_forward_dynamics_jacobians,
    constrained_residual as constrained_residual,
    index3_residual as index3_residual,
    index3_residual_at_rest as index3_residual_at_rest,
)
from ._control import (
    JointControl as JointControl,
    controlled_efforts as controlled_efforts,
    controlled_forward_dynamics as controlled_forward_dynamics,
    controlled_residual as controlled_residual,
)
from ._derivatives import IDDerivatives as IDDerivatives, tree_derivatives as tree_derivatives
from ._dynamics import (
    PointStates as PointStates,
    energy as energy,
    forward_kinematics as forward_kinematics,
    generalized_forces as generalized_forces,
    integrate as integrate,
    inverse_dynamics_autodiff as inverse_dynamics_autodiff,
    mass_matrix as mass_matrix,
    point_states as point_states,
)
from ._files import (
    STRAINS as STRAINS,
    closures_from_toml as closures_from_toml,
    from_toml as from_toml,
    read_toml as read_toml,
)
from ._model import (
    COORDINATES as COORDINATES,
    JOINTS as JOINTS,
    Fluid as Fluid,
    Link as Link,
    Linkage as Linkage,
    PointLoad as PointLoad,
    joint_basis as joint_basis,
)
from ._rules import (
    forward_dynamics as forward_dynamics,
    forward_dynamics_jacobians as forward_dynamics_jacobians,
    generalized_forces_derivatives as generalized_forces_derivatives,
    inverse_dynamics as inverse_dynamics,
    inverse_dynamics_derivatives as inverse_dynamics_derivatives,
)

__all__ = [
    "JOINTS",
    "COORDINATES",
    "Link",
    "Linkage",
    "Fluid",
    "PointLoad",
    "joint_basis",
    "PointStates",
    "point_states",
    "forward_kinematics",
    "integrate",
    "inverse_dynamics",
    "inverse_dynamics_autodiff",
    "inverse_dynamics_derivatives",
    "tree_derivatives",
    "IDDerivatives",
    "mass_matrix",
    "energy",
    "generalized_forces",
    "generalized_forces_derivatives",
    "forward_dynamics",
    "forward_dynamics_jacobians",
    "JointControl",
    "controlled_forward_dynamics",
    "controlled_residual",
    "controlled_efforts",
    "Closure",
    "CLOSURE_KINDS",
    "closure_basis",
    "check_closures",
    "closure_error",
    "closure_jacobian",
    "closure_error_jacobian",
    "closure_error_bias",
    "closure_bias",
    "constrained_forward_dynamics",
    "constrained_forward_dynamics_jacobians",
    "constrained_residual",
    "index3_residual",
    "index3_residual_at_rest",
    "baumgarte_residual",
    "from_toml",
    "closures_from_toml",
    "read_toml",
    "STRAINS",
]

"""Cosserat rods: the Geometric Variable Strain (GVS) model with analytical derivatives (seed 003, digest 003).

API summary (all functions jit/vmap-able; float64 recommended; n = rod.n_dof, n_p = rod.n_points, n_a = rod.n_tendons)::

    rod = Rod(length, section, material, basis, n_gauss=5, magnus_order=4, tendons=(), gravity=(0, 0, -9.81),
              base_pose=None, xi_star=(0, 0, 0, 1, 0, 0), n_segments=1, shear_factor=1.0, rotary_inertia=True)
                                                                 # eqx.Module; arrays are leaves, sizes static
    rod = cdm_rod()                                              # seed 003 CDM: 24 DoF, n_p = 7, 5 tendons, hanging
    CircularSection(r_base, r_tip=None) | CircularSection(fn(X, L)) | RectangularSection(width_y, height_z)
    Material(E, rho, nu=0.5, G=None, damping=0.0)                # damping = υ (Pa·s)
    cowper_shear_factor(section, material) -> k                  # Timoshenko's k (Cowper 1966), for shear_factor
    LegendreBasis(orders) | MonomialBasis(orders) | UserBasis(fn(X, L) -> (6, n), n)
        orders = 6 per-component orders (torsion, bend_y, bend_z, elongation, shear_y, shear_z), None = off
    Tendon(route(X, L) -> (y, z)); cdm_tendons(r_b, r_t, L)

    forward_kinematics(rod, q) -> (n_p, 4, 4) poses at base, Gauss points, tip;  tip_pose -> (4, 4); tip_position ->
    (3,)
    pose_at(rod, q, s) -> (..., 4, 4); strain_at(rod, q, s) -> (..., 6)   # at any arc lengths s ∈ [0, L]
    internal_wrench(rod, q, s, qd=None) -> (..., 6)             # Σ(ξ − ξ*) + Υξ̇ at s, section frame
    body_jacobians(rod, q) -> (n_p, 6, n);  differential_kinematics(rod, q, qd) -> (g, J, eta, J_dot)
    inverse_dynamics(rod, q, qd, qdd) -> (n,)                    # M q̈ − F: inertia, Coriolis, gravity; custom_jvp
    inverse_dynamics_derivatives(rod, q, qd, qdd) -> (dID_dq, dID_dqd, M)
    inverse_dynamics_at_rest(rod, q) -> ID(q, 0, 0) (n,)         # statics; custom_jvp without velocity terms
    mass_matrix(rod, q) -> (n, n)
    generalized_forces(rod, q, qd, u=None, loads=None) -> τ (n,)  # B(q)u − Kq − Dq̇ + Σ J_kᵀ 𝓕ext_k; custom_jvp
    generalized_forces_derivatives(rod, q, qd, u=None, loads=None) -> (dtau_dq, dtau_dqd)
    forward_dynamics(rod, q, qd, u=None, loads=None) -> q̈ (n,)    # M⁻¹(τ − ID(q, q̇, 0)); custom_jvp
    forward_dynamics_jacobians(rod, q, qd, u=None, loads=None) -> (dFD_dq, dFD_dqd)
    energy(rod, q, qd) -> Energy(kinetic, elastic, gravitational)  # .total; its gradient is the conservative force
    Loads(local=(n_p, 6) | None, world=(n_p, 6) | None, contact=CylinderContact(radius, stiffness, exponent=1.5))
    Loads.at_tip(rod, wrench, frame="world" | "local")          # physical wrenches (moment, force)
    actuation_matrix(rod, q) -> B (n, n_a)                       # u = tendon tensions, u ≥ 0 pulls
    rnea(rod, q, qd, qdd, loads=None, level="id"|"mass"|"all")   # the one-pass core (RNEAResult); qd = qdd = None: at
                                                                 # rest

Residuals: dynamics ``τ(q, q̇, u; loads) − ID(q, q̇, q̈) = 0``; statics ``τ(q, 0, u; loads) − ID(q, 0, 0) = 0``.
Jacobians of the custom_jvp functions are the analytical ones (counted in ``ROD_RULE_CALLS``). Conventions: angular
first (strains (torsion, bend y, bend z, elongation, shear y, shear z), twists (ω, v), wrenches (moment, force)), the
rod runs along the local x axis of ``base_pose``, J is the body Jacobian (δg = g (J δq)^).

Modules: :mod:`basis` (Φ), :mod:`geometry` (sections, material, quadrature, D64/D65 densities), :mod:`magnus`
(C1–C14), :mod:`kinematics` (eq. (2), App. C joint terms), :mod:`inverse_dynamics` (RNEA and its derivatives, §4,
App. D), :mod:`forces` (tendons D60–D63, point wrenches (53)/(59), contact (57)–(61)), :mod:`dynamics` (τ, FD, (7),
(9)), :mod:`model` (:class:`Rod`, :func:`cdm_rod`).
"""

from jaxse3.rod import strain_field  # the SE(3) strain-field rod (seed 000 §2.3.2, §7)
from jaxse3.rod._inverse_dynamics import (
    ROD_RULE_CALLS,
    RNEAResult,
    inverse_dynamics,
    inverse_dynamics_at_rest,
    inverse_dynamics_derivatives,
    mass_matrix,
    rnea,
)
from jaxse3.rod.basis import LegendreBasis, MonomialBasis, PiecewiseConstantBasis, StrainBasis, UserBasis
from jaxse3.rod.dynamics import (
    Energy,
    energy,
    forward_dynamics,
    forward_dynamics_jacobians,
    generalized_forces,
    generalized_forces_derivatives,
)
from jaxse3.rod.forces import (
    CylinderContact,
    Loads,
    Tendon,
    actuation_derivative,
    actuation_matrix,
    cdm_tendons,
    external_wrenches,
    internal_forces,
    internal_forces_derivatives,
    internal_wrench,
)
from jaxse3.rod.geometry import CircularSection, Material, RectangularSection, cowper_shear_factor, gauss_points
from jaxse3.rod.kinematics import (
    body_jacobians,
    differential_kinematics,
    forward_kinematics,
    pose_at,
    strain_at,
    tangent_operator,
    tip_pose,
    tip_position,
)
from jaxse3.rod.model import Rod, cdm_rod
from jaxse3.rod.strain_field import ChebyshevField, StrainFieldRod

__all__ = [
    "Rod",
    "cdm_rod",
    "strain_field",
    "ChebyshevField",
    "StrainFieldRod",
    "StrainBasis",
    "LegendreBasis",
    "MonomialBasis",
    "UserBasis",
    "PiecewiseConstantBasis",
    "CircularSection",
    "RectangularSection",
    "Material",
    "cowper_shear_factor",
    "gauss_points",
    "Tendon",
    "cdm_tendons",
    "Loads",
    "CylinderContact",
    "forward_kinematics",
    "tip_pose",
    "tip_position",
    "pose_at",
    "strain_at",
    "body_jacobians",
    "differential_kinematics",
    "tangent_operator",
    "inverse_dynamics",
    "inverse_dynamics_derivatives",
    "inverse_dynamics_at_rest",
    "mass_matrix",
    "rnea",
    "RNEAResult",
    "ROD_RULE_CALLS",
    "generalized_forces",
    "generalized_forces_derivatives",
    "forward_dynamics",
    "forward_dynamics_jacobians",
    "Energy",
    "energy",
    "actuation_matrix",
    "actuation_derivative",
    "internal_forces",
    "internal_forces_derivatives",
    "internal_wrench",
    "external_wrenches",
]

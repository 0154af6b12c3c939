"""Simulation drivers: statics (Newton), dynamics (diffrax implicit/explicit, Newmark-β), batches (vmap), results.

Seed 003 §3: statics by Newton with the analytical Jacobian (eq. (13)), dynamics with an implicit adaptive solver
(Kvaerno) whose stages are solved by :class:`StepChord`, a chord iteration with one Jacobian per step taken from the
models' ``custom_jvp`` rules (eqs. (6)–(9)), or by fixed-step Newmark-β (eqs. (10)–(12); modified Newton, the
Jacobian kept across steps), and explicit solvers for comparison; derivatives of a simulation by the adjoint of
:data:`ADJOINTS`. Batches run as vmapped chunks, Newmark batches as stacks of systems on one time grid
(:func:`simulate_batch`). Models enter as a :class:`System` (forward dynamics + residual of a parameter pytree):
:func:`rod_system` wraps a :mod:`jaxse3.rod` rod, :func:`rigid_system` a rigid tree,
:func:`linkage_system` a :mod:`jaxse3.linkage` linkage of rigid and soft links, open or closed by loop closures
(:func:`constraint_drift` measures the closures' drift along a motion). Seed 004:
:func:`simulate_multibody` integrates a :class:`jaxse3.rigid.absolute.MultibodySystem` (bodies in SE(3) or SO(3)×R³)
with a body-form Munthe-Kaas solver. Every simulation returns a :class:`Trajectory`. Parameter sweeps described in a
file run chunk by chunk, resumably, on one or many processes (:mod:`jaxse3.sim.sweep`, ``jaxse3 sweep``).
"""

from jaxse3.sim import energy_statics  # statics of the strain-field rod by energy minimisation
from jaxse3.sim._multibody import simulate_multibody
from jaxse3.sim.batch import simulate_batch, solve_statics_batch, stack, vmap_on_devices
from jaxse3.sim.dynamics import ADJOINTS, FIXED_STEP, INDEX3, SOLVERS, StepChord, constraint_forces, simulate
from jaxse3.sim.modes import Modes, natural_modes
from jaxse3.sim.statics import StaticsSolution, solve_statics
from jaxse3.sim.sweep import Sweep, SweepResult, load_sweep, read_sweep, run_sweep
from jaxse3.sim.system import (
    SampledInput,
    System,
    as_input,
    constraint_drift,
    finite_difference,
    joint_control,
    linkage_system,
    prescribed_inputs,
    rigid_system,
    rod_system,
)
from jaxse3.sim.trajectory import Trajectory

__all__ = [
    "energy_statics",
    "System",
    "rod_system",
    "rigid_system",
    "linkage_system",
    "constraint_drift",
    "constraint_forces",
    "prescribed_inputs",
    "joint_control",
    "SampledInput",
    "as_input",
    "finite_difference",
    "simulate",
    "simulate_multibody",
    "SOLVERS",
    "FIXED_STEP",
    "INDEX3",
    "ADJOINTS",
    "StepChord",
    "Trajectory",
    "solve_statics",
    "natural_modes",
    "Modes",
    "StaticsSolution",
    "simulate_batch",
    "solve_statics_batch",
    "stack",
    "vmap_on_devices",
    "Sweep",
    "SweepResult",
    "read_sweep",
    "run_sweep",
    "load_sweep",
]

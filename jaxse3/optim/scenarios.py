"""Ready-made trajectory optimisation problems.

**CDM reaching** (:func:`cdm_reach`): the seed 003 cable-driven manipulator (:func:`jaxse3.sim.scenarios.cdm_system`,
hanging along −z, tip at (0, 0, −0.5) m at rest) starts at rest and must bring its tip to a target point at
``t_final`` (default 2 s) and arrive slowly. The paper poses no control problem, so the costs and limits are our
documented choice:

    J = ∫₀ᵀ w_u ½‖u‖² dt + w_T ½‖tip(T) − target‖² + w_v ½‖q̇(T)‖²,     0 ≤ u ≤ u_max,

with w_u = 1e−4 N⁻² s⁻¹ (effort), w_T = 1e3 m⁻² (1 cm of error costs 0.05), w_v = 1e−2 (the strain rates at the end),
u_max = 20 N (the peak tension of the default CDM scenario), tensions piecewise linear in ``n_knots`` = 6 knots per
cable, Newmark-β at the paper's 2 ms (a fixed-step map, smooth in the knots).

:func:`cdm_reach_steps` poses the same problem for DDP: T = t_final / dt steps of implicit Euler (dt = 20 ms by
default; L-stable, so the stiff rod's unresolved modes are damped instead of blowing up), the tensions held over
each step, the effort summed over the steps.

**CDM circle tracking** (:func:`cdm_track_circle`): from rest, after a lead-in of ``lead`` seconds the tip follows
a horizontal circle of radius r about ``centre`` once, starting at ``centre + (r, 0, 0)``:

    J = ∫₀ᵀ (w_c ½‖tip(t) − c(t)‖² [t ≥ lead] + w_u ½‖u‖²) dt,   c(t) = centre + r (cos 2πs, sin 2πs, 0),
    s = (t − lead) / (T − lead),

with w_c = 1e4 m⁻² s⁻¹ (a 1 cm error held for 1 s costs 0.5), w_u = 1e−4, 0 ≤ u ≤ 20 N, tensions cubic B-splines
(smooth, as tracking needs) with ``n_knots`` = 12 per cable, Newmark-β at 2 ms. Defaults r = 3 cm, centre (0, 0,
−0.49) m (1 cm above the tip at rest: the cables shorten the arm as they bend it), T = 2 s, lead 0.5 s — our
documented choice; the paper poses no tracking problem.

**Arm reaching** (:func:`arm_reach`): the standard benchmark problem of Crocoddyl (Mastalli et al., ICRA 2020; its
``arm_manipulation`` example), so that results compare one to one: example-robot-data's ``talos_arm`` (fixed base,
7 DoF) with rotor inertias ``diag(0.2, 0.2, 0.2, 0.2, 0.2, 0.2, 0)`` (the 0.1 that example-robot-data's loader sets
from the SRDF plus the 0.1 the example adds), from x0 = (q0, 0) with q0 = (0.173046, 1.0, −0.52366, 0, 0, 0.1,
−0.005), brings the frame of joint ``gripper_left_joint`` to the pose (R = I, p = (0, 0, 0.4)) in T = 100 steps of
dt = 0.01 s of symplectic Euler:

    J = Σ_k dt (1·½‖r(x_k)‖² + 0.1·½‖x_k − x0‖² + 0.1·½‖u_k‖²) + 1000·½‖r(x_T)‖²,    r = log(H_target⁻¹ H_frame),

with the 6-D SE(3) logarithm as residual (Crocoddyl's ``ResidualModelFramePlacement``). The initial controls are
gravity compensation at q0 (Crocoddyl's ``quasiStatic``).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float

from jaxse3 import rigid
from jaxse3.optim.costs import effort, frame_pose_cost
from jaxse3.optim.ddp import DiscreteProblem, implicit_euler, symplectic_euler
from jaxse3.optim.problem import Problem
from jaxse3.sim import System, rigid_system
from jaxse3.sim.scenarios import cdm_system

__all__ = [
    "reach",
    "cdm_reach",
    "cdm_reach_steps",
    "CDM_REACH_WEIGHTS",
    "cdm_track_circle",
    "CDM_TRACK_WEIGHTS",
    "arm_reach",
    "ARM_REACH_WEIGHTS",
    "TALOS_ARM",
    "talos_arm",
]

#: (effort, terminal tip error, terminal strain rates) weights of :func:`cdm_reach`
CDM_REACH_WEIGHTS = (1e-4, 1e3, 1e-2)


class _Effort:
    """w ½‖u‖² (a named class, so that equal problems share their compiled programs)."""

    def __init__(self, weight: float):
        self.weight = weight

    def __call__(self, t, q, qd, u):
        return self.weight * effort(u)

    def __eq__(self, other):
        return isinstance(other, _Effort) and other.weight == self.weight

    def __hash__(self):
        return hash((_Effort, self.weight))


class _Arrive:
    """w_T ½‖tip(q) − target‖² + w_v ½‖q̇‖² at the end."""

    def __init__(self, system, target: tuple[float, ...], w_tip: float, w_rate: float):
        self.system, self.target, self.w_tip, self.w_rate = system, target, w_tip, w_rate

    def __call__(self, q, qd):
        e = self.system.tip(q) - jnp.asarray(self.target)
        return 0.5 * self.w_tip * jnp.sum(e * e) + 0.5 * self.w_rate * jnp.sum(qd * qd)

    def _key(self):
        return (self.target, self.w_tip, self.w_rate)

    def __eq__(self, other):
        return isinstance(other, _Arrive) and other._key() == self._key()

    def __hash__(self):
        return hash((_Arrive, self._key()))


def _point(fname: str, name: str, value) -> tuple[float, float, float]:
    point = tuple(float(x) for x in jnp.asarray(value, dtype=float).reshape(-1))
    if len(point) != 3:
        raise ValueError(f"{fname}: {name} must be a point (3,), got {len(point)} values")
    return point


def _cdm_problem(system, t_final, running, terminal, n_knots, kind, max_tension, dt, sample_dt) -> Problem:
    """A CDM problem with tensions in [0, max_tension], Newmark-β at ``dt`` and samples every ``sample_dt``."""
    return Problem(
        system,
        t_final,
        running=running,
        terminal=terminal,
        n_knots=n_knots,
        kind=kind,
        lower=0.0,
        upper=max_tension,
        n_save=max(round(t_final / sample_dt), 1) + 1,
        simulation=dict(solver="newmark", dt=dt),
    )


def reach(
    system: System,
    target: Float[ArrayLike, "3"],
    t_final: float,
    *,
    lower: Float[ArrayLike, " n_inputs"] | float,
    upper: Float[ArrayLike, " n_inputs"] | float,
    q0: Float[ArrayLike, " n_dof"] | None = None,
    n_knots: int = 6,
    dt: float = 2e-3,
    weights: tuple[float, float, float] = CDM_REACH_WEIGHTS,
) -> Problem:
    """Any system's reaching problem: its tip (``system.tip``) from rest at ``q0`` to ``target`` (m, world) at
    ``t_final``, with the cost of the CDM's (module docstring; ``weights`` = (w_u, w_T, w_v)), the inputs piecewise
    linear in ``n_knots`` knots within [``lower``, ``upper``], Newmark-β at ``dt``, samples every 20 ms (or every step
    for coarser steps). :func:`cdm_reach` is this problem on the CDM; ``jaxse3 optimize my_robot.toml`` poses it on a
    model file's linkage."""
    target = _point("reach", "target", target)
    if system.n_inputs == 0:
        raise ValueError("reach: the system has no inputs to optimise (no actuated joints, no tendons)")
    w_u, w_T, w_v = weights
    return Problem(
        system,
        t_final,
        running=_Effort(w_u),
        terminal=_Arrive(system, target, w_T, w_v),
        n_knots=n_knots,
        kind="linear",
        lower=lower,
        upper=upper,
        q0=q0,
        n_save=max(round(t_final / max(dt, 0.02)), 1) + 1,
        simulation=dict(solver="newmark", dt=dt),
    )


def cdm_reach(
    target: Float[ArrayLike, "3"] = (0.1, 0.05, -0.45),
    t_final: float = 2.0,
    n_knots: int = 6,
    max_tension: float = 20.0,
    dt: float = 2e-3,
) -> Problem:
    """The CDM reaching problem (module docstring): tip to ``target`` (m, world) at ``t_final`` from rest."""
    target = _point("cdm_reach", "target", target)
    return reach(cdm_system(), target, t_final, lower=0.0, upper=max_tension, n_knots=n_knots, dt=dt)


def cdm_reach_steps(
    target: Float[ArrayLike, "3"] = (0.1, 0.05, -0.45),
    t_final: float = 2.0,
    dt: float = 0.02,
    max_tension: float = 20.0,
) -> tuple[DiscreteProblem, Float[Array, "T 5"], dict[str, float]]:
    """The CDM reaching problem (module docstring) as a :class:`DiscreteProblem` for :func:`solve_ddp`: the same
    costs on T = t_final / dt steps of :func:`implicit_euler` (the rod is stiff: an explicit step would need
    dt ≲ 1e−4 s), tensions held over each step.

        J = Σ_k dt w_u ½‖u_k‖² + w_T ½‖tip(q_T) − target‖² + w_v ½‖q̇_T‖²,   0 ≤ u ≤ max_tension.

    Returns ``(problem, us0, bounds)``: ``solve_ddp(problem, us0, **bounds)`` solves it from zero tensions;
    ``target`` may be traced (``jax.vmap`` over targets)."""
    steps = t_final / dt
    if not (dt > 0 and abs(steps - round(steps)) < 1e-9 * max(steps, 1.0) and round(steps) >= 1):
        raise ValueError(f"cdm_reach_steps: t_final = {t_final} must be a positive multiple of dt = {dt}")
    if not max_tension > 0:
        raise ValueError(f"cdm_reach_steps: max_tension must be positive, got {max_tension}")
    target = jnp.asarray(target, dtype=float)
    if target.shape != (3,):
        raise ValueError(f"cdm_reach_steps: target must be a point (3,), got shape {target.shape}")
    system = cdm_system()
    n = system.n_dof
    w_u, w_T, w_v = CDM_REACH_WEIGHTS

    def running(x, u):
        return dt * w_u * effort(u)

    def terminal(x):
        e = system.tip(x[:n]) - target
        return w_T * 0.5 * e @ e + w_v * 0.5 * x[n:] @ x[n:]

    horizon = round(steps)
    problem = DiscreteProblem(implicit_euler(system, dt), running, terminal, jnp.zeros(2 * n), horizon, system.n_inputs)
    return problem, jnp.zeros((horizon, system.n_inputs)), dict(lower=0.0, upper=float(max_tension))


#: (tracking, effort) weights of :func:`cdm_track_circle`
CDM_TRACK_WEIGHTS = (1e4, 1e-4)


class _TrackCircle:
    """w_c ½‖tip(q) − c(t)‖² after the lead-in, plus w_u ½‖u‖² (hashable by its parameters, like :class:`_Effort`)."""

    def __init__(self, system, centre, radius, lead, t_final, w_track, w_effort):
        self.system = system
        self.params = (centre, radius, lead, t_final, w_track, w_effort)

    def circle(self, t):
        centre, radius, lead, t_final, _, _ = self.params
        phase = 2.0 * jnp.pi * (t - lead) / (t_final - lead)
        return jnp.asarray(centre) + radius * jnp.stack([jnp.cos(phase), jnp.sin(phase), jnp.zeros_like(phase)])

    def __call__(self, t, q, qd, u):
        _, _, lead, _, w_track, w_effort = self.params
        e = self.system.tip(q) - self.circle(t)
        return jnp.where(t >= lead, 0.5 * w_track * jnp.sum(e * e), 0.0) + w_effort * effort(u)

    def __eq__(self, other):
        return isinstance(other, _TrackCircle) and other.params == self.params

    def __hash__(self):
        return hash((_TrackCircle, self.params))


def cdm_track_circle(
    radius: float = 0.03,
    centre: Float[ArrayLike, "3"] = (0.0, 0.0, -0.49),
    t_final: float = 2.0,
    lead: float = 0.5,
    n_knots: int = 12,
    max_tension: float = 20.0,
    dt: float = 2e-3,
) -> Problem:
    """The CDM circle-tracking problem (module docstring); ``problem.running.circle(t)`` is the reference point."""
    centre = _point("cdm_track_circle", "centre", centre)
    if not radius > 0:
        raise ValueError(f"cdm_track_circle: radius must be positive, got {radius}")
    if not 0 <= lead < t_final:
        raise ValueError(f"cdm_track_circle: lead must lie in [0, t_final) = [0, {t_final}), got {lead}")
    system = cdm_system()
    w_track, w_u = CDM_TRACK_WEIGHTS
    running = _TrackCircle(system, centre, float(radius), float(lead), float(t_final), w_track, w_u)
    return _cdm_problem(system, t_final, running, None, n_knots, "bspline", max_tension, dt, 0.01)


#: (running goal, state regularisation, control regularisation, terminal goal) weights of :func:`arm_reach`
ARM_REACH_WEIGHTS = (1.0, 0.1, 0.1, 1000.0)
#: the Crocoddyl benchmark's robot: example-robot-data name, controlled frame, q0 and rotor inertias
TALOS_ARM = {
    "robot": "talos_arm",
    "frame": "gripper_left_joint",
    "q0": (0.173046, 1.0, -0.52366, 0.0, 0.0, 0.1, -0.005),
    "armature": (0.2, 0.2, 0.2, 0.2, 0.2, 0.2, 0.0),
    # the URDF's <limit effort> (N m; Pinocchio's model.effortLimit), the bounds of Crocoddyl's box solvers
    "effort_limit": (22.32, 17.86, 17.86, 3.0, 6.6, 6.6, 1.0),
}


@functools.cache
def talos_arm() -> rigid.Model:
    """The benchmark's robot: example-robot-data's ``talos_arm`` with the rotor inertias of :data:`TALOS_ARM`
    (loaded once, eagerly, also when first asked for inside a traced function)."""
    with jax.ensure_compile_time_eval():
        return rigid.example_robot(TALOS_ARM["robot"]).with_armature(TALOS_ARM["armature"])


def arm_reach(
    target: Float[ArrayLike, "3"] | Float[ArrayLike, "4 4"] = (0.0, 0.0, 0.4),
    horizon: int = 100,
    dt: float = 0.01,
    model: rigid.Model | None = None,
    frame: str = TALOS_ARM["frame"],
    q0: Float[ArrayLike, " nv"] = TALOS_ARM["q0"],
) -> tuple[DiscreteProblem, Float[Array, "T nv"]]:
    """The arm reaching problem (module docstring) and its initial controls (gravity compensation at q0).

    Args:
        target: the frame's target position (3,) (orientation the identity) or pose (4, 4); may be traced, so
            ``jax.vmap(lambda p: solve_ddp(*arm_reach(p)))`` solves a batch of targets.
        horizon, dt: the number of steps T and their length (s).
        model: the robot (default: example-robot-data's ``talos_arm`` with the benchmark's rotor inertias; needs
            ``pip install "jaxse3[robots]"``); fixed base, one-DoF joints.
        frame: the name of the joint whose frame is steered (:attr:`jaxse3.rigid.Model.names`).
        q0: the initial configuration (the velocity is zero); also the state regularisation's reference.
    """
    model = talos_arm() if model is None else model
    if frame not in model.names:
        raise ValueError(f"arm_reach: frame {frame!r} is not a joint of the model; joints: {list(model.names)}")
    body = model.names.index(frame)
    target = jnp.asarray(target, dtype=float)
    if target.shape == (3,):
        target = jnp.eye(4).at[:3, 3].set(target)
    elif target.shape != (4, 4):
        raise ValueError(f"arm_reach: target must be a position (3,) or a pose (4, 4), got shape {target.shape}")
    q0 = jnp.asarray(q0, dtype=float)
    if q0.shape != (model.nv,):
        raise ValueError(f"arm_reach: q0 must have shape (nv,) = ({model.nv},), got {q0.shape}")
    x0 = jnp.concatenate([q0, jnp.zeros(model.nv)])
    w_goal, w_x, w_u, w_terminal = ARM_REACH_WEIGHTS

    def goal(x):  # closed-form gradient and Hessian rules
        return frame_pose_cost(model, x[: model.nq], body, target)

    def running(x, u):
        dx = x - x0
        return dt * (w_goal * goal(x) + w_x * 0.5 * jnp.sum(dx * dx) + w_u * effort(u))

    def terminal(x):
        return w_terminal * goal(x)

    problem = DiscreteProblem(symplectic_euler(rigid_system(model), dt), running, terminal, x0, horizon, model.nv)
    gravity = rigid.rnea(model, q0, jnp.zeros(model.nv), jnp.zeros(model.nv))
    return problem, jnp.broadcast_to(gravity, (horizon, model.nv))

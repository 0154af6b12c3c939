"""Trajectory optimisation through the simulator (seed 003's models, rigid trees; later linkages).

* :class:`Problem`: a :class:`~jaxse3.sim.System`, a horizon, a control parameterisation
  (:class:`~jaxse3.optim.controls.Controls`: piecewise constant, piecewise linear, cubic B-spline knots), a running
  and a terminal cost written as plain JAX functions (helpers in :mod:`jaxse3.optim.costs`: SE(3)-log pose error, tip
  position, effort, state regularisation) and bounds on the controls.
* :func:`solve_shooting`: single shooting, or multiple shooting (``segments``), with optax (projected L-BFGS with a
  backtracking search, Adam or any optax transformation with projected steps), gradients through
  :func:`jaxse3.sim.simulate` with the models' analytical rules, in forward or reverse mode by the problem's size
  (:func:`gradient_mode`).
* :func:`solve_ddp` on a :class:`DiscreteProblem` (a step map: :func:`symplectic_euler` of a system, or
  :func:`implicit_euler` for stiff ones such as rods):
  full second-order DDP with the exact second derivatives of the dynamics, or Gauss–Newton iLQR; one jit-able,
  vmap-able ``lax.while_loop``; result :class:`DDPSolution`.
* :class:`Solution`: the optimised knots and motion (``u`` (T, n_inputs), ``x`` (T + 1, 2 n_dof)), cost and gradient
  histories, ``converged`` and the reason it stopped; ``save``/``load`` as ``.npz``.
"""

from jaxse3.optim import costs
from jaxse3.optim.controls import KINDS, Controls
from jaxse3.optim.ddp import DDPSolution, DiscreteProblem, implicit_euler, solve_ddp, symplectic_euler
from jaxse3.optim.problem import Problem
from jaxse3.optim.shooting import OPTIMISERS, gradient_mode, solve_shooting
from jaxse3.optim.solution import Solution

__all__ = [
    "Problem",
    "Controls",
    "KINDS",
    "costs",
    "solve_shooting",
    "gradient_mode",
    "OPTIMISERS",
    "Solution",
    "DiscreteProblem",
    "solve_ddp",
    "DDPSolution",
    "symplectic_euler",
    "implicit_euler",
]

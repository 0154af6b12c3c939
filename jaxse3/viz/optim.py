"""Matplotlib figure of a trajectory optimisation: cost history, tip path with its target, optimised controls.

Inputs are plain arrays (a :class:`~jaxse3.optim.Solution` or the arrays of its saved ``.npz``).
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
from jaxtyping import ArrayLike, Float
from matplotlib.figure import Figure

from jaxse3.viz.rod import _equal, finish, plot_tip_path, plt

__all__ = ["plot_solution"]


def plot_solution(
    solution: Any,
    path: str | os.PathLike | None = None,
    target: Float[ArrayLike, "3"] | None = None,
    title: str = "",
    input_label: str = "u",
    input_axis: str = "controls",
) -> Figure:
    """Three panels: the cost J per iteration (log scale), the tip path (3-D, with ``target`` as ×), the controls
    u(t) (lines ``input_label``1, 2, …; ``input_axis`` on their axis, with units, e.g. "cable tension [N]").
    ``solution``: anything with ``cost_history``, ``t``, ``u`` (T, n_inputs), ``tip`` (T + 1, 3). Saves a PNG to
    ``path`` when given; returns the figure."""
    cost, t, u, tip = (np.asarray(getattr(solution, k)) for k in ("cost_history", "t", "u", "tip"))
    fig = plt.figure(figsize=(13, 4))
    ax = fig.add_subplot(1, 3, 1)
    ax.semilogy(np.arange(len(cost)), cost, "-o", ms=3)
    ax.set_xlabel("iteration"), ax.set_ylabel("cost J"), ax.grid(alpha=0.3, which="both")
    ax3 = fig.add_subplot(1, 3, 2, projection="3d")
    plot_tip_path(tip, ax=ax3)
    pts = tip
    if target is not None:
        target = np.asarray(target, dtype=float)
        ax3.scatter(*target, color="k", marker="x", s=40, label="target")
        pts = np.concatenate([tip, target[None]])
    _equal(ax3, pts)
    ax3.legend(fontsize=7)
    ax2 = fig.add_subplot(1, 3, 3)
    for k in range(u.shape[1]):
        ax2.step(t[:-1], u[:, k], where="post", label=f"{input_label}{k + 1}")
    ax2.set_xlabel("t [s]"), ax2.set_ylabel(input_axis), ax2.legend(fontsize=7), ax2.grid(alpha=0.3)
    return finish(fig, title, path)

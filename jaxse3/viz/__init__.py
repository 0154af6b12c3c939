"""Plots (matplotlib, the ``plot`` extra): rod shapes, tip paths, trajectory summaries, optimisation results."""

from jaxse3.viz.optim import plot_solution
from jaxse3.viz.rod import plot_shapes, plot_tip_path, plot_trajectory

__all__ = ["plot_shapes", "plot_tip_path", "plot_trajectory", "plot_solution"]

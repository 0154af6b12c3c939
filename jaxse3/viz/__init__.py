"""Plots (matplotlib, the ``plot`` extra): rod shapes, tip paths and trajectory summaries."""

from jaxse3.viz.rod import plot_shapes, plot_tip_path, plot_trajectory

__all__ = ["plot_shapes", "plot_tip_path", "plot_trajectory"]

"""Plots and animations (matplotlib): rod shapes, tip paths, trajectory summaries, optimisation results, MP4/GIF
animations of simulations (:func:`animate_trajectory`; MP4 through the ``plot`` extra's ffmpeg) and an interactive
3-D viewer in the browser (:class:`TrajectoryViewer`, the ``viewer`` extra)."""

from jaxse3.viz.animation import FORMATS, animate_trajectory, ffmpeg_executable
from jaxse3.viz.optim import plot_solution
from jaxse3.viz.rod import (
    box_lines,
    plot_inputs,
    plot_shapes,
    plot_tip,
    plot_tip_path,
    plot_trajectory,
    polylines,
    trajectory_arrays,
    trajectory_inputs,
)
from jaxse3.viz.viewer import TrajectoryViewer

__all__ = [
    "plot_shapes",
    "plot_tip_path",
    "plot_trajectory",
    "plot_inputs",
    "trajectory_inputs",
    "polylines",
    "box_lines",
    "plot_tip",
    "trajectory_arrays",
    "plot_solution",
    "animate_trajectory",
    "ffmpeg_executable",
    "FORMATS",
    "TrajectoryViewer",
]

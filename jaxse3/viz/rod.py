"""Matplotlib figures of rod simulations: centreline snapshots, the tip path, a one-call summary of a trajectory.

Inputs are plain arrays (a :class:`~jaxse3.sim.Trajectory` or the arrays of a saved ``.npz``), so figures can be made
without the model. Axes are 3-D (``projection="3d"``) with equal scaling; lengths in metres.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import matplotlib

if os.environ.get("MPLBACKEND") is None and not os.environ.get("DISPLAY"):
    matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
from jaxtyping import ArrayLike, Float
from matplotlib.figure import Figure
from mpl_toolkits.mplot3d import Axes3D

__all__ = [
    "plot_shapes",
    "plot_tip_path",
    "plot_inputs",
    "plot_trajectory",
    "trajectory_inputs",
    "polylines",
    "box_lines",
    "plot_tip",
    "trajectory_arrays",
]


def _axes3d(ax):
    if ax is None:
        ax = plt.figure(figsize=(5, 5)).add_subplot(projection="3d")
    return ax


def _equal(ax, pts: np.ndarray) -> None:
    pts = pts.reshape(-1, 3)
    centre = (pts.max(0) + pts.min(0)) / 2
    half = max(float((pts.max(0) - pts.min(0)).max()) / 2, 1e-3)
    for set_lim, c in zip((ax.set_xlim, ax.set_ylim, ax.set_zlim), centre):
        set_lim(c - half, c + half)
    ax.set_xlabel("x [m]"), ax.set_ylabel("y [m]"), ax.set_zlabel("z [m]")


def finish(fig: Figure, title: str, path: str | os.PathLike | None) -> Figure:
    """Give ``fig`` its title and layout, save it as a PNG to ``path`` when given, and return it."""
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=120)
    return fig


def polylines(points: Float[ArrayLike, "*k n_points 3"], edges: Sequence[tuple[int, int]] | None) -> np.ndarray:
    """The points to draw as one line: ``points`` themselves (one chain) when ``edges`` is None, else each edge (a, b)
    as (p_a, p_b, NaN), so that a tree (a linkage's :attr:`~jaxse3.linkage.Linkage.edges`) draws without joining its
    branches; shape ``(*k, m, 3)``."""
    pts = np.asarray(points, dtype=float)
    if edges is None:
        return pts
    e = np.asarray(edges, dtype=int).reshape(-1, 2)
    if e.size and (e.min() < 0 or e.max() >= pts.shape[-2]):
        raise ValueError(f"'edges' must index the {pts.shape[-2]} points, got indices up to {e.max()}")
    gap = np.full(pts.shape[:-2] + (len(e), 1, 3), np.nan)
    segments = np.concatenate([pts[..., e[:, 0], None, :], pts[..., e[:, 1], None, :], gap], axis=-2)
    return segments.reshape(pts.shape[:-2] + (3 * len(e), 3))


_CORNERS = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], dtype=float)
_BOX_EDGES = [(a, b) for a in range(8) for b in range(a + 1, 8) if np.sum(_CORNERS[a] != _CORNERS[b]) == 1]


def box_lines(poses: Float[ArrayLike, "*k n_b 4 4"], half_extents: Float[ArrayLike, "n_b 3"]) -> np.ndarray:
    """The 12 edges of boxes (half sides ``half_extents``, at ``poses`` in the world) as one line with NaN gaps
    (:func:`polylines`), shape ``(*k, 36 n_b, 3)``; e.g. a linkage's rigid bodies
    (:meth:`~jaxse3.linkage.Linkage.inertia_boxes`)."""
    g, half = np.asarray(poses, dtype=float), np.asarray(half_extents, dtype=float)
    if g.shape[-2:] != (4, 4) or half.shape != g.shape[-3:-2] + (3,):
        raise ValueError(
            f"'boxes': poses (..., n_b, 4, 4) and half extents (n_b, 3) expected, got {g.shape}, {half.shape}"
        )
    local = _CORNERS * half[:, None, :]  # (n_b, 8, 3)
    corners = np.einsum("...bij,bcj->...bci", g[..., :3, :3], local) + g[..., None, :3, 3]
    n_b = half.shape[0]
    edges = [(8 * b + i, 8 * b + j) for b in range(n_b) for i, j in _BOX_EDGES]
    return polylines(corners.reshape(g.shape[:-3] + (8 * n_b, 3)), edges)


def plot_shapes(
    points: Float[ArrayLike, "*k n_points 3"],
    ax: Axes3D | None = None,
    labels: Sequence[str] | None = None,
    cmap: str = "viridis",
    edges: Sequence[tuple[int, int]] | None = None,
    boxes: tuple[ArrayLike, ArrayLike] | None = None,
) -> Axes3D:
    """Centrelines ``points`` (k, n_points, 3) (or one (n_points, 3)) as lines through their points, or along
    ``edges`` (pairs of point indices, e.g. a linkage's :attr:`~jaxse3.linkage.Linkage.edges`), with rigid bodies as
    the wireframes of ``boxes`` = (poses (k, n_b, 4, 4), half extents (n_b, 3)) (:func:`box_lines`); returns the
    axes."""
    pts = np.asarray(points, dtype=float)
    pts = pts[None] if pts.ndim == 2 else pts
    if pts.ndim != 3 or pts.shape[-1] != 3:
        raise ValueError(f"plot_shapes: points must have shape (k, n_points, 3), got {np.shape(points)}")
    ax = _axes3d(ax)
    colors = plt.get_cmap(cmap)(np.linspace(0, 1, len(pts)))
    for i, (p, c) in enumerate(zip(polylines(pts, edges), colors)):
        ax.plot(p[:, 0], p[:, 1], p[:, 2], "-o", color=c, ms=2, label=None if labels is None else labels[i])
    if boxes is not None:
        poses = np.asarray(boxes[0], dtype=float).reshape((len(pts), -1, 4, 4))
        for p, c in zip(box_lines(poses, boxes[1]), colors):
            ax.plot(p[:, 0], p[:, 1], p[:, 2], "-", color=c, lw=0.8)
    ax.scatter(*pts[0, 0], color="k", marker="s", s=20)  # the base
    _equal(ax, pts)
    if labels is not None:
        ax.legend(fontsize=7)
    return ax


def plot_tip_path(
    tip: Float[ArrayLike, "n 3"], ax: Axes3D | None = None, color: str = "tab:red", label: str = "tip path"
) -> Axes3D:
    """The tip path ``tip`` (n, 3) as a 3-D line with start (○) and end (●) markers; returns the axes."""
    tip = np.asarray(tip, dtype=float)
    if tip.ndim != 2 or tip.shape[-1] != 3:
        raise ValueError(f"plot_tip_path: tip must have shape (n, 3), got {tip.shape}")
    ax = _axes3d(ax)
    ax.plot(tip[:, 0], tip[:, 1], tip[:, 2], color=color, lw=1, label=label)
    ax.scatter(*tip[0], color=color, facecolors="none", s=25)
    ax.scatter(*tip[-1], color=color, s=25)
    return ax


def plot_inputs(
    t: Float[ArrayLike, " n"],
    u: Float[ArrayLike, "n n_inputs"] | None,
    ax: Any = None,
    label: str = "input",
) -> Any:
    """The inputs ``u`` (n, n_inputs) against time, one line u1, u2, … per input, on ``ax`` (new axes if None); returns
    the axes. ``label``: the y axis, e.g. "cable tension [N]"."""
    t, u = np.asarray(t, dtype=float), np.asarray(u, dtype=float).reshape(len(t), -1)
    ax = plt.figure(figsize=(5, 4)).add_subplot() if ax is None else ax
    for k in range(u.shape[1]):
        ax.plot(t, u[:, k], lw=1.2, label=f"u{k + 1}")
    ax.set_xlabel("t [s]"), ax.set_ylabel(label), ax.grid(alpha=0.3), ax.legend(fontsize=7, ncol=2)
    return ax


def trajectory_arrays(trajectory: Any, who: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(t, points, tip)`` of a trajectory as float arrays, checked: (n,), (n, n_points, 3), (n, 3); ``who`` names
    the caller in the error."""
    t, pts, tip = (np.asarray(getattr(trajectory, k), dtype=float) for k in ("t", "points", "tip"))
    n = len(t)
    if t.ndim != 1 or pts.ndim != 3 or pts.shape[0] != n or pts.shape[-1] != 3 or tip.shape != (n, 3):
        raise ValueError(
            f"{who}: 'trajectory' needs t (n,), points (n, n_points, 3) and tip (n, 3), got shapes "
            f"{t.shape}, {pts.shape}, {tip.shape}"
        )
    return t, pts, tip


def plot_tip(t: Float[ArrayLike, " n"], tip: Float[ArrayLike, "n 3"], ax: Any = None) -> Any:
    """The tip's world coordinates against time on ``ax`` (new axes if None); returns the axes."""
    t, tip = np.asarray(t, dtype=float), np.asarray(tip, dtype=float)
    ax = plt.figure(figsize=(5, 4)).add_subplot() if ax is None else ax
    for k, name in enumerate("xyz"):
        ax.plot(t, tip[:, k], lw=1.2, label=f"tip {name}")
    ax.set_xlabel("t [s]"), ax.set_ylabel("tip position [m]"), ax.grid(alpha=0.3), ax.legend(fontsize=7)
    return ax


def trajectory_inputs(trajectory: Any) -> np.ndarray | None:
    """The inputs ``u`` (n, n_inputs) of a trajectory, or None when it has none."""
    u = getattr(trajectory, "u", None)
    if u is None:
        return None
    u = np.asarray(u, dtype=float).reshape(len(np.asarray(trajectory.t)), -1)
    return u if u.shape[1] else None


def plot_trajectory(
    trajectory: Any,
    path: str | os.PathLike | None = None,
    n_snapshots: int = 6,
    title: str = "",
    input_label: str = "input",
    edges: Sequence[tuple[int, int]] | None = None,
    boxes: tuple[ArrayLike, ArrayLike] | None = None,
) -> Figure:
    """Summary figure: 3-D shape snapshots with the tip path, the tip coordinates against time and, when the
    trajectory has inputs, the inputs against time (``input_label`` on their axis, e.g. "cable tension [N]").
    ``edges``: how to join the points (:func:`plot_shapes`; a linkage's ``edges``), default one chain; ``boxes``:
    rigid bodies as (poses (n, n_b, 4, 4) at the saved times, half extents (n_b, 3)) (:func:`box_lines`).

    ``trajectory``: anything with arrays ``t`` (n,), ``points`` (n, n_points, 3), ``tip`` (n, 3) and optionally ``u``
    (n, n_inputs). Samples whose points are not finite (after a solver failure, ``simulate(..., throw=False)``) are
    left out of the snapshots and the axes' limits. Saves a PNG to ``path`` when given; returns the figure.
    """
    t, pts, tip = trajectory_arrays(trajectory, "plot_trajectory")
    u = trajectory_inputs(trajectory)
    finite = np.flatnonzero(np.isfinite(pts).reshape(len(t), -1).all(axis=1) & np.isfinite(tip).all(axis=1))
    if finite.size == 0:
        raise ValueError("plot_trajectory: no sample of 'trajectory' has finite points")
    panels = 2 if u is None else 3
    fig = plt.figure(figsize=(5 * panels, 4.5))
    ax = fig.add_subplot(1, panels, 1, projection="3d")
    idx = np.unique(finite[np.linspace(0, finite.size - 1, n_snapshots).round().astype(int)])
    snapshot_boxes = None if boxes is None else (np.asarray(boxes[0])[idx], boxes[1])
    plot_shapes(pts[idx], ax=ax, labels=[f"t = {t[i]:.2f} s" for i in idx], edges=edges, boxes=snapshot_boxes)
    plot_tip_path(tip, ax=ax)
    _equal(ax, np.concatenate([pts[finite].reshape(-1, 3), tip[finite]]))
    plot_tip(t, tip, fig.add_subplot(1, panels, 2))
    if u is not None:
        plot_inputs(t, u, fig.add_subplot(1, panels, 3), input_label)
    return finish(fig, title, path)

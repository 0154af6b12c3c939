"""Animations of simulations: the robot's centrelines moving in 3-D beside its inputs, written as MP4 or GIF.

Inputs are plain arrays, as for the figures of :mod:`jaxse3.viz.rod`: anything with ``t`` (n,), ``points``
(n, n_points, 3) and ``tip`` (n, 3), and optionally ``u`` (n, n_inputs) (a :class:`~jaxse3.sim.Trajectory`, or the
arrays of its saved ``.npz``). Rods and linkages draw alike (a linkage along its ``edges``, its rigid bodies as
boxes).

The figure is drawn once; every frame then redraws only what moves (matplotlib's blitting: the centreline, the tip
path, the clock, the time cursor) and hands the canvas's pixels to the encoder: 13× faster for MP4 than redrawing the
figure per frame, as matplotlib's ``MovieWriter`` does (``benchmarks/animation.py``). MP4 is encoded by the ffmpeg of
the ``imageio-ffmpeg`` wheel (``pip install "jaxse3[plot]"``; no system install needed; H.264, yuv420p), GIF by Pillow
(which comes with matplotlib).
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator, Sequence
from typing import Any

import matplotlib

if os.environ.get("MPLBACKEND") is None and not os.environ.get("DISPLAY"):
    matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np

from jaxse3.viz.rod import _equal, box_lines, plot_inputs, plot_tip, polylines, trajectory_arrays, trajectory_inputs

__all__ = ["animate_trajectory", "ffmpeg_executable", "FORMATS"]

#: the file formats :func:`animate_trajectory` writes (by the path's suffix)
FORMATS = ("mp4", "gif")


def ffmpeg_executable() -> str | None:
    """The ffmpeg that MP4s are written with (the ``imageio-ffmpeg`` wheel's, or the one it is pointed to by
    ``IMAGEIO_FFMPEG_EXE``), or None without ``imageio-ffmpeg``."""
    try:
        import imageio_ffmpeg
    except ImportError:
        return None
    return imageio_ffmpeg.get_ffmpeg_exe()


def _format(path: str) -> str:
    suffix = os.path.splitext(path)[1].lower().lstrip(".")
    if suffix not in FORMATS:
        raise ValueError(f"animate_trajectory: 'path' must end in one of {', '.join('.' + f for f in FORMATS)}")
    if suffix == "mp4" and ffmpeg_executable() is None:
        raise RuntimeError(
            "animate_trajectory: writing MP4 needs ffmpeg: pip install 'jaxse3[plot]' (the imageio-ffmpeg wheel), "
            "or write a GIF (a path ending in .gif)"
        )
    return suffix


def _encode(kind: str, path: str, frames: Iterator[np.ndarray], fps: int) -> None:
    """Write the RGBA frames (h, w, 4) as an MP4 (H.264 by imageio-ffmpeg) or a looping GIF (Pillow)."""
    first = next(frames)
    if kind == "gif":
        from PIL import Image

        # one palette, the first frame's (every artist is drawn there), for all frames: no flicker between frames'
        # palettes, and mapping to a given palette is ~8× faster than a median cut per frame
        palette = Image.fromarray(first[..., :3]).quantize()
        images = [palette] + [
            Image.fromarray(f[..., :3]).quantize(palette=palette, dither=Image.Dither.NONE) for f in frames
        ]
        images[0].save(path, save_all=True, append_images=images[1:], duration=1000 / fps, loop=0)
        return
    import imageio_ffmpeg

    h, w = first.shape[:2]
    out = imageio_ffmpeg.write_frames(path, (w, h), fps=fps, pix_fmt_in="rgba", macro_block_size=2)
    out.send(None)
    try:
        for f in itertools.chain([first], frames):
            out.send(np.ascontiguousarray(f))
    finally:
        out.close()


def animate_trajectory(
    trajectory: Any,
    path: str | os.PathLike,
    fps: int = 25,
    max_frames: int = 250,
    input_label: str = "input",
    title: str = "",
    dpi: int = 100,
    edges: Sequence[tuple[int, int]] | None = None,
    boxes: tuple[Any, Any] | None = None,
) -> str:
    """Write an animation of ``trajectory`` to ``path`` (``.mp4`` or ``.gif``) and return the path.

    Left, in 3-D with equal axes in metres: the centrelines at each saved time (the base ■, the points joined), the tip
    path up to that time and the time. Right: the inputs ``u`` against time (``input_label``, e.g. "cable tension
    [N]"; one line per input) with a cursor at the frame's time, or the tip coordinates when there are no inputs. At
    most ``max_frames`` frames, evenly spaced over the saved times, shown at ``fps`` frames per second. ``edges``:
    how to join the points (a linkage's :attr:`~jaxse3.linkage.Linkage.edges`), default one chain; ``boxes``: rigid
    bodies as (poses (n, n_b, 4, 4) at the saved times, half extents (n_b, 3)) (:func:`~jaxse3.viz.box_lines`).
    """
    path = os.fspath(path)
    for name, value in (("fps", fps), ("max_frames", max_frames), ("dpi", dpi)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"animate_trajectory: '{name}' must be a positive int, got {value!r}")
    kind = _format(path)
    t, pts, tip = trajectory_arrays(trajectory, "animate_trajectory")
    u = trajectory_inputs(trajectory)
    shapes = polylines(pts, edges)
    bodies = None if boxes is None else box_lines(np.asarray(boxes[0]).reshape(len(t), -1, 4, 4), boxes[1])
    frames = np.unique(np.linspace(0, len(t) - 1, min(max_frames, len(t))).round().astype(int))

    fig = plt.figure(figsize=(10, 4.5), dpi=dpi)
    ax = fig.add_subplot(1, 2, 1, projection="3d")
    _equal(ax, np.concatenate([pts.reshape(-1, 3), tip]))
    ax.scatter(*pts[0, 0], color="k", marker="s", s=20, label="base")
    (line,) = ax.plot(*shapes[0].T, "-o", color="tab:blue", ms=2, lw=1.5, label="centreline", animated=True)
    (trace,) = ax.plot(*tip[:1].T, color="tab:red", lw=1, label="tip path", animated=True)
    clock = ax.text2D(0.02, 0.95, "", transform=ax.transAxes, animated=True)
    moving = [line, trace, clock]
    if bodies is not None:
        moving.append(ax.plot(*bodies[0].T, color="tab:gray", lw=1, label="rigid bodies", animated=True)[0])
    ax.legend(fontsize=7, loc="upper right")
    side = fig.add_subplot(1, 2, 2)
    if u is not None:
        plot_inputs(t, u, side, input_label)
    else:
        plot_tip(t, tip, side)
    cursor = side.axvline(t[0], color="k", lw=1, animated=True)
    if title:
        fig.suptitle(title)
    fig.tight_layout()

    canvas = fig.canvas
    canvas.draw()  # everything but the animated artists, once
    background = canvas.copy_from_bbox(fig.bbox)

    def render(i: int) -> np.ndarray:
        canvas.restore_region(background)
        line.set_data_3d(*shapes[i].T)
        trace.set_data_3d(*tip[: i + 1].T)
        clock.set_text(f"t = {t[i]:.2f} s")
        cursor.set_xdata([t[i], t[i]])
        if bodies is not None:
            moving[-1].set_data_3d(*bodies[i].T)
        for artist in moving:
            ax.draw_artist(artist)
        side.draw_artist(cursor)
        canvas.blit(fig.bbox)
        return np.array(canvas.buffer_rgba())

    try:
        _encode(kind, path, (render(i) for i in frames), fps)
    finally:
        plt.close(fig)
    return path

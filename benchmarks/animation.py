"""Animations: ``jaxse3.viz.animate_trajectory`` against matplotlib's own animation writers, side by side.

The same figure (3-D centreline and tip path beside the inputs with a time cursor) and the same frames of a 10 s CDM
run (``jaxse3 run cdm``'s saved trajectory: 201 samples, 7 points, 5 cables):

* jaxse3: the figure drawn once, each frame redrawing only its moving artists (blitting) and handing the pixels to
  imageio-ffmpeg (MP4) or Pillow (GIF);
* matplotlib: ``FuncAnimation(...).save`` with ``FFMpegWriter`` (the same ffmpeg) or ``PillowWriter``, which redraw
  the whole figure for every frame.

Also the simulation's own compile + run time, which the issue's target compares with (animation ≤ 2× it), read from
the main job's output. Run on a quiet machine: ``python benchmarks/animation.py``.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np


def _cdm_run(out: str) -> tuple[object, float]:
    """The main job's trajectory, and its compile + simulation seconds (fresh cache off, as a first run)."""
    r = subprocess.run(
        [sys.executable, "-m", "jaxse3.cli", "run", "cdm", "--out", out, "--no-progress"],
        capture_output=True,
        text=True,
        env={**os.environ, "JAXSE3_CACHE": "0"},
        check=True,
    )
    compile_s = float(re.search(r"compile: ([\d.]+) s", r.stdout).group(1))
    sim_s = float(re.search(r"simulated in ([\d.]+) s wall", r.stdout).group(1))
    from jaxse3.sim import Trajectory

    return Trajectory.load(os.path.join(out, "cdm.npz")), compile_s + sim_s


def _matplotlib_writer(traj, path: str, fps: int = 25) -> None:
    """The same figure, saved by matplotlib's FuncAnimation and its writer (whole-figure redraw per frame)."""
    import matplotlib.pyplot as plt
    from matplotlib import animation

    from jaxse3.viz import ffmpeg_executable, plot_inputs

    t, pts, tip, u = (np.asarray(getattr(traj, k)) for k in ("t", "points", "tip", "u"))
    fig = plt.figure(figsize=(10, 4.5), dpi=100)
    ax = fig.add_subplot(1, 2, 1, projection="3d")
    (line,) = ax.plot(*pts[0].T, "-o", ms=2)
    (trace,) = ax.plot(*tip[:1].T, color="tab:red", lw=1)
    side = plot_inputs(t, u, fig.add_subplot(1, 2, 2), "cable tension [N]")
    cursor = side.axvline(t[0], color="k", lw=1)
    fig.tight_layout()

    def draw(i):
        line.set_data_3d(*pts[i].T)
        trace.set_data_3d(*tip[: i + 1].T)
        cursor.set_xdata([t[i], t[i]])

    if path.endswith(".mp4"):
        plt.rcParams["animation.ffmpeg_path"] = ffmpeg_executable()
        writer = animation.FFMpegWriter(fps=fps, codec="libx264", extra_args=["-pix_fmt", "yuv420p"])
    else:
        writer = animation.PillowWriter(fps=fps)
    animation.FuncAnimation(fig, draw, frames=len(t)).save(path, writer=writer, dpi=100)
    plt.close(fig)


def main() -> None:
    argparse.ArgumentParser(description=__doc__.split("\n\n")[0]).parse_args()
    from jaxse3.viz import animate_trajectory

    with tempfile.TemporaryDirectory() as out:
        traj, simulation = _cdm_run(out)
        rows = []
        for fmt in ("mp4", "gif"):
            t0 = time.perf_counter()
            animate_trajectory(traj, os.path.join(out, f"a.{fmt}"), input_label="cable tension [N]")
            ours = time.perf_counter() - t0
            t0 = time.perf_counter()
            _matplotlib_writer(traj, os.path.join(out, f"b.{fmt}"))
            theirs = time.perf_counter() - t0
            rows.append((fmt, ours, theirs))
    print(f"jaxse3 run cdm: compile + simulation {simulation:.1f} s (the issue's bound: animation ≤ 2× this)")
    print("| format | frames | jaxse3 animate_trajectory | matplotlib FuncAnimation.save | speed-up | ÷ simulation |")
    print("|---|---:|---:|---:|---:|---:|")
    for fmt, ours, theirs in rows:
        ratios = f"{theirs / ours:.1f}× | {ours / simulation:.2f}"
        print(f"| {fmt} | {len(traj.t)} | {ours:.2f} s | {theirs:.2f} s | {ratios} |")


if __name__ == "__main__":
    main()

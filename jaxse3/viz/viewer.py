"""An interactive 3-D viewer of simulations in the browser, for notebooks and scripts (viser; the ``viewer`` extra).

:class:`TrajectoryViewer` serves a trajectory's centrelines on a local web page: the shape at the chosen time, the tip
path, the base and a ground grid, with a time slider and a play button (drag the view with the mouse). In a notebook,
the viewer displays itself as an embedded frame; from a script, open its :attr:`~TrajectoryViewer.url`.

Why viser rather than meshcat: it is one pip wheel with its client bundled (no separate server process or ZeroMQ),
maintained, and has GUI controls (sliders, buttons) in the same page, which a time-scrubbed simulation needs; meshcat
would need its own animation format and a second control surface. Inputs are plain arrays, as for the figures
(``t`` (n,), ``points`` (n, n_points, 3), ``tip`` (n, 3)).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from jaxse3.viz.rod import box_lines, trajectory_arrays

__all__ = ["TrajectoryViewer"]


def _viser() -> Any:
    try:
        import viser
    except ImportError:
        raise ImportError("TrajectoryViewer needs viser: pip install 'jaxse3[viewer]'") from None
    return viser


def _segments(points: np.ndarray, edges: np.ndarray | None = None) -> np.ndarray:
    """The segments (m, 2, 3) of a polyline (k, 3) (its k − 1 consecutive pairs) or of ``edges`` (m, 2)."""
    if edges is None:
        return np.stack([points[:-1], points[1:]], axis=1).astype(np.float32)
    return points[edges].astype(np.float32)


class TrajectoryViewer:
    """A browser view of ``trajectory`` with a time slider (see the module docstring).

    Args:
        trajectory: anything with arrays ``t`` (n,), ``points`` (n, n_points, 3) and ``tip`` (n, 3), e.g. a
            :class:`~jaxse3.sim.Trajectory`.
        host, port: where to serve the page (default http://127.0.0.1:8080; a busy port is replaced by the next free
            one).
        thickness: the centreline's width in metres (default 1 % of the motion's extent).
        edges: how to join the points (pairs of point indices, e.g. a linkage's
            :attr:`~jaxse3.linkage.Linkage.edges`), default one chain.
        boxes: rigid bodies as (poses (n, n_b, 4, 4) at the saved times, half extents (n_b, 3)), drawn as wireframes
            (:func:`~jaxse3.viz.box_lines`; a linkage's :meth:`~jaxse3.linkage.Linkage.inertia_boxes`).
    """

    def __init__(
        self,
        trajectory: Any,
        host: str = "127.0.0.1",
        port: int = 8080,
        thickness: float | None = None,
        edges: Sequence[tuple[int, int]] | None = None,
        boxes: tuple[Any, Any] | None = None,
    ):
        viser = _viser()
        self.t, self.points, self.tip = trajectory_arrays(trajectory, "TrajectoryViewer")
        n = len(self.t)
        self.edges = None if edges is None else np.asarray(edges, dtype=int).reshape(-1, 2)
        if self.edges is not None and (self.edges.min() < 0 or self.edges.max() >= self.points.shape[1]):
            raise ValueError(f"TrajectoryViewer: 'edges' must index the {self.points.shape[1]} points")
        extent = float(np.ptp(self.points.reshape(-1, 3), axis=0).max()) or 1.0
        self._thickness = 0.01 * extent if thickness is None else float(thickness)
        self.server = viser.ViserServer(host=host, port=port, verbose=False)
        scene, gui = self.server.scene, self.server.gui
        scene.add_grid("/ground", width=4 * extent, height=4 * extent, cell_size=extent / 10)
        scene.add_icosphere("/base", radius=1.5 * self._thickness, color=(20, 20, 20), position=self.points[0, 0])
        if n > 1:
            path = _segments(self.tip)
            scene.add_line_segments("/tip_path", path, colors=(214, 39, 40), thickness=self._thickness / 3)
        self._rod = scene.add_line_segments(
            "/centreline", _segments(self.points[0], self.edges), colors=(31, 119, 180), thickness=self._thickness
        )
        self._bodies = None
        if boxes is not None:  # each box's 12 edges, from its wireframe line (p_a, p_b, NaN per edge)
            lines = box_lines(np.asarray(boxes[0]).reshape(n, -1, 4, 4), boxes[1])
            self._box_segments = lines.reshape(n, -1, 3, 3)[:, :, :2].astype(np.float32)
            self._bodies = scene.add_line_segments(
                "/bodies", self._box_segments[0], colors=(90, 90, 90), thickness=self._thickness / 2
            )
        self.clock = gui.add_markdown("")
        self.slider = gui.add_slider("time step", min=0, max=max(n - 1, 1), step=1, initial_value=0)
        self.slider.on_update(lambda _: self.show(int(self.slider.value)))
        self.play_button = gui.add_button("play")
        self.play_button.on_click(lambda _: self.play())
        self._playing = threading.Lock()
        self.height = 500  # of the frame a notebook shows, in pixels
        self.frame = -1
        self.show(0)

    @property
    def url(self) -> str:
        """The page's address."""
        return f"http://{self.server.get_host()}:{self.server.get_port()}"

    def show(self, k: int) -> None:
        """Show the saved time ``k`` (0 ≤ k < n)."""
        if not 0 <= k < len(self.t):
            raise ValueError(f"TrajectoryViewer.show: 'k' must lie in [0, {len(self.t)}), got {k}")
        self._rod.points = _segments(self.points[k], self.edges)
        if self._bodies is not None:
            self._bodies.points = self._box_segments[k]
        self.clock.content = f"t = {self.t[k]:.3f} s"
        self.frame = k

    def play(self, fps: float = 25.0) -> None:
        """Step through every saved time at ``fps`` frames per second (the page's play button calls this); a second
        call while playing does nothing."""
        if not self._playing.acquire(blocking=False):
            return
        try:
            for k in range(len(self.t)):
                self.slider.value = k  # moves the slider and, through its callback, the rod
                time.sleep(1.0 / fps)
        finally:
            self._playing.release()

    def close(self) -> None:
        """Stop the server."""
        self.server.stop()

    def _repr_html_(self) -> str:  # a notebook shows the page in place, ``height`` pixels high
        return f'<iframe src="{self.url}" width="100%" height="{self.height}" style="border: none"></iframe>'

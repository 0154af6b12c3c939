"""The browser viewer (:class:`jaxse3.viz.TrajectoryViewer`), headless: a server on a free local port whose scene
follows the slider, the play button and :meth:`show`; no browser is needed."""

from __future__ import annotations

import socket
import types

import numpy as np
import pytest

pytest.importorskip("viser")

from jaxse3.viz import TrajectoryViewer


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def viewer():
    t = np.linspace(0.0, 1.0, 8)
    s = np.linspace(0.0, 0.5, 5)
    bend = np.sin(2 * np.pi * t)[:, None] * s
    points = np.stack([s * np.cos(bend), s * np.sin(bend), np.zeros_like(bend)], axis=-1)
    v = TrajectoryViewer(types.SimpleNamespace(t=t, points=points, tip=points[:, -1]), port=_free_port())
    yield v
    v.close()


def test_the_scene_follows_the_time(viewer):
    assert viewer.frame == 0 and viewer.url.startswith("http://127.0.0.1:")
    viewer.show(5)
    np.testing.assert_allclose(viewer._rod.points[:, 0], viewer.points[5, :-1], atol=1e-6)
    np.testing.assert_allclose(viewer._rod.points[:, 1], viewer.points[5, 1:], atol=1e-6)
    assert viewer.clock.content == f"t = {viewer.t[5]:.3f} s"
    viewer.slider.value = 2  # the page's slider
    assert viewer.frame == 2
    viewer.play(fps=1000.0)  # the page's play button
    assert viewer.frame == 7 and viewer.slider.value == 7
    assert 'iframe src="http://127.0.0.1:' in viewer._repr_html_()


def test_bad_arguments_are_named(viewer):
    with pytest.raises(ValueError, match=r"'k' must lie in \[0, 8\), got 8"):
        viewer.show(8)
    bad = types.SimpleNamespace(t=viewer.t, points=viewer.points[:, :, :2], tip=viewer.tip)
    with pytest.raises(ValueError, match="needs t"):
        TrajectoryViewer(bad, port=_free_port())


def test_edges_choose_the_segments(viewer):
    edges = [(0, 1), (0, 3), (3, 4)]
    v = TrajectoryViewer(viewer, port=_free_port(), edges=edges)
    try:
        v.show(4)
        np.testing.assert_allclose(v._rod.points, v.points[4][np.array(edges)], atol=1e-6)
        with pytest.raises(ValueError, match="'edges' must index the 5 points"):
            TrajectoryViewer(viewer, port=_free_port(), edges=[(0, 5)])
    finally:
        v.close()


def test_boxes_move_with_the_time(viewer):
    n = len(viewer.t)
    poses = np.tile(np.eye(4), (n, 1, 1, 1))
    poses[:, 0, :3, 3] = viewer.tip
    v = TrajectoryViewer(viewer, port=_free_port(), boxes=(poses, np.array([[0.02, 0.01, 0.01]])))
    try:
        v.show(3)
        assert v._bodies.points.shape == (12, 2, 3)
        np.testing.assert_allclose(v._bodies.points.reshape(-1, 3).mean(axis=0), viewer.tip[3], atol=1e-6)
    finally:
        v.close()

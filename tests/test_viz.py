"""Animations (:func:`jaxse3.viz.animate_trajectory`), rendered headless: the frames written are counted in the files
themselves (Pillow for GIF, ffmpeg for MP4)."""

from __future__ import annotations

import types

import numpy as np
import pytest

from jaxse3.viz import animate_trajectory, ffmpeg_executable


def _trajectory(n=12, inputs=2):
    t = np.linspace(0.0, 1.0, n)
    s = np.linspace(0.0, 0.5, 7)
    bend = 0.8 * np.sin(2 * np.pi * t)[:, None] * s
    points = np.stack([s * np.cos(bend), s * np.sin(bend), np.zeros_like(bend)], axis=-1)
    u = np.stack([np.sin(k + t) for k in range(inputs)], axis=-1) if inputs else np.zeros((n, 0))
    return types.SimpleNamespace(t=t, points=points, tip=points[:, -1], u=u)


def test_a_gif_has_one_frame_per_saved_time(tmp_path):
    from PIL import Image

    path = animate_trajectory(_trajectory(12), tmp_path / "rod.gif", input_label="cable tension [N]", title="rod")
    with Image.open(path) as im:
        assert im.n_frames == 12 and im.size == (1000, 450)
        frames = []
        for k in (0, 6):
            im.seek(k)
            frames.append(np.asarray(im.convert("RGB"), dtype=float))
    assert np.abs(frames[0] - frames[1]).mean() > 0.1  # the rod moved (and the cursor with it)


def test_frames_are_capped_and_a_rod_without_inputs_shows_its_tip(tmp_path):
    from PIL import Image

    path = animate_trajectory(_trajectory(40, inputs=0), tmp_path / "rod.gif", max_frames=9, fps=5, dpi=40)
    with Image.open(path) as im:
        assert im.n_frames == 9 and im.size == (400, 180)


@pytest.mark.skipif(ffmpeg_executable() is None, reason="no ffmpeg (pip install 'jaxse3[plot]')")
def test_an_mp4_has_one_frame_per_saved_time(tmp_path):
    import imageio_ffmpeg

    path = animate_trajectory(_trajectory(10), tmp_path / "rod.mp4", fps=10)
    frames, seconds = imageio_ffmpeg.count_frames_and_secs(path)
    assert frames == 10 and seconds == pytest.approx(1.0)


def test_bad_arguments_are_named(tmp_path):
    with pytest.raises(ValueError, match=r"'path' must end in one of \.mp4, \.gif"):
        animate_trajectory(_trajectory(), tmp_path / "rod.avi")
    with pytest.raises(ValueError, match="'fps' must be a positive int"):
        animate_trajectory(_trajectory(), tmp_path / "rod.gif", fps=0)
    bad = _trajectory()
    bad.tip = bad.tip[:, :2]
    with pytest.raises(ValueError, match=r"needs t \(n,\), points \(n, n_points, 3\) and tip \(n, 3\)"):
        animate_trajectory(bad, tmp_path / "rod.gif")


def test_a_tree_draws_along_its_edges():
    """A linkage's points join along its edges: the branches of a tree are not joined to each other (NaN gaps)."""
    from jaxse3 import linkage as lk
    from jaxse3.viz import polylines

    tree = lk.from_toml(
        """
[[link]]
name = "body"
joint = "fixed"
mass = 1.0
inertia = [0.1, 0.1, 0.1]
"""
        + "".join(
            f"""
[[link]]
name = "arm{k}"
parent = "body"
joint = "soft"
position = [0.0, {0.1 * k}, 0.0]
[link.rod]
length = 0.2
radius = 0.01
young = 1e5
density = 1000.0
order = 1
"""
            for k in (1, 2)
        )
    )
    n = tree.links[1].n_points  # each arm: 4 points after the body's one
    assert tree.edges == (
        (0, 1),
        *((1 + k, 2 + k) for k in range(n - 1)),
        (0, 1 + n),
        *((1 + n + k, 2 + n + k) for k in range(n - 1)),
    )
    pts = np.arange(3 * tree.n_points, dtype=float).reshape(tree.n_points, 3)
    lines = polylines(pts[None], tree.edges)
    assert lines.shape == (1, 3 * len(tree.edges), 3)
    np.testing.assert_array_equal(lines[0, 3 * n : 3 * n + 2], pts[[0, 1 + n]])  # the second arm starts at the body
    assert np.isnan(lines[0, 2::3]).all()
    with pytest.raises(ValueError, match="'edges' must index the"):
        polylines(pts, [(0, tree.n_points)])


def test_a_rigid_body_draws_as_its_equivalent_inertia_box():
    """A cuboid (sides 0.3, 0.2, 0.1 m, 2 kg) placed off the link frame and turned: the equivalent inertia box is the
    cuboid itself, at its centre along its axes; its wireframe's corners are the cuboid's."""
    from jaxse3 import linkage as lk, rigid, se3
    from jaxse3.viz import box_lines

    m, sides = 2.0, np.array([0.3, 0.2, 0.1])
    R = np.asarray(se3.exp(np.array([0.3, -0.4, 0.5, 0, 0, 0])))[:3, :3]
    c = np.array([0.1, -0.05, 0.2])
    I_c = R @ np.diag(m * (np.sum(sides**2) - sides**2) / 12) @ R.T  # a cuboid about its centre
    body = lk.Link.rigid("box", None, "revolute", rigid.spatial_inertia(m, c, I_c), axis=(0, 0, 1, 0, 0, 0))
    hinge = lk.Link.rigid("hinge", "box", "revolute", np.zeros((6, 6)), axis=(0, 0, 1, 0, 0, 0))
    points, placements, halves = lk.Linkage([body, hinge]).inertia_boxes()
    assert points.tolist() == [0]  # the massless hinge draws as a point, not a box
    order = np.argsort(halves[0])[::-1]
    np.testing.assert_allclose(halves[0][order], sides / 2, rtol=1e-12)
    np.testing.assert_allclose(placements[0, :3, 3], c, atol=1e-15)
    axes = placements[0, :3, :3][:, order]  # the box's axes are the cuboid's, up to sign
    np.testing.assert_allclose(np.abs(axes.T @ R), np.eye(3), atol=1e-12)
    assert np.linalg.det(placements[0, :3, :3]) > 0
    lines = box_lines(placements[None], halves)  # (1, 36, 3): 12 edges of 0.3, 0.2 or 0.1 m
    lengths = np.linalg.norm(lines[0, 1::3] - lines[0, 0::3], axis=-1)
    np.testing.assert_allclose(np.sort(lengths), np.repeat(np.sort(sides), 4), rtol=1e-12)


def test_figures_and_animations_draw_boxes(tmp_path):
    traj = _trajectory(6)
    poses = np.tile(np.eye(4), (6, 1, 1, 1))
    poses[:, 0, :3, 3] = traj.tip
    boxes = (poses, np.array([[0.02, 0.01, 0.01]]))
    from PIL import Image

    from jaxse3.viz import plot_trajectory

    fig = plot_trajectory(traj, tmp_path / "f.png", n_snapshots=3, boxes=boxes)
    assert len(fig.axes[0].lines) >= 3 + 3 + 1  # shapes, their boxes, the tip path
    path = animate_trajectory(traj, tmp_path / "b.gif", boxes=boxes, dpi=40)
    with Image.open(path) as im:
        assert im.n_frames == 6


def test_a_failed_run_plots_its_samples_before_the_failure():
    """The samples after a solver failure (NaN) are left out of the snapshots and limits; none finite is an error."""
    from jaxse3.viz import plot_trajectory

    tr = _trajectory(12)
    tr.points = tr.points.copy()
    tr.points[8:] = np.nan
    tr.tip = tr.points[:, -1]
    fig = plot_trajectory(tr, n_snapshots=6)
    labels = [text.get_text() for text in fig.axes[0].get_legend().get_texts()]
    assert labels == [f"t = {t:.2f} s" for t in tr.t[[0, 1, 3, 4, 6, 7]]]
    assert np.isfinite(fig.axes[0].get_xlim()).all()
    tr.points[:] = np.nan
    tr.tip = tr.points[:, -1]
    with pytest.raises(ValueError, match="no sample of 'trajectory' has finite points"):
        plot_trajectory(tr)

"""Simulation results: :class:`Trajectory`, a pytree that saves to and loads from ``.npz``.

Under ``vmap`` every field gains the batch axes in front, and ``save``/``load`` keep them.
"""

from __future__ import annotations

import os

import equinox as eqx
import jax
import numpy as np

__all__ = ["Trajectory"]


class Trajectory(eqx.Module):
    """A simulated motion sampled at times ``t``.

    Attributes:
        t: (n,) sample times.
        q: (n, n_dof) generalised coordinates.
        qd: (n, n_dof) generalised velocities.
        u: (n, n_inputs) inputs u(t).
        points: (n, n_points, 3) world positions of the centreline points (for shape plots).
        tip: (n, 3) world position of the tip (``points[:, -1]``).
        num_steps: number of accepted + rejected solver steps.
    """

    t: jax.Array
    q: jax.Array
    qd: jax.Array
    u: jax.Array
    points: jax.Array
    tip: jax.Array
    num_steps: jax.Array

    def save(self, path: str | os.PathLike) -> None:
        """Write every field to an ``.npz`` file (numpy arrays, loadable without jaxse3)."""
        np.savez(path, **{k: np.asarray(v) for k, v in vars(self).items()})

    @classmethod
    def load(cls, path: str | os.PathLike) -> "Trajectory":
        """Read a file written by :meth:`save`."""
        with np.load(path) as data:
            missing = set(cls.__dataclass_fields__) - set(data.files)
            if missing:
                raise ValueError(f"Trajectory.load: {path} lacks the fields {sorted(missing)}")
            return cls(**{k: np.asarray(data[k]) for k in cls.__dataclass_fields__})

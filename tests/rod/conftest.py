"""Shared small rods and random states for the rod tests (cached: building and compiling is the slow part)."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from jaxse3.rod import CircularSection, LegendreBasis, Material, Rod, Tendon


def _tilted_base():
    """A generic base orientation (so gravity has components along every local axis) and offset."""
    a = np.array([0.3, -0.5, 0.7])
    th = np.linalg.norm(a)
    K = np.array([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]]) / th
    g = np.eye(4)
    g[:3, :3] = np.eye(3) + np.sin(th) * K + (1 - np.cos(th)) * K @ K
    g[:3, 3] = [0.01, -0.02, 0.03]
    return jnp.asarray(g)


@functools.cache
def small_rod(magnus_order: int = 4, gravity: bool = True, damping: float = 50.0) -> Rod:
    """15 DoF (Legendre 2 angular / 1 linear), 3 Gauss points, tapered, one tapered and one helical tendon."""
    rb, rt, L = 0.02, 0.012, 0.4
    r = lambda X: rb + (rt - rb) * X / L
    tendons = (
        Tendon(lambda X, _: jnp.stack([0.5 * r(X), 0.8 * r(X)])),
        Tendon(lambda X, _: jnp.stack([rt * jnp.sin(5 * X / L), -rt * jnp.cos(5 * X / L)])),
    )
    return Rod(
        L,
        CircularSection(rb, rt),
        Material(E=2e5, rho=1100.0, nu=0.45, damping=damping),
        LegendreBasis((2, 2, 2, 1, 1, 1)),
        n_gauss=3,
        magnus_order=magnus_order,
        tendons=tendons,
        gravity=(0.0, 0.0, -9.81) if gravity else (0.0, 0.0, 0.0),
        base_pose=_tilted_base(),
    )


def random_state(rod: Rod, seed: int, scale: float = 0.4):
    """(q, q̇, q̈, u) with strains of order ``scale`` (bending over L of about 1 rad) and tensions in [0, 5] N."""
    k = jax.random.split(jax.random.PRNGKey(seed), 4)
    n = rod.n_dof
    q = scale * jax.random.normal(k[0], (n,))
    return (
        q,
        jax.random.normal(k[1], (n,)),
        jax.random.normal(k[2], (n,)),
        5.0 * jax.random.uniform(k[3], (rod.n_tendons,)),
    )


def relative_error(a, b) -> float:
    return float(jnp.max(jnp.abs(a - b)) / jnp.maximum(jnp.max(jnp.abs(b)), 1e-300))

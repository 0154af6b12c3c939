"""Shared fixtures: the two algebras and the test points (random, exactly zero rotation, both sides of the switch)."""

import numpy as np
import pytest

from jaxse3 import se3, so3
from jaxse3.lie import coefficients

PHI0 = coefficients.threshold(np.float64)

# Rotation angles: exactly zero, tiny, moderate, on both sides of the Taylor/closed-form switch, large.
ANGLES = [0.0, 1e-9, 1e-4, 0.3, 1.0, PHI0 * (1 - 1e-7), PHI0 * (1 + 1e-7), 3.0]


@pytest.fixture(params=["so3", "se3"])
def group(request):
    """(module, dimension) of the group under test."""
    return (so3, 3) if request.param == "so3" else (se3, 6)


def point(dim: int, phi: float, seed: int = 0) -> np.ndarray:
    """A point with rotation angle φ, a random axis, and (on se(3)) a random translation part."""
    rng = np.random.default_rng(seed)
    n = rng.normal(size=3)
    n /= np.linalg.norm(n)
    x = phi * n
    return x if dim == 3 else np.concatenate([x, rng.normal(size=3)])


def vectors(dim: int, k: int, seed: int = 1) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.normal(size=dim) for _ in range(k)]

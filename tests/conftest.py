"""Tests run in float64 (GUIDE §5); float32 tests request it explicitly with arrays of that dtype."""

import jax

jax.config.update("jax_enable_x64", True)

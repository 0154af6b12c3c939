"""jaxse3: differentiable SE(3) mathematics and simulation of rigid, soft and hybrid robots in JAX.

Public modules: :mod:`jaxse3.so3`, :mod:`jaxse3.se3` (closed-form maps with analytical derivatives registered as
``jax.custom_jvp`` rules), :mod:`jaxse3.approx` (k-th order local approximations), :mod:`jaxse3.lie.coefficients`.
"""

from jaxse3.lie import approx, se3, so3

__version__ = "0.1.0"
__all__ = ["approx", "se3", "so3", "__version__"]

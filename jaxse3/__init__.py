"""jaxse3: differentiable SE(3) mathematics and simulation of rigid, soft and hybrid robots in JAX.

Public modules: :mod:`jaxse3.so3`, :mod:`jaxse3.se3` (closed-form maps with analytical derivatives registered as
``jax.custom_jvp`` rules), :mod:`jaxse3.approx` (k-th order local approximations), :mod:`jaxse3.lie.coefficients`.

Importing jaxse3 turns on JAX's persistent compilation cache in ``~/.cache/jaxse3`` (``JAXSE3_CACHE``: another
directory, or ``0`` for none) and lowers batched LU/Cholesky/triangular solves on CPU without jaxlib's LAPACK batch
path, which can deadlock (``JAXSE3_BATCHED_LINALG=0`` to keep it), lowers products of small matrices on CPU as
arithmetic that XLA fuses instead of a kernel each (``JAXSE3_SMALL_PRODUCTS=0`` to keep the kernels), and turns
XLA:CPU's MLIR fusion emitters off (30–45 % less compile time, no slower) and its YNNPACK matrix products (a rod's
small products run faster in XLA's own kernels; ``JAXSE3_XLA_DEFAULTS=1`` to keep XLA's defaults),
makes ``"highest"`` JAX's default matrix-product precision (float32 products on GPUs otherwise run in TF32, through
which Newton iterations do not converge; ``JAX_DEFAULT_MATMUL_PRECISION`` to choose), and on Linux with glibc keeps
freed memory in the process for the next program instead of mapping fresh pages at every call (``JAXSE3_MALLOC=0`` to
leave malloc alone); see :mod:`jaxse3._runtime`.
:func:`clear_caches` drops every program compiled so far (JAX's and jaxse3's own), for long jobs;
:func:`set_compile_mode` trades run time for compile time in short, interactive runs (``"fast"``: about half the
compile time, two to three times the run time; :mod:`jaxse3._compile`).
"""

from jaxse3 import _runtime

_runtime.configure()

from jaxse3 import approx, se3, so3  # noqa: E402 - the public alias modules of jaxse3.lie's
from jaxse3._compile import clear_caches, compile_mode, set_compile_mode  # noqa: E402

__version__ = "0.1.0"
__all__ = ["approx", "se3", "so3", "clear_caches", "set_compile_mode", "compile_mode", "__version__"]

"""Public alias of :mod:`jaxse3.lie.approx`: k-th order local approximations of the dexp family (seed 000 §5–§6)."""

from jaxse3.lie.approx import *  # noqa: F403
from jaxse3.lie.approx import __all__  # noqa: F401

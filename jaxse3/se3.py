"""Public alias of :mod:`jaxse3.lie.se3`."""

from jaxse3.lie.se3 import *  # noqa: F403
from jaxse3.lie.se3 import __all__  # noqa: F401

"""Public alias of :mod:`jaxse3.lie.so3`."""

from jaxse3.lie.so3 import *  # noqa: F403
from jaxse3.lie.so3 import __all__  # noqa: F401

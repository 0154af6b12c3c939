"""Lie-group time integrators: Munthe-Kaas RK (RKMK), Lie-group generalised-α and Newmark-β, as diffrax solvers.

Seed 001 §7 (RKMK, generalised-α) and seed 003 eqs. (10)–(12) (Newmark-β).
"""

from jaxse3.integrate.group_state import LieGroupElement, LieODETerm, SE3Element, SO3Element
from jaxse3.integrate.local_coordinates import LocalCoordinateField, from_local, solve_recharted, zero_coordinates
from jaxse3.integrate.rkmk import RKMK, RKMK4, LieEuler, LieHermiteInterpolation, RKMKBosh3, RKMKDopri5, RKMKHeun
from jaxse3.integrate.tableaux import BOSH3, DOPRI5, EULER, HEUN, RK4, ButcherTableau
from jaxse3.integrate._newton import newton_statistics
from jaxse3.integrate.generalized_alpha import GeneralizedAlpha, GeneralizedAlphaState, LieGroupMechanicalTerm
from jaxse3.integrate.newmark import Newmark, NewmarkState, SecondOrderResidualTerm

"""Lie-group time integrators: Munthe-Kaas RK (RKMK), Lie-group generalised-α and Newmark-β, as diffrax solvers.

Seed 001 §7 (RKMK, generalised-α) and seed 003 eqs. (10)–(12) (Newmark-β).
"""

from jaxse3.integrate import newton as newton
from jaxse3.integrate.generalized_alpha import (
    GeneralizedAlpha as GeneralizedAlpha,
    GeneralizedAlphaState as GeneralizedAlphaState,
    LieGroupMechanicalTerm as LieGroupMechanicalTerm,
)
from jaxse3.integrate.group_state import (
    LieGroupElement as LieGroupElement,
    LieODETerm as LieODETerm,
    SE3Element as SE3Element,
    SO3Element as SO3Element,
)
from jaxse3.integrate.local_coordinates import (
    LocalCoordinateField as LocalCoordinateField,
    from_local as from_local,
    solve_recharted as solve_recharted,
    zero_coordinates as zero_coordinates,
)
from jaxse3.integrate.newmark import (
    ConstrainedNewmark as ConstrainedNewmark,
    ConstrainedResidualTerm as ConstrainedResidualTerm,
    Newmark as Newmark,
    NewmarkState as NewmarkState,
    SecondOrderResidualTerm as SecondOrderResidualTerm,
)
from jaxse3.integrate.newton import newton_statistics as newton_statistics
from jaxse3.integrate.rkmk import (
    RKMK as RKMK,
    RKMK4 as RKMK4,
    LieEuler as LieEuler,
    LieHermiteInterpolation as LieHermiteInterpolation,
    RKMKBosh3 as RKMKBosh3,
    RKMKDopri5 as RKMKDopri5,
    RKMKHeun as RKMKHeun,
)
from jaxse3.integrate.tableaux import (
    BOSH3 as BOSH3,
    DOPRI5 as DOPRI5,
    EULER as EULER,
    HEUN as HEUN,
    RK4 as RK4,
    ButcherTableau as ButcherTableau,
)

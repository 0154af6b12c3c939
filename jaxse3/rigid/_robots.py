"""The robots of the ``example-robot-data`` package (Gepetto), loaded by short name: :func:`example_robot`.

The package (optional extra ``robots``: ``pip install "jaxse3[robots]"``, also in ``pinocchio``) installs its URDFs
under ``<site-packages>/cmeel.prefix/share/example-robot-data/robots``; :data:`EXAMPLE_ROBOTS` maps the names of its
Python loaders (``example_robot_data.load(name)``) to those files and to the loaders' choice of base: legged robots,
humanoids, flying and mobile-manipulator bases float, arms and hands are fixed (also ``so100``/``so101``, arms that the
loaders put on a free joint). Geometry is ignored, so the meshes the URDFs refer to need not be found.
"""

from __future__ import annotations

import difflib
import importlib.metadata
import pathlib

from jaxse3.rigid._model import Model
from jaxse3.rigid._urdf import from_urdf

__all__ = ["EXAMPLE_ROBOTS", "example_robot", "example_robot_path"]

EXAMPLE_ROBOTS: dict[str, tuple[str, bool]] = {  # name: (URDF under the robots directory, floating base by default)
    "a1": ("a1_description/urdf/a1.urdf", True),
    "alex_nub_hands": ("alex_description/urdf/alex_nub_hands.urdf", False),
    "alex_psyonic_hands": ("alex_description/urdf/alex_psyonic_hands.urdf", False),
    "alex_sake_hands": ("alex_description/urdf/alex_sake_hands.urdf", False),
    "alexander": ("alexander_description/urdf/alexander_v1.lowerBodyOnly.urdf", True),
    "allegro_left_hand": ("allegro_hand_description/urdf/allegro_left_hand.urdf", False),
    "allegro_right_hand": ("allegro_hand_description/urdf/allegro_right_hand.urdf", False),
    "anymal": ("anymal_b_simple_description/robots/anymal.urdf", True),
    "anymal_c": ("anymal_c_simple_description/urdf/anymal.urdf", True),
    "anymal_kinova": ("anymal_b_simple_description/robots/anymal-kinova.urdf", True),
    "asr_twodof": ("asr_twodof_description/urdf/TwoDofs.urdf", False),
    "b1": ("b1_description/urdf/b1.urdf", True),
    "b1_z1": ("b1_description/urdf/b1-z1.urdf", True),
    "baxter": ("baxter_description/urdf/baxter.urdf", False),
    "bolt": ("bolt_description/robots/bolt.urdf", True),
    "borinot": ("borinot_description/urdf/borinot_flying_arm_2.urdf", True),
    "centauro": ("centauro_description/urdf/centauro.urdf", True),
    "double_pendulum": ("double_pendulum_description/urdf/double_pendulum.urdf", False),
    "double_pendulum_continuous": ("double_pendulum_description/urdf/double_pendulum_continuous.urdf", False),
    "double_pendulum_simple": ("double_pendulum_description/urdf/double_pendulum_simple.urdf", False),
    "finger_edu": ("finger_edu_description/robots/finger_edu.urdf", False),
    "g1": ("g1_description/urdf/g1_29dof_rev_1_0.urdf", True),
    "g1_with_hands": ("g1_description/urdf/g1_29dof_with_hand_rev_1_0.urdf", True),
    "go1": ("go1_description/urdf/go1.urdf", True),
    "go2": ("go2_description/urdf/go2.urdf", True),
    "hector": ("hector_description/robots/quadrotor_base.urdf", True),
    "hextilt": ("hextilt_description/urdf/hextilt_flying_arm_5.urdf", True),
    "human": ("human_description/robots/human.urdf", True),
    "hyq": ("hyq_description/robots/hyq_no_sensors.urdf", True),
    "icub": ("icub_description/robots/icub.urdf", True),
    "icub_reduced": ("icub_description/robots/icub_reduced.urdf", True),
    "iris": ("iris_description/robots/iris_simple.urdf", True),
    "kinova": ("kinova_description/robots/kinova.urdf", False),
    "laikago": ("laikago_description/urdf/laikago.urdf", True),
    "panda": ("panda_description/urdf/panda.urdf", False),
    "panda_collision": ("panda_description/urdf/panda_collision.urdf", False),
    "pr2": ("pr2_description/urdf/pr2.urdf", True),
    "quadruped": ("quadruped_description/urdf/quadruped.urdf", True),
    "romeo": ("romeo_description/urdf/romeo.urdf", True),
    "simple_humanoid": ("simple_humanoid_description/urdf/simple_humanoid.urdf", True),
    "simple_humanoid_classical": ("simple_humanoid_description/urdf/simple_humanoid_classical.urdf", True),
    "so100": ("so_arm_description/urdf/so100.urdf", False),
    "so101": ("so_arm_description/urdf/so101.urdf", False),
    "solo8": ("solo_description/robots/solo.urdf", True),
    "solo12": ("solo_description/robots/solo12.urdf", True),
    "talos": ("talos_data/robots/talos_reduced.urdf", True),
    "talos_arm": ("talos_data/robots/talos_left_arm.urdf", False),
    "talos_box": ("talos_data/robots/talos_reduced_box.urdf", True),
    "talos_full": ("talos_data/robots/talos_full_v2.urdf", True),
    "talos_full_box": ("talos_data/robots/talos_full_v2_box.urdf", True),
    "tiago": ("tiago_description/robots/tiago.urdf", False),
    "tiago_dual": ("tiago_description/robots/tiago_dual.urdf", False),
    "tiago_no_hand": ("tiago_description/robots/tiago_no_hand.urdf", False),
    "tiago_pro": ("tiago_pro_description/robots/tiago_pro.urdf", False),
    "ur3": ("ur_description/urdf/ur3_robot.urdf", False),
    "ur3_gripper": ("ur_description/urdf/ur3_gripper.urdf", False),
    "ur3_limited": ("ur_description/urdf/ur3_joint_limited_robot.urdf", False),
    "ur5": ("ur_description/urdf/ur5_robot.urdf", False),
    "ur5_gripper": ("ur_description/urdf/ur5_gripper.urdf", False),
    "ur5_limited": ("ur_description/urdf/ur5_joint_limited_robot.urdf", False),
    "ur10": ("ur_description/urdf/ur10_robot.urdf", False),
    "ur10_limited": ("ur_description/urdf/ur10_joint_limited_robot.urdf", False),
    "xarm7": ("xarm_description/urdf/xarm7.urdf", False),
    "z1": ("z1_description/urdf/z1.urdf", False),
}


def _robots_dir() -> pathlib.Path:
    """The directory of the URDFs installed by ``example-robot-data``; ``ImportError`` naming the extra if it is not
    installed."""
    try:
        dist = importlib.metadata.distribution("example-robot-data")
    except importlib.metadata.PackageNotFoundError as e:
        raise ImportError('example_robot needs the example-robot-data package: pip install "jaxse3[robots]"') from e
    path = pathlib.Path(dist.locate_file("cmeel.prefix/share/example-robot-data/robots"))
    if not path.is_dir():
        raise FileNotFoundError(
            f"example_robot: example-robot-data {dist.version} is installed but its robots directory {path} is missing"
        )
    return path


def example_robot_path(name: str) -> str:
    """Path of the URDF of robot ``name`` of ``example-robot-data`` (a key of :data:`EXAMPLE_ROBOTS`).

    Raises ``ValueError`` listing the valid names for an unknown name, ``ImportError`` naming the extra
    (``pip install "jaxse3[robots]"``) when the package is not installed.
    """
    if name not in EXAMPLE_ROBOTS:
        close = difflib.get_close_matches(name, list(EXAMPLE_ROBOTS), n=3)
        hint = f" (did you mean {' or '.join(map(repr, close))}?)" if close else ""
        raise ValueError(f"example_robot: unknown robot {name!r}{hint}; valid names: {', '.join(EXAMPLE_ROBOTS)}")
    path = _robots_dir() / EXAMPLE_ROBOTS[name][0]
    if not path.is_file():
        raise FileNotFoundError(f"example_robot: robot {name!r}: {path} is not in the installed example-robot-data")
    return str(path)


def example_robot(name: str, floating_base: bool | None = None) -> Model:
    """Load robot ``name`` of ``example-robot-data`` (``"ur5"``, ``"panda"``, ``"solo12"``, ``"anymal_c"``,
    ``"talos"``, …; see :data:`EXAMPLE_ROBOTS`) as a :class:`Model`.

    ``floating_base=None`` uses the robot's default (a free joint ``root_joint`` for legged, humanoid and flying
    robots, a fixed base for arms and hands); ``True``/``False`` overrides it. Joint order and names are Pinocchio's
    (``example_robot_data.load(name).model``). For other gravity vectors use
    ``from_urdf(example_robot_path(name), ...)``.
    """
    path = example_robot_path(name)
    return from_urdf(path, floating_base=EXAMPLE_ROBOTS[name][1] if floating_base is None else floating_base)

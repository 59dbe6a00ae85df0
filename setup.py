"""ament_python package definition: installs the Python package, the ROS share files
(launch/, config/ with config/schema/ and config/moveit/<robot>/, urdf/, package.xml) and one
console entry point per node plus ``physai``.
"""

import os
from glob import glob

from setuptools import find_packages, setup

PACKAGE = "physai_ros"

# One entry point per ROS node (`ros2 run physai_ros <name>`), plus the user-facing CLI.
NODES = {
    "sim_bridge": "physai_ros.nodes.sim_bridge:main",
    "tf_publisher": "physai_ros.nodes.tf_publisher:main",
    "pick": "physai_ros.nodes.pick:main",
    "trajectory": "physai_ros.nodes.trajectory:main",
    "so101_driver": "physai_ros.nodes.so101_driver:main",
    "so101_emulator": "physai_ros.nodes.so101_emulator:main",
    "grasp_planner": "physai_ros.nodes.grasp_planner:main",
    "hand_pick": "physai_ros.nodes.hand_pick:main",
    "dataset_recorder": "physai_ros.nodes.dataset_recorder:main",
    "policy_runner": "physai_ros.nodes.policy_runner:main",
    "teleop": "physai_ros.nodes.teleop:main",
}


def files(pattern: str) -> list[str]:
    """Regular files matching ``pattern``: data_files copies files, a folder would be an error."""
    return sorted(path for path in glob(pattern) if os.path.isfile(path))


setup(
    name=PACKAGE,
    version="0.1.0",
    packages=find_packages(include=[PACKAGE, f"{PACKAGE}.*"]),
    package_data={PACKAGE: ["models/*.xml"]},
    data_files=[
        ("share/ament_index/resource_index/packages", [f"resource/{PACKAGE}"]),
        (f"share/{PACKAGE}", ["package.xml"]),
        (f"share/{PACKAGE}/launch", glob("launch/*.py")),
        (f"share/{PACKAGE}/config", files("config/*")),
        # every node's parameter schema (physai_ros.parameters)
        (f"share/{PACKAGE}/config/schema", files("config/schema/*")),
        # MoveIt configuration, one folder per robot (physai_ros.export.moveit_config).
        *(
            (f"share/{PACKAGE}/{folder}", files(f"{folder}/*"))
            for folder in sorted(glob("config/moveit/*"))
        ),
        (f"share/{PACKAGE}/urdf", glob("urdf/*")),
    ],
    install_requires=["setuptools"],
    zip_safe=False,
    maintainer="physai_ros developers",
    maintainer_email="physai-ros@users.noreply.github.com",
    description="SO-101 and Panda control with ROS 2 interfaces over real hardware or MuJoCo.",
    license="Apache-2.0",
    python_requires=">=3.10",
    entry_points={
        "console_scripts": [
            "physai = physai_ros.cli:main",
            *(f"{name} = {target}" for name, target in NODES.items()),
        ],
    },
)

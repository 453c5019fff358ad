"""The standing part of the demo (``--part standing``): a quadruped on the ground in MuJoCo.

Solo-12 of example-robot-data stands on point contacts at its feet for 10 s, held by
joint PD about a standing pose, twice at the same gains: with the whole-body gravity
feedforward (``RobotModel.whole_body_gravity`` on the feet, the torques the node's
``feedforward_mode: whole_body_gravity`` publishes) and with PD alone.  Prints the
base height's drift of both (issue 46's target: below 5 mm with the feedforward, at
least 5x smaller than PD alone) and writes ``standing.png``.

The loop runs in this process, through the library, not through the node: the
simulated robot does not publish its base odometry on ROS yet (docs/floating_base.md).
"""
import importlib.metadata
import time

import numpy as np

from .floating_plant import FloatingPlant, stand

SOLO = "cmeel.prefix/share/example-robot-data/robots/solo_description/robots/solo12.urdf"
FEET = ["FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT"]
# Hip abduction, hip flexion and knee of each leg: knees bent, feet under the hips.
STANDING = np.array([0.0, 0.8, -1.6, 0.0, 0.8, -1.6, 0.0, -0.8, 1.6, 0.0, -0.8, 1.6])
KP, KD = 3.0, 0.1             # [N m/rad], [N m s/rad]: soft, as a legged robot's compliant joints
SECONDS = 10.0
# The feedforward is computed every this many 1 ms steps and held between (200 Hz): the
# library's whole-body gravity runs on the numpy path here, a few ms a call.
FEEDFORWARD_EVERY = 5
DRIFT_TARGET = 5e-3           # [m]
RATIO_TARGET = 5.0


def standing_demo(output_dir):
    """0 when both targets are met."""
    try:
        path = importlib.metadata.distribution("example-robot-data").locate_file(SOLO)
    except importlib.metadata.PackageNotFoundError:
        print("[standing] example-robot-data is not installed (scripts/setup.sh installs it)")
        return 1
    plant = FloatingPlant(str(path), FEET)
    runs = {}
    for label, feedforward in (("whole-body gravity + PD", True), ("PD alone", False)):
        started = time.perf_counter()
        drift, heights = stand(plant, STANDING, KP, KD, feedforward, SECONDS,
                               feedforward_every=FEEDFORWARD_EVERY)
        runs[label] = heights
        print(f"[standing] Solo-12, {label}: base height drift over {SECONDS:g} s "
              f"{drift * 1e3:.3f} mm (computed in {time.perf_counter() - started:.0f} s)")
    with_feedforward, alone = (np.max(np.abs(h - h[0])) for h in runs.values())
    ratio = alone / with_feedforward if with_feedforward > 0 else np.inf
    met = with_feedforward < DRIFT_TARGET and ratio >= RATIO_TARGET
    print(f"[standing] PD alone drifts {ratio:.0f}x more; target: < {DRIFT_TARGET * 1e3:g} mm and "
          f">= {RATIO_TARGET:g}x: {'met' if met else 'NOT met'}")
    plot(output_dir / "standing.png", runs, plant.model.opt.timestep)
    return 0 if met else 1


def plot(path, runs, timestep):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    figure, axis = plt.subplots(figsize=(9, 4))
    for label, heights in runs.items():
        axis.plot(np.arange(heights.size) * timestep, (heights - heights[0]) * 1e3, label=label)
    axis.set_xlabel("time [s]")
    axis.set_ylabel("base height drift [mm]")
    axis.set_title(f"Solo-12 standing in MuJoCo, joint PD kp={KP:g} kd={KD:g}")
    axis.legend()
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)
    print(f"[standing] wrote {path}")

"""The node's parameters: one table of meanings, types and bounds, one validator.

ROS-free so that the rules can be tested without a graph.  The node declares
every parameter with dynamic typing and validates here, once, both at
start-up and for runtime changes: an integer where a double is expected is
accepted (YAML writes ``1`` for one second), anything else outside the table
is refused with a sentence naming the parameter and its bound.
"""
from dataclasses import dataclass
import math

import numpy as np

from ..errors import InvalidInputError
from ..embedded.estimation import MAX_BUFFER_SAMPLES
from ..embedded.live_model import FEEDFORWARD_MODES
from ..description.xacro import DEFAULT_TIMEOUT as DEFAULT_XACRO_TIMEOUT
from ..validation import MAX_PAYLOAD_COM

EXECUTORS = ("events", "single_threaded")
# Chosen by measurement (README, "Executors"): with the EventsExecutor and a
# queue of 10 every joint state of a 60 s run at 1 kHz was answered.
DEFAULT_EXECUTOR = "events"
DEFAULT_JOINT_STATES_DEPTH = 10
# Slower than a joint position loop settles (~0.1 s), so the controller holding
# the arm absorbs the change; short against a motion's start (README, "Ramping").
DEFAULT_RAMP_TIME = 0.5
# Time constant 1/K = 10 ms: the estimate is within 10% of a step in external
# torque after 23 ms, and crosses half its value after 7 ms (README, "Estimation").
DEFAULT_OBSERVER_GAIN = 100.0
DEFAULT_CONTACT_THRESHOLD = 2.0      # [N m]


def _number(low, high, unit="", zero_allowed=False):
    """A float in [low, high] (or exactly 0 when ``zero_allowed``); ints accepted."""
    def check(value):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"must be a number{unit}")
        value = float(value)
        if zero_allowed and value == 0.0:
            return value
        if not (math.isfinite(value) and low <= value <= high):
            allowed = f"0 or between {low:g} and {high:g}" if zero_allowed else \
                f"between {low:g} and {high:g}"
            raise ValueError(f"must be {allowed}{unit}, not {value!r}")
        return value
    return check


def _integer(low, high):
    def check(value):
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise ValueError(f"must be an integer between {low} and {high}, not {value!r}")
        return value
    return check


def _choice(options):
    def check(value):
        # ROS reads `-p kernels:=off` (and `off` in a params file) as YAML 1.1's
        # boolean false: it can only have meant the option "off".
        if value is False and "off" in options:
            return "off"
        if value not in options:
            raise ValueError(f"must be one of {', '.join(options)}, not {value!r}")
        return value
    return check


def _flag(value):
    if not isinstance(value, bool):
        raise ValueError(f"must be true or false, not {value!r}")
    return value


def _text(value):
    if not isinstance(value, str):
        raise ValueError(f"must be a string, not {value!r}")
    return value


def _names(value):
    """A list of names; empty strings dropped (ROS cannot declare an empty string array)."""
    if isinstance(value, str) or not all(isinstance(name, str) for name in value or ()):
        raise ValueError(f"must be a list of strings, not {value!r}")
    names = [name for name in value if name]
    if len(set(names)) != len(names):
        raise ValueError(f"repeats a name: {names}")
    return names


def _vector(size, bound, unit=""):
    def check(value):
        if isinstance(value, (str, bool)) or not hasattr(value, "__len__") or len(value) != size \
                or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
            raise ValueError(f"must be {size} numbers, not {value!r}")
        vector = [float(v) for v in value]
        if not all(math.isfinite(v) and abs(v) <= bound for v in vector):
            raise ValueError(f"must be {size} finite numbers within +-{bound:g}{unit}, not {vector}")
        return vector
    return check


def _thresholds(value):
    """Contact thresholds: one positive number for every joint, or one per joint (the model checks
    the count)."""
    if isinstance(value, (str, bool)) or not hasattr(value, "__len__") or not len(value) \
            or len(value) > 1000 \
            or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
        raise ValueError(f"must be one number (every joint) or one per joint, not {value!r}")
    thresholds = [float(v) for v in value]
    if not all(math.isfinite(v) and 1e-6 <= v <= 1e6 for v in thresholds):
        raise ValueError(f"must be between 1e-06 and 1e+06 N m (or N), not {thresholds}")
    return thresholds


@dataclass(frozen=True)
class Spec:
    default: object
    description: str
    check: object          # value -> validated value; ValueError with the reason otherwise
    read_only: bool = False


PARAMETERS = {
    "robot_description": Spec("", "URDF (or, at start-up, xacro) XML of the robot", _text),
    "urdf_file": Spec("", "path of a URDF (or, at start-up, xacro) file (if robot_description "
                          "is empty)", _text),
    "package_paths": Spec([""], "directories searched for the packages a description names "
                                "($(find pkg), package://pkg/) after the ament index",
                          _names),
    "allow_runtime_xacro": Spec(False, "expand xacro in descriptions that arrive while the node "
                                "runs (/robot_description topic, parameter changes): xacro runs "
                                "the Python in ${...} as this node's user, so anyone who may "
                                "publish or set parameters on the ROS domain could run commands; "
                                "only where every participant is trusted (docs/robustness.md, "
                                "'Trust'). Start-up parameters are always expanded",
                                _flag, read_only=True),
    "xacro_timeout": Spec(DEFAULT_XACRO_TIMEOUT, "[s] a xacro expansion may take before the "
                                                 "description is refused; 0.1 to 600",
                          _number(0.1, 600.0, " s")),
    "feedforward_mode": Spec("gravity", " | ".join(FEEDFORWARD_MODES), _choice(FEEDFORWARD_MODES)),
    "command_joints": Spec([""], "joint order of ~/feedforward (empty: all joints, model order)",
                           _names),
    "state_timeout": Spec(0.05, "joint states older than this [s] (from their arrival) are not "
                                "answered; 0.001 to 10", _number(1e-3, 10.0, " s")),
    "effort_limit_scale": Spec(1.0, "feedforward is clamped to scale x URDF effort limit; "
                                    "0.001 to 10", _number(1e-3, 10.0)),
    "gravity": Spec([0.0, 0.0, -9.81], "gravity vector in the root link frame [m/s^2], "
                                       "each component within +-1000", _vector(3, 1e3, " m/s^2")),
    "robot_compensates_gravity": Spec(False, "the robot adds its own gravity torques (Franka "
                                      "FCI, KUKA FRI torque mode): every feedforward leaves "
                                      "them out, payloads' gravity stays", _flag),
    "feedforward_ramp_time": Spec(DEFAULT_RAMP_TIME, "[s] ~/feedforward blends linearly from "
                                  "the last published effort (zero at start) to the law when it "
                                  "starts, resumes or changes; 0 to 60, 0: no ramp",
                                  _number(0.0, 60.0, " s")),
    "computed_torque_kp": Spec(0.0, "computed-torque position gain [1/s^2], 0 to 1e6",
                               _number(0.0, 1e6, " 1/s^2")),
    "computed_torque_kd": Spec(0.0, "computed-torque velocity gain [1/s], 0 to 1e4",
                               _number(0.0, 1e4, " 1/s")),
    "payloads": Spec([""], "names of start-up payloads; each reads payload.<name>.link, .mass, "
                           ".com, .inertia", _names, read_only=True),
    "joint_states_reliability": Spec("best_effort", "best_effort (accepts reliable and "
                                     "best-effort publishers) or reliable",
                                     _choice(("best_effort", "reliable")), read_only=True),
    "joint_states_depth": Spec(DEFAULT_JOINT_STATES_DEPTH, "joint_states queue depth, 1 to 1000 "
                               "(1: only the newest state is answered)", _integer(1, 1000),
                               read_only=True),
    "diagnostics_period": Spec(1.0, "[s], 0.1 to 60", _number(0.1, 60.0, " s"), read_only=True),
    "marker_frame": Spec("", "frame whose inertia ellipsoid is published (empty: none)", _text),
    "marker_rate": Spec(0.0, "[Hz] of ~/task_space_inertia_marker, 0.1 to 100; 0: off",
                        _number(0.1, 100.0, " Hz", zero_allowed=True), read_only=True),
    "estimation": Spec(True, "estimate external torques, wrench and contact when joint_states "
                             "carry effort (false: never)", _flag),
    "observer_gain": Spec(DEFAULT_OBSERVER_GAIN, "[1/s] external-torque observer gain K: the "
                          "estimate follows the true external torque as a first-order low-pass "
                          "with time constant 1/K; 0.1 to 1e4", _number(0.1, 1e4, " 1/s")),
    "contact_thresholds": Spec([DEFAULT_CONTACT_THRESHOLD], "[N m or N] ~/contact turns true when "
                               "an estimated external joint torque exceeds its threshold: one "
                               "value for every joint or one per joint (model order)",
                               _thresholds),
    "contact_release_ratio": Spec(0.5, "~/contact turns false again when every estimate is below "
                                  "ratio x its threshold (hysteresis); 0.01 to 1",
                                  _number(0.01, 1.0)),
    "subtract_friction": Spec(False, "subtract the URDF joints' <dynamics damping friction> from "
                              "the measured efforts before estimating (without it, friction is "
                              "part of the external torques)", _flag),
    "external_wrench_frame": Spec("", "frame at which ~/external_wrench is estimated (empty: "
                                  "not published)", _text),
    "identification_buffer_time": Spec(10.0, "[s] of recent joint states (with effort) kept for "
                                       "~/identify_payload; 0.5 to 60, and at most "
                                       f"{MAX_BUFFER_SAMPLES} states",
                                       _number(0.5, 60.0, " s")),
    "floating_base": Spec(False, "the robot stands or flies on a free base: a 6-DOF joint above "
                                 "the URDF's root link, its state from base_odometry_topic "
                                 "(docs/floating_base.md, 'In the node')", _flag, read_only=True),
    "base_odometry_topic": Spec("odom", "nav_msgs/Odometry of the floating base: pose of "
                                "child_frame_id (the root link) in header.frame_id (world_frame), "
                                "twist in child_frame_id; older than state_timeout withholds "
                                "feedforward", _text, read_only=True),
    "world_frame": Spec("odom", "the only header.frame_id base odometry is accepted in", _text,
                        read_only=True),
    "contact_frames": Spec([""], "frames a floating-base robot stands on (point contacts) for "
                                 "feedforward_mode whole_body_gravity", _names),
    "executor": Spec(DEFAULT_EXECUTOR, " | ".join(EXECUTORS), _choice(EXECUTORS), read_only=True),
    "kernels": Spec("auto", "auto (the generic compiled module at once; this robot's kernels "
                            "compiled in a child process, then loaded) | off",
                            _choice(("auto", "off")), read_only=True),
}

# Start-up payloads: payload.<name>.<field>.  The model checks the physics
# (positive mass, a real inertia); these are the types and outer bounds.
PAYLOAD_FIELDS = {
    "link": Spec("", "link the payload is rigidly attached to", _text),
    "mass": Spec(0.0, "[kg]", _number(0.0, 1e9, " kg")),
    "com": Spec([0.0, 0.0, 0.0], "centre of mass in the link frame [m]", _vector(3, MAX_PAYLOAD_COM, " m")),
    "inertia": Spec([0.0] * 9, "3x3 row-major inertia about the COM [kg m^2] (zeros: point mass)",
                    _vector(9, 1e12, " kg m^2")),
}


def validate(name, value, specs=PARAMETERS, prefix=""):
    """The validated value of one parameter, or :class:`InvalidInputError` saying why not."""
    try:
        return specs[name].check(value)
    except ValueError as error:
        raise InvalidInputError(f"parameter {prefix + name!r} {error}") from None


def validate_all(values, specs=PARAMETERS, prefix=""):
    """Every parameter validated; one error naming every bad one."""
    valid, problems = {}, []
    for name, value in values.items():
        try:
            valid[name] = validate(name, value, specs, prefix)
        except InvalidInputError as error:
            problems.append(str(error))
    if problems:
        raise InvalidInputError("; ".join(problems))
    return valid


def startup_payload(name, values):
    """``attach_payload`` keywords of start-up payload ``name`` from its PAYLOAD_FIELDS values."""
    values = validate_all(values, PAYLOAD_FIELDS, f"payload.{name}.")
    return dict(values, name=name, inertia=np.reshape(values["inertia"], (3, 3)))

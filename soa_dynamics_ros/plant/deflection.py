"""End-effector deflection from joint stiffness (linear, small deflections).

Each independent joint is a spring of stiffness ``k_j`` (N m/rad or N/m)
between its actuator and the link it drives.  The joint torques that the path
needs, ``tau = M qdd + h(q, qd) - sum J_i^T w_i`` (gravity, inertial and
applied loads), are carried by the springs, which therefore yield by
``delta_q = K^-1 tau_load`` with ``tau_load = -tau`` the load the joints feel.
To first order the end-effector frame moves by

    delta_x = J(q) K^-1 tau_load        ([dp; dtheta], root-link axes)

where ``dp`` is the displacement of the frame origin (m) and ``dtheta`` the
small rotation vector (rad).  A pure tip wrench ``w`` with no other load gives
``delta_x = J K^-1 J^T w``: the Cartesian compliance.  A joint with infinite
stiffness is rigid; mimic joints take their master's spring.
"""
from dataclasses import dataclass

import numpy as np

from ..errors import InvalidInputError, UnknownNameError
from ..validation import as_float_array
from .torques import chunked, path_torques


def stiffness_from_mapping(model, mapping, default=None):
    """Stiffness vector (model joint order) from ``{joint: k}``; ``default`` fills the rest."""
    if not isinstance(mapping, dict):
        raise InvalidInputError("joint stiffness must map joint names to numbers")
    mimics = {joint.name: joint.mimic_of for joint in model.joints if joint.mimic_of}
    values = {}
    for name, value in mapping.items():
        if name in mimics:
            raise InvalidInputError(f"stiffness: joint {name!r} is a mimic of {mimics[name]!r}; "
                                    "give the stiffness of the master joint")
        if name not in model.joint_names:
            raise UnknownNameError("joint", name, model.joint_names)
        values[name] = _positive(f"stiffness of {name!r}", value)
    if default is not None:
        default = _positive("default stiffness", default)
    missing = [n for n in model.joint_names if n not in values]
    if missing and default is None:
        raise InvalidInputError(f"stiffness missing for joint(s) {', '.join(repr(m) for m in missing)} "
                                "(give them, or a 'default')")
    return np.array([values.get(name, default) for name in model.joint_names], dtype=float)


def _positive(what, value):
    if isinstance(value, str) and value.strip().lower() in ("inf", ".inf", "rigid"):
        return np.inf
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise InvalidInputError(f"{what} must be a positive number (or 'inf' for rigid), "
                                f"not {value!r}") from None
    except OverflowError:  # an integer beyond the float range (YAML reads digits as int)
        raise InvalidInputError(f"{what} has {len(str(abs(value)))} digits, beyond the range of "
                                "a float (1.8e308); write 'inf' for a rigid joint") from None
    if not number > 0 or np.isnan(number):
        raise InvalidInputError(f"{what} must be positive, not {value!r}")
    return number


def load_stiffness(model, path):
    """``(stiffness vector, frame or None)`` from a YAML (or JSON) file.

    Format::

        frame: panda_hand_tcp      # optional: the end-effector frame
        default: 1.0e4             # optional: for joints not listed
        joints:                    # N m/rad (revolute) or N/m (prismatic); inf = rigid
          panda_joint1: 5.0e4
          ...
    """
    try:
        with open(path) as handle:
            text = handle.read()
    except OSError as error:
        raise InvalidInputError(f"cannot read stiffness file {str(path)!r}: {error.strerror}") from None
    if str(path).endswith(".json"):
        import json
        try:
            data = json.loads(text)
        except json.JSONDecodeError as error:
            raise InvalidInputError(f"stiffness file {str(path)!r}: {error}") from None
    else:
        try:
            import yaml
        except ImportError:  # pragma: no cover - pyyaml is in the dev environment
            raise InvalidInputError("reading a stiffness YAML needs PyYAML (pip install pyyaml); "
                                    "a .json file with the same keys works without it") from None
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as error:
            raise InvalidInputError(f"stiffness file {str(path)!r} is not valid YAML: "
                                    f"{str(error).splitlines()[0]}") from None
    if not isinstance(data, dict) or not isinstance(data.get("joints"), dict):
        raise InvalidInputError(f"stiffness file {str(path)!r} needs a 'joints:' mapping of joint "
                                "names to stiffness values")
    unknown = sorted(set(data) - {"joints", "default", "frame"})
    if unknown:
        raise InvalidInputError(f"stiffness file {str(path)!r}: unknown key(s) {unknown} "
                                "(expected joints, default, frame)")
    frame = data.get("frame")
    if frame is not None and not isinstance(frame, str):
        raise InvalidInputError("stiffness file: 'frame' must be a link name")
    return stiffness_from_mapping(model, data["joints"], data.get("default")), frame


@dataclass
class Deflection:
    """Deflection of ``frame`` along a path (arrays over samples, ``joint_names`` order)."""
    frame: str
    joint_names: list
    time: np.ndarray
    load_torques: np.ndarray    # (N, dof): tau_load = -tau
    joint_deflection: np.ndarray   # (N, dof): K^-1 tau_load
    deflection: np.ndarray      # (N, 6): [dp; dtheta] in root axes

    @property
    def translation(self):
        return np.linalg.norm(self.deflection[:, :3], axis=1)

    @property
    def rotation(self):
        return np.linalg.norm(self.deflection[:, 3:], axis=1)

    def summary(self):
        t, r = self.translation, self.rotation
        i, k = int(t.argmax()), int(r.argmax())
        return {"frame": self.frame, "max_translation": float(t[i]),
                "max_translation_time": float(self.time[i]),
                "max_rotation": float(r[k]), "max_rotation_time": float(self.time[k])}


def _check_finite(model, stiffness, joint_deflection, cartesian):
    """A stiffness so small that load / stiffness leaves the float range is an input error."""
    if np.isfinite(joint_deflection).all() and np.isfinite(cartesian).all():
        return
    overflowed = np.flatnonzero(~np.isfinite(joint_deflection).all(axis=0))
    if overflowed.size == 0:  # finite per joint; the Jacobian product overflowed
        overflowed = [int(np.abs(joint_deflection).max(axis=0).argmax())]
    culprits = ", ".join(f"{model.joint_names[j]!r} (stiffness {float(stiffness[j])!r})" for j in overflowed)
    raise InvalidInputError(f"the deflection overflows the float range: stiffness too small for {culprits}")


def deflection_along_path(model, trajectory, stiffness, frame, wrenches=None, gravity=True,
                          progress=None):
    """:class:`Deflection` of ``frame`` under gravity (unless ``gravity=False``), inertial and applied loads."""
    stiffness = as_float_array("stiffness", stiffness, f"vector of {model.dof} positive values")
    if stiffness.shape != (model.dof,) or not np.all(stiffness > 0):
        raise InvalidInputError(f"stiffness must be {model.dof} positive values")
    model.frame_pose(np.zeros(model.dof), frame)  # UnknownNameError early
    saved = model.gravity
    if not gravity:
        model.gravity = np.zeros(3)
    try:
        # Half of the progress for the torques, half for the Jacobians.
        torques = path_torques(model, trajectory, wrenches,
                               progress and (lambda d, t, s: progress(d, 2 * t, "joint loads")))
    finally:
        model.gravity = saved
    load = -torques
    with np.errstate(over="ignore"):
        joint_deflection = load / stiffness
    count = len(trajectory)
    cartesian = np.empty((count, 6))
    for part in chunked(count, "jacobians",
                        progress and (lambda d, t, s: progress(t + d, 2 * t, "jacobians")), 500):
        with np.errstate(over="ignore", invalid="ignore"):
            for k in range(part.start, part.stop):
                cartesian[k] = model.jacobian(trajectory.positions[k], frame) @ joint_deflection[k]
    _check_finite(model, stiffness, joint_deflection, cartesian)
    return Deflection(frame, model.joint_names, trajectory.time, load, joint_deflection, cartesian)

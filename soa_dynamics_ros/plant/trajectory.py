"""Time-stamped joint paths: CSV reading, differentiation and joint-limit checks.

CSV format: one header row, then one row per sample.  The header holds
``time`` and one column per independent joint, matched by name in any order;
optional ``<joint>.velocity`` and ``<joint>.acceleration`` columns give the
rates (for every joint or for none).  ``<joint>.effort`` columns (as
``soa-dynamics efforts`` writes them) are ignored.  Blank lines and lines
starting with ``#`` are skipped.

Differentiation (when rates are not given), on strictly increasing but not
necessarily uniform times: through every three consecutive samples passes one
quadratic per joint; the velocity at a sample is the derivative of the
quadratic through it and its two neighbours (at the ends, through the first or
last three samples), and the acceleration is that quadratic's second
derivative.  For uniform spacing ``h`` this is the central difference
``(q[i+1] - q[i-1]) / 2h`` and ``(q[i+1] - 2 q[i] + q[i-1]) / h^2``; it is exact
for paths that are quadratic in time and second-order accurate otherwise.
When velocities are given and accelerations are not, the accelerations are the
same first-derivative scheme applied to the velocities.
"""
import csv
import io
import math
import os
import warnings
from dataclasses import dataclass, field

import numpy as np

from ..errors import (JointLimitError, JointLimitWarning, TrajectoryError, close_names, shown,
                      shown_names)
from ..multibody.joints import joint_model
from ..validation import as_float_array, as_samples

#: Slack on position and velocity limits, so that a path sampled exactly at a limit passes.
LIMIT_TOLERANCE = 1e-9


@dataclass
class Trajectory:
    """Samples of a joint path, columns in ``joint_names`` (= ``RobotModel.joint_names``) order."""
    time: np.ndarray            # (N,)
    positions: np.ndarray       # (N, dof)
    velocities: np.ndarray      # (N, dof)
    accelerations: np.ndarray   # (N, dof)
    joint_names: list
    velocity_source: str = "given"       # 'given' or 'differentiated'
    acceleration_source: str = "given"
    source: str = None          # file name, for messages
    limit_violations: list = field(default_factory=list)

    def __len__(self):
        return len(self.time)

    @property
    def duration(self):
        return float(self.time[-1] - self.time[0]) if len(self.time) else 0.0


# ---------------------------------------------------------------------- differentiation
def differentiate(time, values):
    """First derivative of samples ``values`` (N, ...) at ``time`` (N,), exact for quadratics.

    The derivative at each sample of the quadratic through it and its two
    neighbours (one-sided quadratic at both ends); needs N >= 3 and strictly
    increasing ``time``.
    """
    time = as_float_array("time", time, "vector of sample times")
    values = as_float_array("values", values, "array of samples")
    if len(time) < 3:
        raise TrajectoryError(f"differentiating a path needs at least 3 samples, got {len(time)}; "
                              "give velocity and acceleration columns for shorter paths")
    return np.gradient(values, time, axis=0, edge_order=2)


def second_derivative(time, values):
    """Second derivative of the quadratic through each sample and its neighbours (ends: first/last three)."""
    time = as_float_array("time", time, "vector of sample times")
    values = as_float_array("values", values, "array of samples")
    if len(time) < 3:
        raise TrajectoryError(f"differentiating a path needs at least 3 samples, got {len(time)}; "
                              "give velocity and acceleration columns for shorter paths")
    h = np.diff(time)
    slopes = np.diff(values, axis=0) / h[:, None]
    inner = 2.0 * (slopes[1:] - slopes[:-1]) / (h[1:] + h[:-1])[:, None]
    return np.concatenate((inner[:1], inner, inner[-1:]), axis=0)


# ---------------------------------------------------------------------- construction
def _check_time(time, lines=None):
    if time.ndim != 1 or len(time) == 0:
        raise TrajectoryError("a path needs at least one sample")
    if not np.all(np.isfinite(time)):
        bad = int(np.flatnonzero(~np.isfinite(time))[0])
        raise TrajectoryError(f"time is NaN or inf in sample {bad}",
                              None if lines is None else lines[bad])
    steps = np.diff(time)
    if np.any(steps <= 0):
        bad = int(np.flatnonzero(steps <= 0)[0]) + 1
        raise TrajectoryError(
            f"time must increase strictly: sample {bad} has time {float(time[bad])!r} after "
            f"{float(time[bad - 1])!r}",
            None if lines is None else lines[bad])


def trajectory_from_arrays(model, time, positions, velocities=None, accelerations=None,
                           joint_names=None, check_limits=True, strict=False, source=None):
    """A :class:`Trajectory` from arrays; missing rates are differentiated (module docstring).

    ``joint_names`` gives the column order of the arrays (default: the model's);
    every independent joint must be present.  Limits are checked as in
    :func:`check_joint_limits` unless ``check_limits=False``.
    """
    time = np.atleast_1d(as_float_array("time", time, "vector of sample times"))
    _check_time(time)
    names = model.joint_names
    columns = joint_names if joint_names is not None else names
    order = _column_order(model, list(columns))
    width, count = len(columns), len(time)
    positions = as_samples("positions", positions, width, count)[:, order]
    # Differentiated rates are checked here, under the names the caller knows: beyond
    # the library's range they would be refused later as the recursions' QD or QDD.
    if velocities is None:
        velocities = as_samples("velocities (differentiated from the positions)",
                                differentiate(time, positions), width, count)
        velocity_source = "differentiated"
    else:
        velocities = as_samples("velocities", velocities, width, count)[:, order]
        velocity_source = "given"
    if accelerations is None:
        if velocity_source == "given":
            accelerations, origin = differentiate(time, velocities), "velocities"
        else:
            accelerations, origin = second_derivative(time, positions), "positions"
        accelerations = as_samples(f"accelerations (differentiated from the {origin})",
                                   accelerations, width, count)
        acceleration_source = "differentiated"
    else:
        accelerations = as_samples("accelerations", accelerations, width, count)[:, order]
        acceleration_source = "given"
    trajectory = Trajectory(time, positions, velocities, accelerations, names, velocity_source,
                            acceleration_source, source)
    if check_limits:
        check_joint_limits(model, trajectory, strict)
    return trajectory


def _column_order(model, columns):
    """Indices that reorder ``columns`` (joint names) into model order; errors name the culprits."""
    names = model.joint_names
    mimics = {joint.name: joint.mimic_of for joint in model.joints if joint.mimic_of}
    seen = set()
    for column in columns:
        if column in seen:
            raise TrajectoryError(f"joint column {column!r} appears twice")
        seen.add(column)
        if column in mimics:
            raise TrajectoryError(f"joint {column!r} is a mimic of {mimics[column]!r}: give the "
                                  f"column {mimics[column]!r} instead (mimic joints follow it)")
        if column not in names:
            close = close_names(column, names)
            hint = f"; did you mean {', '.join(map(shown, close))}?" if close else ""
            raise TrajectoryError(f"unknown joint column {shown(column)}{hint} (the robot's "
                                  f"joints: {shown_names(names)})")
    missing = [name for name in names if name not in seen]
    if missing:
        raise TrajectoryError(f"missing joint column(s) {', '.join(repr(m) for m in missing)}; "
                              "every independent joint needs a position column")
    return [columns.index(name) for name in names]


# ---------------------------------------------------------------------- CSV
def read_trajectory_csv(model, source, check_limits=True, strict=False):
    """Read a trajectory CSV (path, file object or text) for ``model``.

    Raises :class:`~soa_dynamics_ros.errors.TrajectoryError` for malformed files
    (with the line number), :class:`JointLimitError` with ``strict=True`` for
    paths outside the URDF limits (else a :class:`JointLimitWarning`).
    """
    name = None
    if hasattr(source, "read"):
        text = source.read()
    elif isinstance(source, (str, os.PathLike)) and "\n" not in str(source):
        name = str(source)
        try:
            # utf-8-sig: spreadsheets often start a UTF-8 CSV with a byte-order mark.
            with open(source, newline="", encoding="utf-8-sig") as handle:
                text = handle.read()
        except OSError as error:
            raise TrajectoryError(f"cannot read trajectory {name!r}: {error.strerror}") from None
        except UnicodeDecodeError as error:
            raise TrajectoryError(f"trajectory {name!r} is not UTF-8 text (byte {error.start}: "
                                  f"{error.object[error.start:error.start + 1]!r})") from None
    else:
        text = str(source)
    text = text.removeprefix("\ufeff")
    rows = []
    # newline=None: \r\n and lone \r (classic Mac) end lines as \n does.
    reader = csv.reader(io.StringIO(text, newline=None))
    try:
        for number, row in enumerate(reader, start=1):
            if not row or all(not cell.strip() for cell in row) or row[0].lstrip().startswith("#"):
                continue
            rows.append((number, [cell.strip() for cell in row]))
    except csv.Error as error:
        raise TrajectoryError(f"not a readable CSV: {error}", reader.line_num) from None
    if not rows:
        raise TrajectoryError("the trajectory CSV is empty (it needs a header row and samples)")
    header_line, header = rows[0]
    if len(rows) < 2:
        raise TrajectoryError("the trajectory CSV has a header but no samples", header_line)
    if "time" not in header:
        raise TrajectoryError("the header has no 'time' column (expected: time,<joint>,...)",
                              header_line)
    for column in header:
        if not column:
            raise TrajectoryError("the header has an empty column name", header_line)
    position_columns, velocity_columns, acceleration_columns = [], [], []
    for index, column in enumerate(header):
        if column == "time":
            continue
        if column.endswith(".effort"):
            continue
        if column.endswith(".velocity"):
            velocity_columns.append((column[:-len(".velocity")], index))
        elif column.endswith(".acceleration"):
            acceleration_columns.append((column[:-len(".acceleration")], index))
        else:
            position_columns.append((column, index))
    if header.count("time") > 1:
        raise TrajectoryError("the header has more than one 'time' column", header_line)
    names = [n for n, _ in position_columns]
    _column_order_with_line(model, names, header_line)
    for kind, given in (("velocity", velocity_columns), ("acceleration", acceleration_columns)):
        given_names = [n for n, _ in given]
        for joint in given_names:
            if joint not in names:
                raise TrajectoryError(f"column '{joint}.{kind}' has no position column {joint!r}",
                                      header_line)
        if given and sorted(given_names) != sorted(names):
            missing = [n for n in names if n not in given_names]
            raise TrajectoryError(f"{kind} columns must be given for every joint or none; "
                                  f"missing for {', '.join(repr(m) for m in missing)}", header_line)

    width = len(header)
    data = np.empty((len(rows) - 1, width))
    lines = []
    for row_index, (number, row) in enumerate(rows[1:]):
        if len(row) != width:
            raise TrajectoryError(f"row has {len(row)} field(s) but the header has {width}", number)
        for column_index, cell in enumerate(row):
            try:
                value = float(cell)
            except ValueError:
                raise TrajectoryError(f"column {header[column_index]!r}: {cell!r} is not a number",
                                      number) from None
            if not math.isfinite(value):
                raise TrajectoryError(f"column {header[column_index]!r}: {cell!r} is not finite",
                                      number)
            data[row_index, column_index] = value
        lines.append(number)
    time = data[:, header.index("time")]
    _check_time(time, lines)

    def block(columns):
        if not columns:
            return None
        index = dict(columns)
        return data[:, [index[n] for n in names]]

    return trajectory_from_arrays(
        model, time, data[:, [i for _, i in position_columns]], block(velocity_columns),
        block(acceleration_columns), joint_names=names, check_limits=check_limits,
        strict=strict, source=name)


def _column_order_with_line(model, names, line):
    try:
        return _column_order(model, names)
    except TrajectoryError as error:
        raise TrajectoryError(str(error), line) from None


# ---------------------------------------------------------------------- joint limits
def limit_violations(model, trajectory):
    """Every (joint, kind, first sample, worst value, limit) where the path leaves a URDF limit.

    Position limits apply to revolute and prismatic joints (not continuous ones),
    velocity limits to every joint with a finite ``velocity``; mimic joints are
    checked through their coordinate ``multiplier * q_master + offset``.
    """
    index = {name: i for i, name in enumerate(trajectory.joint_names)}
    found = []
    for joint in model.joints:
        master, multiplier, offset = model.tree.coordinates.hinge_coordinate(joint.body)
        column = index[model.joint_names[master]]
        q = multiplier * trajectory.positions[:, column] + offset
        qd = multiplier * trajectory.velocities[:, column]
        checks = []
        if joint_model(joint.type).bounded:
            checks.append(("position below lower limit", q, joint.lower, -1))
            checks.append(("position above upper limit", q, joint.upper, +1))
        if math.isfinite(joint.velocity):
            checks.append(("speed above velocity limit", np.abs(qd), joint.velocity, +1))
        for kind, values, limit, sign in checks:
            if not math.isfinite(limit):
                continue
            excess = sign * (values - limit)
            bad = excess > LIMIT_TOLERANCE * max(1.0, abs(limit))
            if np.any(bad):
                first = int(np.flatnonzero(bad)[0])
                worst = int(np.argmax(excess))
                found.append({"joint": joint.name, "kind": kind, "first_sample": first,
                              "first_time": float(trajectory.time[first]),
                              "worst_value": float(values[worst]), "limit": float(limit),
                              "samples": int(bad.sum())})
    return found


def describe_violation(violation):
    return (f"joint {violation['joint']!r}: {violation['kind']} {violation['limit']:g} from "
            f"t={violation['first_time']:g} s ({violation['samples']} sample(s), worst "
            f"{violation['worst_value']:g})")


def check_joint_limits(model, trajectory, strict=False):
    """Warn (:class:`JointLimitWarning`) or, with ``strict``, raise :class:`JointLimitError`.

    The violations are also stored in ``trajectory.limit_violations``.
    """
    found = limit_violations(model, trajectory)
    trajectory.limit_violations = found
    if found:
        message = ("the path leaves the URDF joint limits: "
                   + "; ".join(describe_violation(v) for v in found[:5])
                   + (f"; and {len(found) - 5} more" if len(found) > 5 else ""))
        if strict:
            raise JointLimitError(message)
        warnings.warn(message, JointLimitWarning, stacklevel=3)
    return found

"""``soa-dynamics``: plant description tools on the command line (no ROS needed).

Subcommands: info, torques, efforts, payload, deflection, dh, criteria, export-c (``soa-dynamics
SUBCOMMAND --help``).  Every subcommand takes ``--json``; per-sample tables are
lists of rows whose columns the output names (``columns``), joints in the
``joint_names`` order it states.  Bad input exits with status 2 and a one-line
message on stderr; progress on long paths goes to stderr too.
"""
import argparse
import csv
import json
import math
import os
import sys
import warnings

import numpy as np

from ..errors import SoaDynamicsError
from ..model.robot_model import RobotModel
from ..multibody.joints import joint_model

PROG = "soa-dynamics"
#: Paths with at least this many samples report progress on stderr.
PROGRESS_THRESHOLD = 2000


class UsageError(Exception):
    """Bad command-line arguments (exit status 2)."""


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise UsageError(f"{message} (see '{self.prog} --help')")


# ---------------------------------------------------------------------- helpers
def _jsonable(value):
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return _jsonable(value.tolist())
    if isinstance(value, (np.floating, float)):
        value = float(value)
        return value if math.isfinite(value) else None
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.bool_):
        return bool(value)
    return value


def _print_json(data):
    json.dump(_jsonable(data), sys.stdout, indent=1, allow_nan=False)
    sys.stdout.write("\n")


def _numbers(text, count, what):
    try:
        values = [float(v) for v in text.replace(" ", "").split(",") if v != ""]
    except ValueError:
        raise UsageError(f"{what} must be {count} comma-separated numbers, got {text!r}") from None
    if len(values) != count or not all(math.isfinite(v) for v in values):
        raise UsageError(f"{what} must be {count} comma-separated finite numbers, got {text!r}")
    return values


def _wrenches(specs, default_link):
    """``LINK:fx,fy,fz,tx,ty,tz`` (or the six numbers alone for the end-effector) -> dict."""
    result = {}
    for spec in specs or []:
        if ":" in spec:
            link, numbers = spec.rsplit(":", 1)
        else:
            if default_link is None:
                raise UsageError(f"--wrench {spec!r} needs a link: LINK:fx,fy,fz,tx,ty,tz")
            link, numbers = default_link(), spec
        wrench = np.array(_numbers(numbers, 6, "--wrench"))
        result[link] = result.get(link, np.zeros(6)) + wrench
    return result


class _Progress:
    """Progress on stderr for long paths: one line per ~10%."""

    def __init__(self, enabled):
        self.enabled = enabled
        self.last = {}

    def __call__(self, done, total, stage):
        if not self.enabled or total < PROGRESS_THRESHOLD:
            return
        percent = int(100 * done / total)
        step = percent // 10
        if self.last.get("step") == step and done < total:
            return
        self.last["step"] = step
        print(f"{PROG}: {stage}: {done}/{total} ({percent}%)", file=sys.stderr, flush=True)


def _load_model(args):
    return RobotModel.from_urdf(args.robot, strict_inertia=getattr(args, "strict_inertia", False))


def _trajectory(model, args):
    from .trajectory import read_trajectory_csv
    return read_trajectory_csv(model, args.trajectory, strict=args.strict)


def _check_outputs(args):
    """Refuse unwritable --out/--plot paths before any work, so bad ones change nothing.

    ``args.plot`` becomes the file the plot is written to (a name without
    extension gets .png), which is the name reported.
    """
    from .plots import plot_file_name
    for option, what, suffix in (("out", "--out file", ".csv"), ("plot", "plot", ".png")):
        path = getattr(args, option, None)
        if not path:
            continue
        if os.path.isdir(path):
            example = os.path.join(path, args.command + suffix)
            raise UsageError(f"cannot write {what} {path!r}: it is a directory; give a file name "
                             f"(e.g. {example!r})")
        parent = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(parent):
            raise UsageError(f"cannot write {what} {path!r}: directory {parent!r} does not exist")
    if getattr(args, "plot", None):
        args.plot = plot_file_name(args.plot)


def _write_csv(path, columns, rows):
    try:
        with open(path, "w", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(columns)
            for row in rows:
                writer.writerow([repr(float(v)) for v in row])
    except OSError as error:
        raise UsageError(f"cannot write {path!r}: {error.strerror}") from None


def _table(headers, rows):
    widths = [max(len(str(h)), *(len(str(r[i])) for r in rows)) if rows else len(str(h))
              for i, h in enumerate(headers)]
    lines = ["  ".join(str(h).ljust(w) for h, w in zip(headers, widths))]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(str(c).ljust(w) for c, w in zip(row, widths)) for row in rows]
    return "\n".join(lines)


def _fmt(value, digits=6):
    if value is None:
        return "-"
    value = float(value)
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return f"{value:.{digits}g}"


def _frame(model, args):
    """--frame, else the stiffness file's frame, else the serial chain's tip."""
    from .chain import default_tip
    return args.frame or default_tip(model)


def _trajectory_header(trajectory):
    return {"samples": len(trajectory), "duration": trajectory.duration,
            "velocities": trajectory.velocity_source,
            "accelerations": trajectory.acceleration_source,
            "limit_violations": trajectory.limit_violations}


# ---------------------------------------------------------------------- subcommands
def cmd_info(args):
    from .info import robot_info
    model = _load_model(args)
    info = robot_info(model)
    if args.json:
        return _print_json(info)
    print(f"robot {info['robot']}: root link {info['root']!r}, {info['dof']} independent joint(s), "
          f"{info['moving_joints']} moving joint(s)")
    rows = []
    for joint in info["joints"]:
        if "lower" not in joint:
            rows.append([joint["name"], joint["type"], joint["parent"], joint["child"], "", "", "", "", ""])
            continue
        rows.append([joint["name"], joint["type"], joint["parent"], joint["child"],
                     _fmt(joint["lower"], 5), _fmt(joint["upper"], 5), _fmt(joint["effort"], 5),
                     _fmt(joint["velocity"], 5), joint["mimic_of"] or ""])
    print(_table(["joint", "type", "parent", "child", "lower", "upper", "effort", "velocity",
                  "mimic of"], rows))
    print()
    print(_table(["link", "depth", "mass [kg]", "inertia"],
                 [["  " * min(link["depth"], 12) + link["name"], link["depth"], _fmt(link["mass"]),
                   ("-" if not link["has_inertial"] else
                    "ok" if not link["inertia_problems"] else "; ".join(link["inertia_problems"]))]
                  for link in info["links"]]))
    print()
    print(f"total mass: {info['total_mass']:.6g} kg")
    com = ", ".join(f"{c:.6g}" for c in info["center_of_mass_at_zero"])
    print(f"center of mass at q = 0 (root axes): [{com}] m")
    print("inertia validation: " + ("all inertial parameters are physical" if info["inertia_valid"]
                                    else f"{len(info['inertia_problems'])} problem(s)"))
    for problem in info["inertia_problems"]:
        print(f"  {problem}")


def _payload_argument(model, args):
    if args.payload is None:
        if args.payload_link or args.payload_com:
            raise UsageError("--payload-link/--payload-com need --payload KG")
        return None
    if not args.payload_link:
        raise UsageError("--payload needs --payload-link LINK")
    if not math.isfinite(args.payload):
        raise UsageError(f"--payload must be a finite mass in kg, got {args.payload}")
    com = _numbers(args.payload_com, 3, "--payload-com") if args.payload_com else [0.0, 0.0, 0.0]
    return (args.payload_link, args.payload, com)


def cmd_torques(args):
    from .torques import evaluate_torques
    model = _load_model(args)
    trajectory = _trajectory(model, args)
    payload = _payload_argument(model, args)
    wrenches = _wrenches(args.wrench, lambda: _frame(model, args))
    report = evaluate_torques(model, trajectory, payload, wrenches, _Progress(not args.quiet))
    columns = ["time"] + report.joint_names
    rows = np.column_stack((trajectory.time, report.torques))
    if args.out:
        _write_csv(args.out, columns, rows)
    if args.plot:
        from .plots import plot_torques
        types = {joint.name: joint.type for joint in model.joints}
        plot_torques(report, args.plot, title=f"{model.name}: joint torques along "
                     f"{trajectory.source or 'the path'}",
                     units=[joint_model(types[n]).effort_unit for n in report.joint_names])
    first = report.first_violation
    if args.json:
        return _print_json({
            "robot": model.name, "joint_names": report.joint_names, "trajectory": _trajectory_header(trajectory),
            "payload": None if payload is None else {"link": payload[0], "mass": payload[1], "com": payload[2]},
            "wrenches": {k: v for k, v in wrenches.items()},
            "summary": report.summary(), "violated": report.violated,
            "first_violation": None if first is None else {"time": first[0], "joint": first[1]},
            "columns": columns, "rows": rows})
    print(f"{model.name}: {len(trajectory)} samples over {trajectory.duration:g} s "
          f"(velocities {trajectory.velocity_source}, accelerations {trajectory.acceleration_source})")
    print(_table(["joint", "peak |tau|", "at t [s]", "effort limit", "peak/limit", "first violation [s]"],
                 [[s["joint"], _fmt(s["peak"]), _fmt(s["peak_time"]), _fmt(s["effort_limit"]),
                   f"{s['ratio']:.3f}" if math.isfinite(s["effort_limit"]) else "-",
                   _fmt(s["first_violation_time"])] for s in report.summary()]))
    if first is None:
        print("no joint exceeds its effort limit")
    else:
        print(f"first violation: joint {first[1]!r} at t = {first[0]:g} s")
    for what, path in (("torques", args.out), ("plot", args.plot)):
        if path:
            print(f"{what} written to {path}")


def cmd_efforts(args):
    """The path written back out with the feedforward effort of every sample (docs/plant_tools.md)."""
    from .torques import attached_payload, trajectory_efforts
    model = _load_model(args)
    trajectory = _trajectory(model, args)
    payload = _payload_argument(model, args)
    link, mass, *rest = payload or (None, 0.0)
    with attached_payload(model, link, mass, *rest):
        efforts = trajectory_efforts(model, trajectory, args.robot_compensates_gravity,
                                     _Progress(not args.quiet))
    names = trajectory.joint_names
    columns = (["time"] + names + [f"{n}.velocity" for n in names]
               + [f"{n}.acceleration" for n in names] + [f"{n}.effort" for n in names])
    rows = np.column_stack((trajectory.time, trajectory.positions, trajectory.velocities,
                            trajectory.accelerations, efforts))
    _write_csv(args.out, columns, rows)
    if args.json:
        return _print_json({
            "robot": model.name, "joint_names": names, "trajectory": _trajectory_header(trajectory),
            "robot_compensates_gravity": args.robot_compensates_gravity, "out": args.out,
            "columns": columns, "rows": rows})
    print(f"{model.name}: efforts of {len(trajectory)} samples over {trajectory.duration:g} s "
          f"(velocities {trajectory.velocity_source}, accelerations "
          f"{trajectory.acceleration_source}"
          + (", the robot's own gravity left out" if args.robot_compensates_gravity else "")
          + f") written to {args.out}")


def cmd_payload(args):
    from .payload import payload_capacity
    model = _load_model(args)
    trajectory = _trajectory(model, args)
    com = _numbers(args.com, 3, "--com") if args.com else [0.0, 0.0, 0.0]
    wrenches = _wrenches(args.wrench, None)
    result = payload_capacity(model, trajectory, args.link, com, wrenches, _Progress(not args.quiet))
    if args.json:
        return _print_json({
            "robot": model.name, "link": args.link, "com": com, "joint_names": model.joint_names,
            "trajectory": _trajectory_header(trajectory),
            "max_payload": result.max_payload, "unbounded": math.isinf(result.max_payload),
            "limiting_joint": result.limiting_joint, "limiting_time": result.limiting_time,
            "feasible_without_payload": result.feasible_without_payload,
            "unloaded_peak_ratio": result.unloaded_peak_ratio})
    where = f"at {args.link!r}" + (f" (COM {com} in the link frame)" if any(com) else " (link origin)")
    if not result.feasible_without_payload:
        print(f"no payload possible {where}: without payload joint {result.limiting_joint!r} already "
              f"exceeds its effort limit at t = {result.limiting_time:g} s "
              f"(peak {result.unloaded_peak_ratio:.3f} of limit)")
    elif math.isinf(result.max_payload):
        print(f"payload {where} is not limited by any effort limit along this path")
    else:
        print(f"max payload {where}: {result.max_payload:.6g} kg, limited by joint "
              f"{result.limiting_joint!r} at t = {result.limiting_time:g} s "
              f"(unloaded peak {result.unloaded_peak_ratio:.3f} of limit)")


def cmd_deflection(args):
    from .deflection import deflection_along_path, load_stiffness
    from .trajectory import trajectory_from_arrays
    model = _load_model(args)
    stiffness, file_frame = load_stiffness(model, args.stiffness)
    args.frame = args.frame or file_frame
    frame = _frame(model, args)
    if (args.trajectory is None) == (args.q is None):
        raise UsageError("give exactly one of --trajectory PATH.csv or --q Q1,Q2,...")
    if args.trajectory:
        trajectory = _trajectory(model, args)
    else:
        q = _numbers(args.q, model.dof, f"--q (joints {', '.join(model.joint_names)})")
        zeros = np.zeros((1, model.dof))
        trajectory = trajectory_from_arrays(model, [0.0], [q], zeros, zeros, strict=args.strict)
    wrenches = _wrenches(args.wrench, lambda: frame)
    result = deflection_along_path(model, trajectory, stiffness, frame, wrenches,
                                   gravity=not args.no_gravity, progress=_Progress(not args.quiet))
    columns = ["time", "dx", "dy", "dz", "rx", "ry", "rz"]
    rows = np.column_stack((trajectory.time, result.deflection))
    if args.out:
        _write_csv(args.out, columns, rows)
    if args.plot:
        from .plots import plot_deflection
        plot_deflection(result, args.plot, title=f"{model.name}: deflection of {frame}")
    summary = result.summary()
    if args.json:
        return _print_json({
            "robot": model.name, "frame": frame, "joint_names": model.joint_names,
            "stiffness": stiffness, "gravity": not args.no_gravity, "wrenches": wrenches,
            "trajectory": _trajectory_header(trajectory), "summary": summary,
            "columns": columns, "rows": rows,
            "joint_deflection": {"columns": ["time"] + model.joint_names,
                                 "rows": np.column_stack((trajectory.time, result.joint_deflection))}})
    if len(trajectory) == 1:
        d = result.deflection[0]
        print(f"deflection of {frame!r} (root axes): translation [{', '.join(f'{v * 1e3:.6g}' for v in d[:3])}] mm"
              f" (|dp| = {summary['max_translation'] * 1e3:.6g} mm), rotation "
              f"[{', '.join(f'{v * 1e3:.6g}' for v in d[3:])}] mrad "
              f"(|dtheta| = {summary['max_rotation'] * 1e3:.6g} mrad)")
    else:
        print(f"deflection of {frame!r} along {len(trajectory)} samples: max |dp| = "
              f"{summary['max_translation'] * 1e3:.6g} mm at t = {summary['max_translation_time']:g} s, "
              f"max |dtheta| = {summary['max_rotation'] * 1e3:.6g} mrad at t = "
              f"{summary['max_rotation_time']:g} s")
    for what, path in (("deflection", args.out), ("plot", args.plot)):
        if path:
            print(f"{what} written to {path}")


def _rounded(row):
    """A copy of a DH row with round-off (|v| < 1e-12) shown as 0, for the text table."""
    import dataclasses
    return dataclasses.replace(row, **{k: (0.0 if abs(getattr(row, k)) < 1e-12 else getattr(row, k))
                                       for k in ("theta", "d", "a", "alpha")})


def cmd_dh(args):
    from .chain import default_tip
    from .dh import dh_parameters
    model = _load_model(args)
    tip = args.tip or default_tip(model)
    conventions = ["standard", "modified"] if args.convention == "both" else [args.convention]
    tables = {c: dh_parameters(model, tip, c) for c in conventions}
    if args.json:
        return _print_json({"robot": model.name, "tip": tip,
                            **{c: t.as_dict() for c, t in tables.items()}})
    for convention, table in tables.items():
        if convention == "standard":
            print(f"standard DH, {table.root} -> {tip}:  A_i = Rz(theta) Tz(d) Tx(a) Rx(alpha)")
            headers = ["joint", "type", "theta [rad]", "d [m]", "a [m]", "alpha [rad]", "next axis"]
        else:
            print(f"modified DH, {table.root} -> {tip}:  A_i = Rx(alpha_{{i-1}}) Tx(a_{{i-1}}) Rz(theta_i) Tz(d_i)")
            headers = ["joint", "type", "alpha_{i-1} [rad]", "a_{i-1} [m]", "theta [rad]", "d [m]",
                       "next axis"]
        rows = []
        for row in table.rows:
            row = _rounded(row)
            theta = (f"q + {row.theta:.6g}" if row.variable == "theta" else f"{row.theta:.6g}")
            d = (f"q + {row.d:.6g}" if row.variable == "d" else f"{row.d:.6g}")
            if row.mimic_of:
                s = f"({row.multiplier:g} {row.mimic_of} + {row.offset:g})"
                theta, d = theta.replace("q", s), d.replace("q", s)
            name = row.joint
            values = ([theta, d, f"{row.a:.6g}", f"{row.alpha:.6g}"] if convention == "standard"
                      else [f"{row.alpha:.6g}", f"{row.a:.6g}", theta, d])
            rows.append([name, row.type, *values, row.axis_relation])
        print(_table(headers, rows))
        for label, matrix in (("base (root -> DH frame 0)", table.base),
                              (f"tool (last DH frame -> {tip})", table.tool)):
            print(f"{label}:")
            for line in matrix:
                print("  [" + ", ".join(f"{v + 0.0: .9f}" for v in np.where(np.abs(line) < 1e-12, 0.0, line)) + "]")
        print(f"forward kinematics rebuilt from this table matches the URDF to {table.fk_error:.1e}")
        print()


def cmd_criteria(args):
    from .criteria import criteria_along_path
    model = _load_model(args)
    trajectory = _trajectory(model, args)
    frame = _frame(model, args)
    wrenches = _wrenches(args.wrench, lambda: frame)
    result = criteria_along_path(model, trajectory, frame, args.part, wrenches,
                                 _Progress(not args.quiet))
    columns = ["time", *result.NAMES]
    rows = np.column_stack([trajectory.time] + [getattr(result, n) for n in result.NAMES])
    if args.out:
        _write_csv(args.out, columns, rows)
    if args.plot:
        from .plots import plot_criteria
        plot_criteria(result, args.plot, title=f"{model.name}: criteria at {frame} ({args.part})")
    summary = result.summary()
    if args.json:
        return _print_json({"robot": model.name, "frame": frame, "part": args.part,
                            "joint_names": model.joint_names,
                            "trajectory": _trajectory_header(trajectory), "summary": summary,
                            "columns": columns, "rows": rows})
    print(f"criteria at {frame!r} ({args.part}) along {len(trajectory)} samples:")
    print(_table(["criterion", "min", "at t [s]", "max", "at t [s]", "mean"],
                 [[name, _fmt(s["min"]), _fmt(s["argmin_time"]), _fmt(s["max"]),
                   _fmt(s["argmax_time"]), _fmt(s["mean"])] for name, s in summary.items()]))
    for what, path in (("criteria", args.out), ("plot", args.plot)):
        if path:
            print(f"{what} written to {path}")


def cmd_export_c(args):
    from ..kernels.export import export_c
    model = _load_model(args)
    frames = None if args.frames is None else [
        name.strip() for name in args.frames.split(",") if name.strip()]
    paths = export_c(model, args.out_dir, args.prefix, frames)
    if args.json:
        return _print_json({"robot": model.name, "prefix": args.prefix, "dof": model.dof,
                            "files": [str(path) for path in paths]})
    print(f"robot {model.name}: {model.dof} joint(s), library {args.prefix!r} written to "
          f"{args.out_dir}: {', '.join(path.name for path in paths)}")


# ---------------------------------------------------------------------- parser
def build_parser():
    parser = _Parser(prog=PROG, description="Plant description tools: torques, payload, deflection, "
                     "DH parameters and criteria of a robot from its URDF (no ROS needed).")
    commands = parser.add_subparsers(dest="command", metavar="SUBCOMMAND", parser_class=_Parser)
    commands.required = True

    def command(name, function, help_text):
        sub = commands.add_parser(name, help=help_text, description=help_text)
        sub.add_argument("robot", metavar="ROBOT.urdf", help="URDF or xacro file")
        sub.add_argument("--json", action="store_true", help="machine-readable output on stdout")
        sub.add_argument("--quiet", action="store_true", help="no progress messages on stderr")
        sub.add_argument("--strict-inertia", action="store_true",
                         help="refuse physically impossible inertial parameters")
        sub.set_defaults(function=function)
        return sub

    def path_options(sub, required=True):
        sub.add_argument("--trajectory", required=required, metavar="PATH.csv",
                         help="header 'time,<joint>,...' (+ optional <joint>.velocity/.acceleration)")
        sub.add_argument("--strict", action="store_true",
                         help="a path outside the URDF position/velocity limits is an error "
                              "(default: a warning)")

    def payload_options(sub):
        sub.add_argument("--payload", type=float, metavar="KG", help="payload mass")
        sub.add_argument("--payload-link", metavar="LINK", help="link carrying the payload")
        sub.add_argument("--payload-com", metavar="X,Y,Z",
                         help="payload COM in the link frame (default: origin)")

    def wrench_option(sub, default_help):
        sub.add_argument("--wrench", action="append", metavar="[LINK:]FX,FY,FZ,TX,TY,TZ",
                         help="constant wrench on the robot, root axes, about the link origin "
                              f"(repeatable){default_help}")

    command("info", cmd_info, "the tree: joints, types, limits, masses, total mass, center of mass, "
            "inertia validation")

    sub = command("torques", cmd_torques, "joint torques along a path, peaks and ratio to the "
                  "effort limits")
    path_options(sub)
    payload_options(sub)
    wrench_option(sub, "; without LINK: on the end-effector")
    sub.add_argument("--frame", metavar="LINK", help="end-effector for --wrench without LINK")
    sub.add_argument("--plot", metavar="OUT.png", help="plot torques with their limits")
    sub.add_argument("--out", metavar="OUT.csv", help="write the torques per sample")

    sub = command("efforts", cmd_efforts, "the path written back out with each sample's "
                  "feedforward effort (as ~/trajectory_out fills JointTrajectory points)")
    path_options(sub)
    payload_options(sub)
    sub.add_argument("--robot-compensates-gravity", action="store_true",
                     help="leave the robot's own gravity torques out (the payload's stay)")
    sub.add_argument("--out", required=True, metavar="OUT.csv",
                     help="the annotated path: time, positions, velocities, accelerations, "
                          "<joint>.effort columns")

    sub = command("payload", cmd_payload, "largest payload mass that keeps every joint within its "
                  "effort limit along a path")
    path_options(sub)
    sub.add_argument("--link", required=True, metavar="LINK", help="link carrying the payload")
    sub.add_argument("--com", metavar="X,Y,Z", help="payload COM in the link frame (default: origin)")
    wrench_option(sub, "")

    sub = command("deflection", cmd_deflection, "end-effector deflection from joint stiffness "
                  "under gravity, inertial and applied loads: delta_x = J K^-1 tau_load")
    sub.add_argument("--stiffness", required=True, metavar="STIFF.yaml", help="joint stiffness file")
    path_options(sub, required=False)
    sub.add_argument("--q", metavar="Q1,Q2,...", help="one static configuration (joint_names order) "
                     "instead of --trajectory")
    sub.add_argument("--frame", metavar="LINK", help="end-effector (default: the stiffness file's "
                     "'frame', else the tip of the serial chain)")
    wrench_option(sub, "; without LINK: on the end-effector")
    sub.add_argument("--no-gravity", action="store_true", help="leave gravity out of the loads")
    sub.add_argument("--plot", metavar="OUT.png", help="plot the deflection over time")
    sub.add_argument("--out", metavar="OUT.csv", help="write the deflection per sample")

    sub = command("dh", cmd_dh, "standard and modified Denavit-Hartenberg parameters of a serial chain")
    sub.add_argument("--tip", metavar="LINK", help="last link of the chain (default: the chain's tip)")
    sub.add_argument("--convention", choices=["standard", "modified", "both"], default="both")

    sub = command("criteria", cmd_criteria, "torque utilization, manipulability, dynamic "
                  "manipulability and task-space inertia conditioning along a path")
    path_options(sub)
    sub.add_argument("--frame", metavar="LINK", help="end-effector (default: the chain's tip)")
    sub.add_argument("--part", choices=["full", "translational", "rotational"], default="full",
                     help="Jacobian rows used (default: full)")
    wrench_option(sub, "; without LINK: on the end-effector")
    sub.add_argument("--plot", metavar="OUT.png", help="plot the criteria over time")
    sub.add_argument("--out", metavar="OUT.csv", help="write the criteria per sample")

    sub = command("export-c", cmd_export_c, "a self-contained C99 library of the robot's dynamics "
                  "(header, source, CMakeLists.txt, CMake package config) for a C/C++ "
                  "controller: docs/export_c.md")
    sub.add_argument("--out", dest="out_dir", required=True, metavar="DIR",
                     help="directory to write the library into (created; its files replaced)")
    sub.add_argument("--prefix", default="soa", metavar="P",
                     help="names the header, the functions (P_gravity_torques, ...) and the "
                          "CMake package (default: soa)")
    sub.add_argument("--frames", metavar="LINK,LINK,...",
                     help="the frames the frame functions take, in index order (default: every "
                          "link)")
    return parser


def _show_warning(message, category, filename, lineno, file=None, line=None):
    print(f"{PROG}: warning: {message}", file=sys.stderr, flush=True)


def main(argv=None):
    """Entry point of the ``soa-dynamics`` console script; returns the exit status."""
    parser = build_parser()
    command = None
    try:
        args = parser.parse_args(argv)
        command = args.command
        with warnings.catch_warnings():
            warnings.showwarning = _show_warning
            warnings.simplefilter("default")
            _check_outputs(args)
            args.function(args)
    except BrokenPipeError:  # pragma: no cover - e.g. `soa-dynamics ... | head`
        return 0
    except UsageError as error:
        print(f"{PROG}{' ' + command if command else ''}: error: {error}", file=sys.stderr)
        return 2
    except (SoaDynamicsError, ValueError, OSError) as error:
        message = " ".join(str(error).split()) or type(error).__name__
        print(f"{PROG} {command}: error: {message}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # pragma: no cover
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

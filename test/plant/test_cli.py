"""The ``soa-dynamics`` console script: every subcommand, --json, plots, progress and bad input."""
import csv
import json
import pathlib
import shutil
import subprocess
import sys

import numpy as np
import pytest

from support.installation import CONSOLE_SCRIPTS
from support.numerics import assert_close
from support.optional import needs
from support.robots import REPO, shipped_urdf
from soa_dynamics_ros import RobotModel
from soa_dynamics_ros.plant import dh_parameters, path_torques, payload_capacity, read_trajectory_csv

PANDA = shipped_urdf("panda.urdf")
UR5 = shipped_urdf("ur5.urdf")
DUAL = shipped_urdf("dual_arm_torso.urdf")
EXAMPLE_CSV = str(REPO / "examples" / "panda_pick_place.csv")
EXAMPLE_STIFFNESS = str(REPO / "examples" / "panda_stiffness.yaml")
SCRIPT = shutil.which("soa-dynamics", path=str(CONSOLE_SCRIPTS))
COMMAND = [SCRIPT] if SCRIPT else [sys.executable, "-m", "soa_dynamics_ros.plant.cli"]


def run(*args, expect=0):
    result = subprocess.run(COMMAND + [str(a) for a in args], capture_output=True, text=True,
                            timeout=300, cwd=REPO)
    assert result.returncode == expect, (args, result.returncode, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr, result.stderr
    return result


def run_json(*args):
    return json.loads(run(*args, "--json").stdout)


def fails(*args, match):
    """Bad input: exit status 2, one line on stderr naming the problem, nothing on stdout."""
    result = run(*args, expect=2)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    errors = [line for line in lines if ": error: " in line]
    assert len(errors) == 1 and errors[0] == lines[-1], result.stderr
    assert match in errors[0], (match, errors[0])
    assert result.stdout == ""
    return errors[0]


@pytest.fixture(scope="module")
def panda():
    return RobotModel.from_urdf(PANDA)


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_the_console_script_is_installed():
    assert SCRIPT is not None, f"soa-dynamics is not installed in {CONSOLE_SCRIPTS}"
    assert "torques" in run("--help").stdout


# ---------------------------------------------------------------------- each subcommand
def test_info(panda):
    data = run_json("info", PANDA)
    assert data["joint_names"] == panda.joint_names
    assert_close(data["total_mass"], panda.total_mass, "total mass")
    assert_close(data["center_of_mass_at_zero"], panda.center_of_mass(np.zeros(7)), "com")
    assert data["inertia_valid"] is True
    text = run("info", DUAL).stdout
    assert "l_gripper_r_finger_joint" in text and "total mass" in text


@needs("matplotlib")   # --plot
def test_torques_json_equals_the_api(panda, tmp_path):
    out, plot = tmp_path / "torques.csv", tmp_path / "torques.png"
    data = run_json("torques", PANDA, "--trajectory", EXAMPLE_CSV, "--out", out, "--plot", plot)
    trajectory = read_trajectory_csv(panda, EXAMPLE_CSV)
    expected = path_torques(panda, trajectory)
    assert data["joint_names"] == panda.joint_names
    assert data["columns"] == ["time"] + panda.joint_names
    rows = np.array(data["rows"])
    assert_close(rows[:, 0], trajectory.time, "time")
    assert_close(rows[:, 1:], expected, "torques", 1e-12)
    with open(out) as handle:
        written = list(csv.reader(handle))
    assert written[0] == data["columns"]
    assert_close(np.array(written[1:], dtype=float), rows, "CSV", 1e-15)
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and plot.stat().st_size > 20000
    summary = {s["joint"]: s for s in data["summary"]}
    assert_close(summary["panda_joint2"]["peak"], np.abs(expected[:, 1]).max(), "peak")
    assert data["violated"] is False and data["first_violation"] is None


def test_torques_with_payload_and_wrench(panda):
    data = run_json("torques", PANDA, "--trajectory", EXAMPLE_CSV, "--payload", 2.0,
                    "--payload-link", "panda_hand_tcp", "--payload-com", "0,0,0.05",
                    "--wrench", "panda_hand_tcp:0,0,-10,0,0,0")
    trajectory = read_trajectory_csv(panda, EXAMPLE_CSV)
    panda.attach_payload("p", "panda_hand_tcp", 2.0, (0, 0, 0.05))
    try:
        k = 123
        expected = panda.inverse_dynamics(trajectory.positions[k], trajectory.velocities[k],
                                          trajectory.accelerations[k],
                                          wrenches={"panda_hand_tcp": [0, 0, -10, 0, 0, 0]})
    finally:
        panda.detach_payload("p")
    assert_close(np.array(data["rows"])[k, 1:], expected, "torques with payload and wrench", 1e-12)


def test_torques_text_reports_the_first_violation(tmp_path):
    text = pathlib.Path(PANDA).read_text().replace('effort="87"', 'effort="30"', 2)
    robot = write(tmp_path, "weak_panda.urdf", text)
    result = run("torques", robot, "--trajectory", EXAMPLE_CSV)
    assert "first violation: joint 'panda_joint2' at t = " in result.stdout
    data = run_json("torques", robot, "--trajectory", EXAMPLE_CSV)
    assert data["violated"] and data["first_violation"]["joint"] == "panda_joint2"


def test_payload(panda):
    data = run_json("payload", PANDA, "--trajectory", EXAMPLE_CSV, "--link", "panda_hand_tcp")
    expected = payload_capacity(panda, read_trajectory_csv(panda, EXAMPLE_CSV), "panda_hand_tcp")
    assert_close(data["max_payload"], expected.max_payload, "capacity", 1e-12)
    assert data["limiting_joint"] == expected.limiting_joint
    assert "max payload at 'panda_hand_tcp'" in run(
        "payload", PANDA, "--trajectory", EXAMPLE_CSV, "--link", "panda_hand_tcp").stdout


@needs("matplotlib")   # --plot
def test_deflection_path_and_static(panda, tmp_path):
    plot = tmp_path / "deflection.png"
    data = run_json("deflection", PANDA, "--stiffness", EXAMPLE_STIFFNESS, "--trajectory",
                    EXAMPLE_CSV, "--plot", plot)
    assert data["frame"] == "panda_hand_tcp" and data["columns"][1:4] == ["dx", "dy", "dz"]
    assert len(data["rows"]) == 501 and plot.stat().st_size > 10000
    q = [0, -0.785, 0, -2.356, 0, 1.571, 0.785]
    static = run_json("deflection", PANDA, "--stiffness", EXAMPLE_STIFFNESS,
                      "--q", ",".join(map(str, q)), "--wrench", "0,0,-50,0,0,0", "--no-gravity")
    stiffness = np.array(static["stiffness"])
    jacobian = panda.jacobian(q, "panda_hand_tcp")
    expected = jacobian @ ((jacobian.T @ [0, 0, -50, 0, 0, 0]) / stiffness)
    assert_close(static["rows"][0][1:], expected, "static deflection under a tip force", 1e-12)


def test_dh_json_round_trips(panda):
    data = run_json("dh", UR5)
    for convention in ("standard", "modified"):
        table = data[convention]
        assert table["tip"] == "tool0" and table["fk_error"] <= 1e-12
        assert len(table["rows"]) == 6
    text = run("dh", PANDA, "--convention", "modified").stdout
    assert "modified DH" in text and "matches the URDF to" in text
    api = dh_parameters(panda, "panda_hand_tcp", "standard")
    cli = run_json("dh", PANDA, "--convention", "standard")["standard"]
    assert_close([r["alpha"] for r in cli["rows"]], [r.alpha for r in api.rows], "alpha", 0)


@needs("matplotlib")   # --plot
def test_criteria(tmp_path):
    plot, out = tmp_path / "criteria.png", tmp_path / "criteria.csv"
    data = run_json("criteria", PANDA, "--trajectory", EXAMPLE_CSV, "--part", "translational",
                    "--plot", plot, "--out", out)
    assert data["columns"] == ["time", "torque_utilization", "manipulability",
                               "dynamic_manipulability", "inertia_condition"]
    assert plot.stat().st_size > 10000 and out.stat().st_size > 0
    rows = np.array(data["rows"])
    assert np.all(rows[:, 2] > 0) and np.all(rows[:, 4] >= 1)


# ---------------------------------------------------------------------- progress
def test_progress_on_long_paths_goes_to_stderr(tmp_path, panda):
    time = np.arange(3000) * 0.002
    q = np.array([0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785]) + 0.2 * np.sin(time)[:, None]
    lines = ["time," + ",".join(panda.joint_names)]
    lines += [f"{t:.17g}," + ",".join(f"{v:.17g}" for v in row) for t, row in zip(time, q)]
    path = write(tmp_path, "long.csv", "\n".join(lines) + "\n")
    result = run("torques", PANDA, "--trajectory", path, "--json")
    assert "inverse dynamics: 3000/3000 (100%)" in result.stderr
    json.loads(result.stdout)   # progress never mixes into the JSON
    assert run("torques", PANDA, "--trajectory", path, "--json", "--quiet").stderr == ""


# ---------------------------------------------------------------------- bad input
HEADER = "time,panda_joint1,panda_joint2,panda_joint3,panda_joint4,panda_joint5,panda_joint6,panda_joint7"
Q7 = "0,-0.5,0,-2,0,1.5,0.5"


def good_rows(count=4):
    return "\n".join(f"{0.1 * k:.1f},{Q7}" for k in range(count))


@pytest.mark.parametrize("name, text, match", [
    ("ragged", f"{HEADER}\n{good_rows(2)}\n0.2,0,0\n", "line 4: row has 3 field(s) but the header has 8"),
    ("non-numeric", f"{HEADER}\n{good_rows(2)}\n0.2,0,zero,0,-2,0,1.5,0.5\n",
     "line 4: column 'panda_joint2': 'zero' is not a number"),
    ("nan", f"{HEADER}\n{good_rows(2)}\n0.2,0,nan,0,-2,0,1.5,0.5\n", "'nan' is not finite"),
    ("time backwards", f"{HEADER}\n0,{Q7}\n0.2,{Q7}\n0.1,{Q7}\n",
     "line 4: time must increase strictly"),
    ("time repeated", f"{HEADER}\n0,{Q7}\n0,{Q7}\n0.1,{Q7}\n", "time must increase strictly"),
    ("unknown joint", HEADER.replace("panda_joint7", "panda_joint_7") + "\n" + good_rows(),
     "unknown joint column 'panda_joint_7'; did you mean 'panda_joint7'"),
    ("missing joint", HEADER.rsplit(",", 1)[0] + "\n" + "\n".join(
        f"{0.1 * k:.1f},{Q7.rsplit(',', 1)[0]}" for k in range(4)),
     "missing joint column(s) 'panda_joint7'"),
    ("duplicate joint", HEADER + ",panda_joint1\n" + "\n".join(
        f"{0.1 * k:.1f},{Q7},0" for k in range(4)), "joint column 'panda_joint1' appears twice"),
    ("no time", HEADER.replace("time", "t") + "\n" + good_rows(), "no 'time' column"),
    ("empty", "", "is empty"),
    ("header only", HEADER + "\n", "no samples"),
    ("too short to differentiate", f"{HEADER}\n{good_rows(2)}\n", "at least 3 samples"),
    ("some velocities", HEADER + ",panda_joint1.velocity\n" + "\n".join(
        f"{0.1 * k:.1f},{Q7},0" for k in range(4)),
     "velocity columns must be given for every joint or none"),
])
def test_malformed_trajectory_csv(tmp_path, name, text, match):
    path = write(tmp_path, "bad.csv", text)
    fails("torques", PANDA, "--trajectory", path, match=match)


def test_mimic_joint_column_is_refused(tmp_path):
    model = RobotModel.from_urdf(DUAL)
    header = "time," + ",".join(model.joint_names) + ",l_gripper_r_finger_joint"
    rows = "\n".join(f"{k},{','.join(['0.1'] * (model.dof + 1))}" for k in range(4))
    path = write(tmp_path, "mimic.csv", header + "\n" + rows + "\n")
    fails("torques", DUAL, "--trajectory", path,
          match="'l_gripper_r_finger_joint' is a mimic of 'l_gripper_l_finger_joint'")


def test_out_of_limit_path_warns_by_default_and_fails_with_strict(tmp_path):
    text = f"{HEADER}\n" + "\n".join(f"{0.5 * k:.1f},0,0,0,{-2 + 0.8 * k:.1f},0,1.5,0.5" for k in range(5))
    path = write(tmp_path, "limits.csv", text + "\n")
    result = run("torques", PANDA, "--trajectory", path)
    warning = [line for line in result.stderr.splitlines() if "warning" in line]
    assert len(warning) == 1 and "panda_joint4" in warning[0] and "upper limit" in warning[0]
    assert "peak |tau|" in result.stdout
    fails("torques", PANDA, "--trajectory", path, "--strict",
          match="panda_joint4': position above upper limit -0.0698 from t=1.5")


def test_other_bad_input(tmp_path):
    fails("dh", DUAL, "--tip", "l_gripper_tool_frame",
          match="not a serial chain up to 'l_gripper_tool_frame': it branches at link 'torso_lift_link'")
    fails("dh", DUAL, match="branches at link 'torso_lift_link'")
    fails("dh", PANDA, "--tip", "panda_hnd", match="unknown link 'panda_hnd'; did you mean 'panda_hand'")
    fails("info", tmp_path / "missing.urdf", match="missing.urdf")
    fails("torques", PANDA, match="--trajectory")
    fails("torques", PANDA, "--trajectory", tmp_path / "nope.csv", match="cannot read trajectory")
    fails("payload", PANDA, "--trajectory", EXAMPLE_CSV, "--link", "nowhere", match="unknown frame 'nowhere'")
    fails("torques", PANDA, "--trajectory", EXAMPLE_CSV, "--payload", "-1", "--payload-link",
          "panda_hand", match="mass -1.0 is not positive")
    fails("torques", PANDA, "--trajectory", EXAMPLE_CSV, "--wrench", "panda_hand:1,2,3",
          match="--wrench must be 6 comma-separated")
    fails("deflection", PANDA, "--stiffness", EXAMPLE_STIFFNESS, "--q", "0,0", match="--q")
    fails("deflection", PANDA, "--stiffness", EXAMPLE_STIFFNESS, match="exactly one of --trajectory")
    stiff = write(tmp_path, "stiff.yaml", "joints:\n  panda_joint1: 1.0e4\n")
    fails("deflection", PANDA, "--stiffness", stiff, "--q", "0,0,0,-1,0,1,0",
          match="stiffness missing for joint(s) 'panda_joint2'")
    stiff = write(tmp_path, "stiff2.yaml", "joints:\n  panda_joint1: -3\ndefault: 1e4\n")
    fails("deflection", PANDA, "--stiffness", stiff, "--q", "0,0,0,-1,0,1,0",
          match="stiffness of 'panda_joint1' must be positive")
    fails("criteria", PANDA, "--trajectory", EXAMPLE_CSV, "--part", "sideways", match="invalid choice")
    fails("nonsense", PANDA, match="invalid choice")
    fails("torques", PANDA, "--trajectory", EXAMPLE_CSV, "--plot", tmp_path / "no" / "dir.png",
          match="cannot write plot")


@pytest.mark.parametrize("name, transform", [
    ("CR-only line ends (classic Mac)", lambda text: text.replace("\n", "\r")),
    ("CR LF line ends", lambda text: text.replace("\n", "\r\n")),
    ("a UTF-8 byte-order mark", lambda text: "\ufeff" + text),
])
def test_trajectory_csv_line_ends_and_byte_order_mark_read_like_the_plain_file(tmp_path, name, transform):
    """Spreadsheet exports: once a _csv.Error traceback (CR) or "no 'time' column" (BOM)."""
    original = pathlib.Path(EXAMPLE_CSV).read_text()
    path = tmp_path / "exported.csv"
    path.write_bytes(transform(original).encode("utf-8"))
    exported = run_json("torques", PANDA, "--trajectory", path)
    plain = run_json("torques", PANDA, "--trajectory", EXAMPLE_CSV)
    assert exported["rows"] == plain["rows"] and len(plain["rows"]) == 501


def test_trajectory_csv_that_is_not_text_or_not_csv(tmp_path):
    path = tmp_path / "latin1.csv"
    path.write_bytes(f"{HEADER}\n{good_rows()}\n# caf\xe9\n".encode("latin-1"))
    fails("torques", PANDA, "--trajectory", path, match="is not UTF-8 text")
    huge_field = write(tmp_path, "huge.csv", f'{HEADER}\n"{"1" * 200000}"\n')
    fails("torques", PANDA, "--trajectory", huge_field, match="not a readable CSV")


def test_stiffness_beyond_the_float_range_is_refused(tmp_path):
    """400 digits: once an OverflowError traceback from float(int)."""
    stiff = write(tmp_path, "huge.yaml", "joints:\n  panda_joint1: 1" + "0" * 399 + "\ndefault: 1.0e4\n")
    fails("deflection", PANDA, "--stiffness", stiff, "--q", "0,0,0,-1,0,1,0",
          match="stiffness of 'panda_joint1' has 400 digits, beyond the range of a float")


def test_stiffness_so_small_that_the_deflection_overflows_is_refused(tmp_path):
    """1e-320 (subnormal): once "max |dp| = nan" with exit status 0."""
    stiff = write(tmp_path, "tiny.yaml", "joints:\n  panda_joint2: 1.0e-320\ndefault: 1.0e4\n")
    fails("deflection", PANDA, "--stiffness", stiff, "--trajectory", EXAMPLE_CSV,
          match="deflection overflows the float range: stiffness too small for 'panda_joint2' (stiffness 1e-320)")
    fails("deflection", PANDA, "--stiffness", stiff, "--q", "0,-0.5,0,-2,0,1.5,0",
          match="stiffness too small for 'panda_joint2'")


@needs("matplotlib")   # --plot
def test_plot_path_is_the_file_written_and_reported(tmp_path):
    """--plot DIR once wrote DIR.png and reported DIR; a bad output path now changes nothing."""
    out = tmp_path / "torques.csv"
    fails("torques", PANDA, "--trajectory", EXAMPLE_CSV, "--plot", tmp_path, "--out", out,
          match="cannot write plot")
    assert not out.exists() and not pathlib.Path(str(tmp_path) + ".png").exists()
    fails("torques", PANDA, "--trajectory", EXAMPLE_CSV, "--out", tmp_path, match="is a directory")
    result = run("torques", PANDA, "--trajectory", EXAMPLE_CSV, "--plot", tmp_path / "figure")
    assert f"plot written to {tmp_path / 'figure.png'}" in result.stdout
    assert (tmp_path / "figure.png").stat().st_size > 10000 and not (tmp_path / "figure").exists()


@pytest.mark.parametrize("mass", ["nan", "inf"])
def test_payload_mass_must_be_finite(mass):
    """Once refused under an internal payload name ('__plant_payload_0__')."""
    fails("torques", PANDA, "--trajectory", EXAMPLE_CSV, "--payload", mass, "--payload-link",
          "panda_hand", match=f"--payload must be a finite mass in kg, got {mass}")


INTERNAL_NAMES = ("__plant_payload", "QD", "QDD", "'Q'")


@pytest.mark.parametrize("arguments, match", [
    (["torques", PANDA, "--trajectory", EXAMPLE_CSV, "--payload", "-1", "--payload-link",
      "panda_hand"], "payload: mass -1.0 is not positive"),
    (["torques", PANDA, "--trajectory", EXAMPLE_CSV, "--payload", "1", "--payload-link",
      "panda_hand", "--payload-com", "0,0,1e300"], "payload com holds values beyond"),
    (["payload", PANDA, "--trajectory", EXAMPLE_CSV, "--link", "panda_hand", "--com",
      "0,0,2e4"], "payload com must be within +-10000 m"),
    (["torques", PANDA, "--trajectory", "FAST"],
     "velocities (differentiated from the positions) holds values beyond 1e+50 in sample(s) [0"),
    (["efforts", PANDA, "--trajectory", "FAST", "--out", "OUT"],
     "velocities (differentiated from the positions) holds values beyond"),
    (["torques", PANDA, "--trajectory", "FAST_GIVEN_RATES"],
     "accelerations (differentiated from the velocities) holds values beyond"),
], ids=["payload mass", "payload com", "payload com bound", "differentiated velocities",
        "efforts", "differentiated accelerations"])
def test_messages_name_what_the_user_gave(tmp_path, arguments, match):
    """Once 'payload '__plant_payload_0__': ...' and 'QD holds values beyond 1e+50'."""
    # Positions jumping by 1e45 rad every nanosecond: rates beyond the library's range.
    fast = "\n".join(f"{k * 1e-9!r},{','.join([str((k % 2) * 1e45)] * 7)}" for k in range(5))
    velocity_header = ",".join(f"panda_joint{i}.velocity" for i in range(1, 8))
    given_rates = "\n".join(f"{k * 1e-9!r},{Q7},{','.join([str((k % 2) * 1e45)] * 7)}"
                             for k in range(5))
    files = {"FAST": write(tmp_path, "fast.csv", f"{HEADER}\n{fast}\n"),
             "FAST_GIVEN_RATES": write(tmp_path, "given.csv",
                                       f"{HEADER},{velocity_header}\n{given_rates}\n"),
             "OUT": tmp_path / "out.csv"}
    error = fails(*[files.get(argument, argument) for argument in arguments], match=match)
    assert not any(name in error for name in INTERNAL_NAMES), error


def pinocchio_static_and_dynamic(xml, payload=None):
    from oracles.pinocchio_reference import PinocchioReference
    names = RobotModel.from_urdf(PANDA).joint_names
    reference = PinocchioReference(xml, names)
    if payload:
        reference.attach(*payload)
    return reference, PinocchioReference(xml, names)


@pytest.mark.parametrize("compensates", [False, True], ids=["full", "robot-compensates-gravity"])
def test_efforts_writes_the_path_back_with_pinocchio_efforts(tmp_path, compensates):
    """`efforts --out`: the samples, the rates used and each sample's effort, readable again."""
    xml = pathlib.Path(PANDA).read_text()
    out = tmp_path / "annotated.csv"
    flag = ["--robot-compensates-gravity"] if compensates else []
    run("efforts", PANDA, "--trajectory", EXAMPLE_CSV, "--payload", "1.5", "--payload-link",
        "panda_link7", "--payload-com", "0.01,0,0.1", "--out", out, *flag, "--quiet")
    with open(out) as handle:
        rows = list(csv.reader(handle))
    header, data = rows[0], np.array(rows[1:], dtype=float)
    names = RobotModel.from_urdf(PANDA).joint_names
    column = {name: i for i, name in enumerate(header)}

    def block(suffix):
        return data[:, [column[name + suffix] for name in names]]
    q, qd, qdd, effort = block(""), block(".velocity"), block(".acceleration"), block(".effort")
    reference, bare = pinocchio_static_and_dynamic(
        xml, ("panda_link7", 1.5, np.array([0.01, 0.0, 0.1]), np.zeros((3, 3))))
    for k in range(len(data)):
        expected = reference.inverse_dynamics(q[k], qd[k], qdd[k])
        if compensates:
            expected -= bare.inverse_dynamics(q[k], np.zeros(7), np.zeros(7))
        assert_close(effort[k], expected, f"sample {k}", 1e-9)
    # The file reads back as a path with given rates (the efforts are ignored).
    again = read_trajectory_csv(RobotModel.from_urdf(PANDA), str(out))
    assert again.velocity_source == "given" and again.acceleration_source == "given"
    assert_close(again.velocities, qd, "rates read back", 0.0)


def test_efforts_needs_an_out_file(tmp_path):
    fails("efforts", PANDA, "--trajectory", EXAMPLE_CSV, match="--out")

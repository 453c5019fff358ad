"""The node's estimation logic without ROS (embedded/estimation.py): time, samples, refusals.

The physics (observer, identification) is the library's and is tested there;
here: which states reach it, and that the samples handed to identification
follow the effort convention of the simulated arm (MuJoCo is the plant).
"""
import numpy as np
import pytest

from support.optional import require
from support.robots import shipped_urdf
from support.sim_harness import POSES
from soa_dynamics_ros import RobotModel
from soa_dynamics_ros.embedded import estimation as estimation_module
from soa_dynamics_ros.embedded.estimation import LiveEstimation, identification_samples
from soa_dynamics_ros.errors import InvalidInputError, UnknownNameError

require("mujoco")   # the plant these estimates are checked on
from soa_dynamics_ros.sim.mujoco_plant import MujocoPlant  # noqa: E402

PAYLOAD = dict(link="panda_hand", mass=1.2, com=[0.03, 0.01, 0.05],
               inertia=[0.003, 0.0, 0.0, 0.0, 0.004, 0.0, 0.0, 0.0, 0.002])


@pytest.fixture(scope="module")
def model():
    return RobotModel.from_urdf(shipped_urdf("panda.urdf"))


def estimation(model, **settings):
    return LiveEstimation(model, settings.get("gain", 100.0), [2.0], 0.5,
                          settings.get("frame", ""), settings.get("buffer_time", 10.0), 0.05)


def recorded_motion(seconds, payload=PAYLOAD):
    """(t, Q, QD, TAU) of the Panda in MuJoCo carrying ``payload``, as soa_dynamics_sim
    publishes them: each state with the effort applied over the step that led to it."""
    plant = MujocoPlant(shipped_urdf("panda.urdf"), payload=payload)
    reference = RobotModel.from_urdf(shipped_urdf("panda.urdf"), kernels="off")
    q0 = np.array([POSES["panda"][n] for n in plant.joint_names])
    plant.reset(q0)
    amplitude = np.array([0.3, 0.25, 0.3, 0.3, 0.6, 0.5, 0.8])
    omega = 2 * np.pi * np.array([0.31, 0.43, 0.37, 0.53, 0.71, 0.83, 0.97])
    rows, applied = [], np.zeros(7)
    for _ in range(int(seconds / plant.timestep)):
        rows.append((plant.time, plant.positions(), plant.velocities(), applied))
        s = plant.time
        q_d, qd_d = q0 + amplitude * np.sin(omega * s), amplitude * omega * np.cos(omega * s)
        q, qd = plant.positions(), plant.velocities()
        applied = plant.set_effort(reference.inverse_dynamics(
            q, qd, 400.0 * (q_d - q) + 40.0 * (qd_d - qd)))
        plant.step()
    return tuple(np.array([row[k] for row in rows]) for k in range(4))


def test_identification_samples_pair_each_interval_with_the_effort_reported_at_its_end(model):
    """On MuJoCo data the pairing is exact: the payload comes back to rounding."""
    t, Q, QD, TAU = recorded_motion(2.0)
    rows = identification_samples(t, Q, QD, TAU, max_gap=0.05, max_samples=300)
    assert len(rows[0]) == 300
    result = model.identify_payload(PAYLOAD["link"], *rows)
    assert result.mass == pytest.approx(PAYLOAD["mass"], rel=1e-6)
    assert result.com == pytest.approx(PAYLOAD["com"], abs=1e-6)
    # The effort of the interval's start instead (one step off) is measurably wrong.
    dt = np.diff(t)
    shifted = model.identify_payload(PAYLOAD["link"], Q[:-1], QD[:-1],
                                     np.diff(QD, axis=0) / dt[:, None], TAU[:-1])
    assert abs(shifted.mass - PAYLOAD["mass"]) > 1e3 * abs(result.mass - PAYLOAD["mass"])


def test_intervals_across_a_gap_are_left_out():
    t = np.array([0.0, 0.001, 0.002, 0.5, 0.501])
    Q = QD = TAU = np.arange(10.0).reshape(5, 2)
    Q_, QD_, QDD, TAU_ = identification_samples(t, Q, QD, TAU, max_gap=0.05, max_samples=10)
    assert len(Q_) == 3 and Q_[:, 0].tolist() == [0.0, 2.0, 6.0]
    assert TAU_[:, 0].tolist() == [2.0, 4.0, 8.0]


def test_repeated_stamps_are_skipped_and_gaps_or_a_clock_going_back_restart(model):
    live = estimation(model)
    q = np.array([POSES["panda"][n] for n in model.joint_names])
    tau = model.gravity_torques(q)
    zero = np.zeros(7)
    assert live.update(q, zero, tau, 1.000) is None               # first state: the start
    assert live.update(q, zero, tau, 1.001) is not None
    assert live.update(q, zero, tau, 1.001) is None               # the same state again
    assert live.update(q, zero, tau, 1.2) is None                 # a gap: restart
    assert live.update(q, zero, tau, 1.201) is not None
    assert len(live.samples) == 4
    assert live.update(q, zero, tau, 0.5) is None                 # clock back: new history
    assert len(live.samples) == 1


def test_recent_samples_refuse_what_the_buffer_cannot_give(model):
    live = estimation(model, buffer_time=1.0)
    with pytest.raises(InvalidInputError, match="no samples yet"):
        live.recent(0.5)
    q = np.array([POSES["panda"][n] for n in model.joint_names])
    for k in range(100):
        live.update(q, np.zeros(7), model.gravity_torques(q), k * 1e-3)
    for duration, words in ((0.0, "positive"), (-1.0, "positive"), (float("nan"), "positive"),
                            (2.0, "longer than the 1 s"), (0.5, "only 0.099 s")):
        with pytest.raises(InvalidInputError, match=words):
            live.recent(duration)
    assert len(live.recent(0.05)[0]) == 51
    with pytest.raises(UnknownNameError):
        live.identify("no_such_link", 0.05)


def test_refusals_at_the_count_bound_report_the_seconds_kept(model, monkeypatch):
    """Where the state rate fills the buffer's count bound before identification_buffer_time,
    the refusal said "kept yet" (waiting never gives more); it names the bound now.
    (A bound of 200 states stands in for 60,000: the same logic, 300 times fewer states.)"""
    monkeypatch.setattr(estimation_module, "MAX_BUFFER_SAMPLES", 200)
    live = estimation(model, buffer_time=1.0)
    q = np.array([POSES["panda"][n] for n in model.joint_names])
    tau = model.gravity_torques(q)
    for k in range(500):
        live.update(q, np.zeros(7), tau, k * 1e-3)
    with pytest.raises(InvalidInputError) as refusal:
        live.recent(0.5)
    assert str(refusal.value) == ("only 0.199 s of samples are kept at this joint-state rate "
                                  "(at most 200 states, 1000 per s), 0.5 s requested")
    assert len(live.recent(0.19)[0]) == 191


def test_an_identification_reports_the_seconds_it_used(model):
    """Not the duration asked for: 0.55 s asked, 0.519 s of states kept (within the 10%
    allowed short)."""
    live = estimation(model)
    for t, q, qd, tau in zip(*recorded_motion(0.52)):
        live.update(q, qd, tau, t)
    outcome = live.identify("panda_hand", 0.55)
    assert "samples over the last 0.519 s" in outcome.message, outcome.message


def test_an_arm_at_rest_does_not_excite_a_load_and_nothing_is_attached(model):
    live = estimation(model)
    q = np.array([POSES["panda"][n] for n in model.joint_names])
    for k in range(300):
        live.update(q, np.zeros(7), model.gravity_torques(q), k * 1e-3)
    with pytest.raises(InvalidInputError, match="cannot be identified|excite"):
        live.identify("panda_hand", 0.25, apply=True, name="box")
    assert "box" not in model.payloads


def test_settings_that_do_not_fit_the_robot_are_refused(model):
    with pytest.raises(InvalidInputError, match="3 values for 7 joints"):
        LiveEstimation(model, 100.0, [1.0, 2.0, 3.0], 0.5)
    with pytest.raises(InvalidInputError, match="no frame 'nowhere'"):
        estimation(model, frame="nowhere")

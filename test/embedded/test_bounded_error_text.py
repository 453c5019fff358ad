"""Error text about hostile input stays short and quick to make (issue 43, items 9-10):
names are cut, lists of them end with a count, "did you mean" is not searched for
huge names or candidate lists."""
import difflib

import numpy as np
import pytest

from support.robots import shipped_urdf
from soa_dynamics_ros import RobotModel
from soa_dynamics_ros import errors
from soa_dynamics_ros.embedded.live_model import LiveModel
from soa_dynamics_ros.errors import InvalidInputError, UnknownNameError
from soa_dynamics_ros.plant.trajectory import trajectory_from_arrays

PANDA = RobotModel.from_urdf(shipped_urdf("panda.urdf"))
HUGE = "x" * 4_000_000
BOUND = 1000        # characters: a few names, never the input


@pytest.fixture
def no_suggestion_search(monkeypatch):
    def refuse(*_):
        raise AssertionError("difflib searched")
    monkeypatch.setattr(difflib, "get_close_matches", refuse)


def test_a_huge_unknown_name_is_cut_and_gets_no_suggestion_search(no_suggestion_search):
    message = str(UnknownNameError("joint", HUGE, PANDA.joint_names))
    assert len(message) < BOUND and "(4000000 characters)" in message
    with pytest.raises(UnknownNameError) as refused:
        PANDA.joint_index(HUGE)
    assert len(str(refused.value)) < BOUND


def test_too_many_candidates_get_no_suggestion_search(no_suggestion_search):
    known = [f"joint_{i}" for i in range(errors.MAX_SUGGESTION_CANDIDATES + 1)]
    assert "did you mean" not in str(UnknownNameError("joint", "joint_1x", known))


def test_a_short_unknown_name_still_gets_suggestions():
    message = str(UnknownNameError("joint", "panda_joint_7", PANDA.joint_names))
    assert message.startswith("unknown joint 'panda_joint_7'; did you mean 'panda_joint7'")


def test_a_rejected_joint_state_names_a_few_of_its_names():
    """A state naming 300 long names, one twice, or with a NaN for each: refused, and the
    reason quotes eight names cut short and counts the rest."""
    live = LiveModel(RobotModel.from_urdf(shipped_urdf("panda.urdf")), state_timeout=0.05)
    names = [f"{i}_" + "n" * 255 for i in range(300)]
    repeated = live.update_state(names + names[:1], np.zeros(301), np.zeros(301), now=0.0)
    nans = live.update_state(PANDA.joint_names, np.full(7, np.nan), np.zeros(7), now=0.0)
    for update in (repeated, nans):
        assert not update.accepted and len(update.error) < BOUND
    assert "... 293 more]" in repeated.error and "(257 characters)" in repeated.error
    with pytest.raises(InvalidInputError) as refused:
        live.merged_state(names + names[:1], np.zeros(301), np.zeros(301))
    assert len(str(refused.value)) < BOUND


def test_an_unknown_trajectory_column_is_cut_and_gets_no_suggestion_search(
        no_suggestion_search):
    with pytest.raises(InvalidInputError) as refused:
        trajectory_from_arrays(PANDA, [0.0, 1.0], np.zeros((2, 7)),
                               joint_names=[HUGE] + PANDA.joint_names[1:])
    assert len(str(refused.value)) < BOUND


@pytest.mark.parametrize("text, expected", [
    ("short", "short"), ("y" * 20, "y" * 10 + "... (10 more characters)")])
def test_clipped_says_how_much_it_left_out(text, expected):
    assert errors.clipped(text, 10) == expected

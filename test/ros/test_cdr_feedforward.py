"""cdr.FeedforwardMessages: serialized in place, they must read back as the messages."""
import numpy as np
import pytest
from builtin_interfaces.msg import Time
from rclpy.serialization import deserialize_message
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from soa_dynamics_ros.ros import cdr
from soa_dynamics_ros.ros.cdr import FeedforwardMessages


# Name lengths that move the numbers across every alignment of the serialization.
@pytest.mark.parametrize("names", [["j"], ["a", "bb", "ccc"],
                                   [f"panda_joint{i}" for i in range(1, 8)],
                                   [f"{'x' * i}_{i}" for i in range(30)]])
def test_each_fill_reads_back_as_the_feedforward_messages(names):
    messages = FeedforwardMessages(names)
    rng = np.random.default_rng(len(names))
    for sec, nanosec in [(1795665238, 999_999_999), (0, 0), (-5, 7)]:
        effort, position, velocity = rng.normal(size=(3, len(names)))
        array_bytes, state_bytes = messages.fill(effort, position, velocity,
                                                 Time(sec=sec, nanosec=nanosec))
        array = deserialize_message(array_bytes, Float64MultiArray)
        state = deserialize_message(state_bytes, JointState)
        assert list(array.data) == effort.tolist()
        assert [(d.label, d.size, d.stride) for d in array.layout.dim] == \
            [("joints", len(names), len(names))]
        assert array.layout.data_offset == 0
        assert (state.header.stamp.sec, state.header.stamp.nanosec) == (sec, nanosec)
        assert state.header.frame_id == ""
        assert list(state.name) == names
        assert list(state.position) == position.tolist()
        assert list(state.velocity) == velocity.tolist()
        assert list(state.effort) == effort.tolist()


def test_a_fill_does_not_change_the_serializations_given_before():
    messages = FeedforwardMessages(["a", "b"])
    first = messages.fill(np.ones(2), np.ones(2), np.ones(2), Time(sec=1))
    messages.fill(np.zeros(2), np.zeros(2), np.zeros(2), Time(sec=2))
    assert list(deserialize_message(first[1], JointState).effort) == [1.0, 1.0]


@pytest.mark.parametrize("names", [[], ["a", "b"]])
def test_a_serialization_that_cannot_be_filled_in_place_gives_message_objects(names,
                                                                               monkeypatch):
    """No joints (no marker to find), or a middleware laying the numbers out otherwise:
    the messages are published as objects, with the reason."""
    if names:
        monkeypatch.setattr(cdr, "serialize_message",
                            lambda message: b"\0" * 64)     # no marker in it
    messages = FeedforwardMessages(names)
    assert "marker" in messages.serialized_error
    effort, position, velocity = np.arange(3 * len(names), dtype=float).reshape(3, -1)
    array, state = messages.fill(effort, position, velocity, Time(sec=7, nanosec=8))
    assert isinstance(array, Float64MultiArray) and isinstance(state, JointState)
    assert list(array.data) == effort.tolist()
    assert [(d.label, d.size) for d in array.layout.dim] == [("joints", len(names))]
    assert list(state.name) == names and state.header.stamp == Time(sec=7, nanosec=8)
    assert (list(state.position), list(state.velocity), list(state.effort)) == (
        position.tolist(), velocity.tolist(), effort.tolist())

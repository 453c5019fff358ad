"""Hostile joint states against the embedded model's logic: rejected whole, never corrupting."""
import math

import numpy as np

from support.optional import require
from support.robots import shipped_urdf
from soa_dynamics_ros import RobotModel
from soa_dynamics_ros.embedded.live_model import LiveModel

require("hypothesis")
from hypothesis import given, settings, strategies as st  # noqa: E402

MODEL = RobotModel.from_urdf(shipped_urdf("dual_arm_torso.urdf"))
NAMES = MODEL.joint_names + [j.name for j in MODEL.joints if j.mimic_of] + ["stranger", ""]
FLOATS = st.one_of(st.floats(-10, 10), st.sampled_from([math.nan, math.inf, -math.inf, 1e300]))


def _fresh():
    live = LiveModel(RobotModel.from_urdf(shipped_urdf("dual_arm_torso.urdf")), state_timeout=0.05)
    live.update_state(MODEL.joint_names, np.full(MODEL.dof, 0.1), np.zeros(MODEL.dof), now=0.0)
    return live


message = st.tuples(st.lists(st.sampled_from(NAMES), max_size=25),
                    st.lists(FLOATS, max_size=25), st.lists(FLOATS, max_size=25),
                    st.floats(-1.0, 1.0))


@settings(max_examples=300, deadline=None)
@given(st.lists(message, min_size=1, max_size=6))
def test_joint_state_sequences(messages):
    live = _fresh()
    for names, positions, velocities, now in messages:
        before = (live.position.copy(), live.velocity.copy(), live.received_at.copy())
        update = live.update_state(names, positions, velocities, now)
        if not update.accepted:
            assert update.error
            for kept, old in zip((live.position, live.velocity, live.received_at), before):
                np.testing.assert_array_equal(kept, old)
        assert np.all(np.isfinite(live.position)) and np.all(np.isfinite(live.velocity))
        for mode in ("gravity", "inverse_dynamics", "computed_torque"):
            result = live.feedforward(mode, now)
            if result.effort is not None:
                assert np.all(np.isfinite(result.effort))
                assert np.all(np.abs(result.effort) <= live.effort_limits)
            else:
                assert result.reason


def test_time_going_backwards_is_not_fresh_data():
    """Freshness is judged on the node's monotonic clock at arrival, not on message stamps."""
    live = _fresh()
    assert live.feedforward("gravity", 0.01).effort is not None
    assert live.feedforward("gravity", 0.2).effort is None
    assert "older than" in live.feedforward("gravity", 0.2).reason
    live.update_state(MODEL.joint_names[:5], np.zeros(5), [], now=0.2)
    stale = live.stale_joints(0.2)
    assert stale == MODEL.joint_names[5:]
    assert live.feedforward("gravity", 0.2).effort is None


def test_transport_age_sees_delay_beyond_the_fastest_delivery_on_skewed_clocks():
    from soa_dynamics_ros.embedded.live_model import TransportAge
    age = TransportAge(window=10.0)
    skew = 3_000_000_000                 # the publisher's clock 3 s behind
    ms = 1_000_000
    for i in range(100):                 # 0.2-0.5 ms transport
        source = i * ms
        received = source + skew + (200_000 if i % 2 else 500_000)
        assert age.age("a", source, received, received, monotonic=i * 1e-3) <= 0.3e-3 + 1e-12
    source = 200 * ms                    # delivered 80 ms late, then 5 ms in the queue
    received = source + skew + 80 * ms
    assert abs(age.age("a", source, received, received + 5 * ms, monotonic=0.2)
               - (85 * ms - 200_000) * 1e-9) < 1e-9
    # Another publisher with its own clock is judged on its own offset.
    assert age.age("b", 0, 42 * ms, 42 * ms, monotonic=0.2) == 0.0

"""Estimation on the live model, without ROS: external torques, contact, payload identification.

What the node's ``~/external_torque``, ``~/external_wrench``, ``~/contact``
and ``~/identify_payload`` serve, written against plain arrays (the library's
:class:`~soa_dynamics_ros.ExternalTorqueObserver`, ``ContactDetector`` and
``RobotModel.identify_payload`` do the physics; this module feeds them only fresh, accepted, complete
states and keeps the recent samples for identification).

Time: each sample's time is its joint state's stamp (the instant it was
measured), or its arrival when the publisher does not stamp.  The observer
integrates over the stamps' differences: a state with the same stamp as the
last (a republished state) is skipped; a gap longer than ``state_timeout``
restarts the observer, whose integral would otherwise span it; a stamp before
the last (a restarted clock) restarts it and empties the sample buffer.
Effort convention: the effort a state carries is the one applied over
the interval that led to it (what ``soa_dynamics_sim`` and a drive's
averaged current report); identification pairs it with that interval.
"""
from collections import deque
from dataclasses import dataclass
import math

import numpy as np

from ..estimation import ContactDetector, ExternalTorqueObserver
from ..errors import InvalidInputError, UnknownNameError

# The recent samples kept for identification: at most this many (60 s at
# 1 kHz), and none older than the ``identification_buffer_time`` setting.
MAX_BUFFER_SAMPLES = 60_000
# At most this many samples (evenly spread over the requested duration) enter
# one identification, so that ~/identify_payload holds the node no longer
# than the other services' largest requests (README, "Estimation").
MAX_IDENTIFICATION_SAMPLES = 300
# On the numpy path (no compiled kernels) a sample costs well over an order of
# magnitude more (docs/performance.md, "Design measurements").
MAX_IDENTIFICATION_SAMPLES_NUMPY_PATH = 30
IDENTIFIED_PAYLOAD = "identified"


@dataclass
class Estimate:
    """One observer step: external joint torques (model order) at ``position``."""
    torques: np.ndarray
    position: np.ndarray
    wrench: np.ndarray = None        # [f; t] at the wrench frame (None: no frame)
    contact_changed: bool = False


@dataclass
class Identification:
    """A ``~/identify_payload`` answer: the fitted load, and whether it was attached."""
    result: object                   # the library's identification result (.mass, .com, ...)
    samples: int
    applied: bool
    message: str


class LiveEstimation:
    """The observer, contact detector and sample buffer of one model; reconfigurable."""

    def __init__(self, model, gain, thresholds, release_ratio, wrench_frame="",
                 buffer_time=10.0, state_timeout=0.05, subtract_friction=False):
        self.model = model
        self.observer = ExternalTorqueObserver(model, gain=gain, subtract_friction=subtract_friction)
        self.detector = ContactDetector(_thresholds(thresholds, model.dof),
                                        release_ratio=release_ratio)
        self.gain = gain
        self.wrench_frame = wrench_frame
        check_wrench_frame(wrench_frame, model)
        self.buffer_time = float(buffer_time)
        self.state_timeout = float(state_timeout)
        self.samples = deque(maxlen=MAX_BUFFER_SAMPLES)   # (t, q, qd, tau)
        self.contact = False
        self.last_time = -math.inf       # stamp of the last sample used

    def take_over(self, previous):
        """Keep ``previous``'s samples (same joints): a reconfiguration loses no history."""
        if previous.model.joint_names == self.model.joint_names:
            self.samples = previous.samples
            self.last_time = previous.last_time

    def restart(self):
        """The observer starts over (its integral must not span a gap or a model change)."""
        self.observer.reset()
        self.detector.reset()
        self.last_time = -math.inf

    def update(self, q, qd, tau, stamp):
        """The estimate for a fresh, accepted state (model order), or None when none is due.

        None for a repeated stamp, and for the first state after a gap or a
        clock that went back (the observer restarts on it).  A non-finite
        estimate is never returned: the observer restarts instead.
        """
        dt = stamp - self.last_time
        if dt == 0.0:           # the same state again (a sim holding time still republishes it)
            return None
        if dt < 0.0:            # the clock went back (a restarted sim): a new history
            self.samples.clear()
            dt = math.inf
        self.samples.append((stamp, q.copy(), qd.copy(), tau.copy()))
        while self.samples and self.samples[0][0] < stamp - self.buffer_time:
            self.samples.popleft()
        self.last_time = stamp
        if dt > self.state_timeout:
            # The first state, or the first after a gap: the observer starts from it.
            self.observer.reset()
            self.detector.reset()
            self.observer.update(q, qd, tau, self.state_timeout)
            return None
        torques = self.observer.update(q, qd, tau, dt)
        wrench = self.observer.external_wrench(q, self.wrench_frame) if self.wrench_frame else None
        if not (np.all(np.isfinite(torques)) and (wrench is None or np.all(np.isfinite(wrench)))):
            self.restart()
            return None
        contact = bool(self.detector.update(torques))
        changed, self.contact = contact != self.contact, contact
        return Estimate(np.array(torques, dtype=float), q.copy(), wrench, changed)

    # ------------------------------------------------------------------ identification
    def recent(self, duration):
        """(t, Q, QD, TAU) of the samples of the last ``duration`` seconds; refusals name why not."""
        if not (math.isfinite(duration) and duration > 0.0):
            raise InvalidInputError(f"duration must be a positive number of seconds, not {duration}")
        if duration > self.buffer_time:
            raise InvalidInputError(f"duration {duration:g} s is longer than the "
                                    f"{self.buffer_time:g} s of samples kept "
                                    "(identification_buffer_time)")
        rows = list(self.samples)
        if not rows:
            raise InvalidInputError("no samples yet: joint_states with effort for every joint "
                                    "are needed")
        full = len(rows) == self.samples.maxlen
        end = rows[-1][0]
        rows = [row for row in rows if row[0] >= end - duration]
        kept = end - rows[0][0]
        if kept < 0.9 * duration:
            if full:
                # More time will not help: at this state rate the count bound, not
                # identification_buffer_time, decides how far back the samples go.
                raise InvalidInputError(
                    f"only {kept:.3f} s of samples are kept at this joint-state rate (at most "
                    f"{self.samples.maxlen} states, {(len(rows) - 1) / kept:.0f} per s), "
                    f"{duration:g} s requested")
            raise InvalidInputError(f"only {kept:.3f} s of samples are kept yet, "
                                    f"{duration:g} s requested")
        return (np.array([row[0] for row in rows]), np.array([row[1] for row in rows]),
                np.array([row[2] for row in rows]), np.array([row[3] for row in rows]))

    def identify(self, link, duration, apply=False, name=IDENTIFIED_PAYLOAD):
        """Fit the load on ``link`` to the last ``duration`` s; attach it as ``name`` if asked.

        A payload already attached under ``name`` is left out of the fit (the
        result replaces it, so it must be the whole load); others stay, as
        known loads.  Nothing is attached when the fit is refused or not
        physically plausible.
        """
        if link not in self.model.frame_names:
            raise UnknownNameError("link", link, self.model.frame_names)
        name = name or IDENTIFIED_PAYLOAD
        compiled = self.model.kernels[1] is not None
        times, *samples = self.recent(duration)
        Q, QD, QDD, TAU = identification_samples(
            times, *samples, self.state_timeout,
            MAX_IDENTIFICATION_SAMPLES if compiled else MAX_IDENTIFICATION_SAMPLES_NUMPY_PATH)
        previous = self.model.payloads.get(name)
        if previous is not None:
            self.model.detach_payload(name)
        try:
            result = self.model.identify_payload(link, Q, QD, QDD, TAU)
        finally:
            if previous is not None:
                self.model.attach_payload(name, *previous)
        problems = result.problems
        applied = False
        if apply and not problems:
            result.apply(self.model, name)
            self.restart()          # the momentum jumps with the model's inertia
            applied = True
        message = (f"{result.mass:.4g} kg at {np.round(result.com, 4).tolist()} m on {link!r} "
                   f"from {len(Q)} samples over the last {times[-1] - times[0]:.3f} s"
                   + (f"; attached as payload {name!r}" if applied else "")
                   + (f"; not attached: {'; '.join(problems)}" if apply and problems else "")
                   + (f"; physically implausible: {'; '.join(problems)}" if problems and not apply
                      else ""))
        return Identification(result, len(Q), applied, message)


def identification_samples(t, Q, QD, TAU, max_gap, max_samples):
    """(Q, QD, QDD, TAU) for identification from consecutive samples; no acceleration measured.

    Each interval k -> k+1 gives one row: the state at k, the acceleration
    ``(qd[k+1] - qd[k]) / (t[k+1] - t[k])`` and the effort reported at k+1,
    the one applied over that interval.  With a semi-implicit Euler plant
    (MuJoCo's default) this is exact.  Intervals longer than ``max_gap``
    (restarts, lost states) are left out; at most ``max_samples`` rows,
    evenly spread.
    """
    dt = np.diff(t)
    keep = np.flatnonzero((dt > 0.0) & (dt <= max_gap))
    if keep.size > max_samples:
        keep = keep[np.linspace(0, keep.size - 1, max_samples).round().astype(int)]
    QDD = (QD[keep + 1] - QD[keep]) / dt[keep, None]
    return Q[keep], QD[keep], QDD, TAU[keep + 1]


def check_wrench_frame(frame, model):
    if frame and frame not in model.frame_names:
        raise InvalidInputError(f"parameter 'external_wrench_frame': robot {model.name!r} has no "
                                f"frame {frame!r}")


def _thresholds(values, dof):
    """Contact thresholds [N m or N]: one for every joint, or one per joint (model order)."""
    values = np.asarray(values, dtype=float)
    if values.size == 1:
        return np.full(dof, values.item())
    if values.size != dof:
        raise InvalidInputError(f"parameter 'contact_thresholds': {values.size} values for "
                                f"{dof} joints (give one for all, or one per joint)")
    return values

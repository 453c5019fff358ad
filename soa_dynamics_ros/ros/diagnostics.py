"""The node's /diagnostics: counters gathered over one period, and the status they make."""
import time

from . import conversions


class Statistics:
    """Counters for one diagnostics period."""

    def __init__(self):
        self.joint_states = self.published = self.clamped = self.rejected = self.services = 0
        self.withheld = self.stale_dropped = self.rejected_commands = 0
        self.compute_total = self.max_compute = self.service_time = 0.0
        self.compute_count = 0
        self.clamped_joints, self.last_rejection, self.withheld_reason = [], "", ""
        self.last_command_rejection = ""
        self.trajectories = self.rejected_trajectories = 0
        self.last_trajectory_rejection = ""
        self.estimates = self.rejected_efforts = 0
        self.last_effort_rejection = ""
        self.base_odometry = self.rejected_odometry = 0
        self.last_odometry_rejection = ""
        self.gc_pause_max, self.gc_pause_generation = 0.0, -1    # the serving thread's longest

    def record_compute(self, seconds):
        self.compute_total += seconds
        self.compute_count += 1
        self.max_compute = max(self.max_compute, seconds)

    def mean_compute_us(self):
        return 1e6 * self.compute_total / self.compute_count if self.compute_count else 0.0

    def take(self):
        """This period's figures, resetting the counters (the last rejection stays)."""
        taken = Statistics()
        taken.__dict__.update(self.__dict__)
        last_rejection = self.last_rejection
        self.__init__()
        self.last_rejection = last_rejection
        return taken


def estimation_status(host, now):
    """The estimator: "on (...)" with the observer's gain, or "off: <why>" (joint_states without effort, ...)."""
    reason = host.estimation_off(now)
    if reason:
        return f"off: {reason}"
    estimation = host.estimation
    return (f"on: observer gain {estimation.gain:g} 1/s (estimate = true external torque "
            f"low-pass filtered, time constant {1e3 / estimation.gain:.3g} ms)"
            + (f", wrench at {estimation.wrench_frame!r}" if estimation.wrench_frame else ""))


def model_status(name, host, stats, period, stamp):
    """The DiagnosticArray of one period of an embedded.ModelHost (``stats`` taken for it)."""
    live, mode = host.live, host.config["feedforward_mode"]
    values = {"feedforward_mode": mode, "description_error": host.description_error,
              "estimation": estimation_status(host, time.monotonic()),
              "gc_pause_max_ms": f"{stats.gc_pause_max * 1e3:.1f}",
              "gc_pause_max_generation": str(stats.gc_pause_generation)}
    if live is None:
        return conversions.diagnostics(
            name, "", "error", "no robot model loaded" + (
                f": {host.description_error}" if host.description_error else ""), values, stamp)
    now = time.monotonic()
    age = live.state_age(now)
    values.update({
        "model": live.model.name, "joints": str(len(live.model.joint_names)),
        "joint_state_rate_hz": f"{stats.joint_states / period:.1f}",
        "joint_state_age_s": "never received" if age == float("inf") else f"{age:.4f}",
        "feedforward_published": str(stats.published),
        "feedforward_withheld": str(stats.withheld),
        "withheld_reason": stats.withheld_reason,
        "stale_joint_states_dropped": str(stats.stale_dropped),
        "feedforward_compute_mean_us": f"{stats.mean_compute_us():.1f}",
        "feedforward_compute_max_us": f"{stats.max_compute * 1e6:.1f}",
        "clamped_messages": str(stats.clamped),
        "clamped_joints": ", ".join(stats.clamped_joints),
        "rejected_joint_states": str(stats.rejected),
        "last_rejection": stats.last_rejection,
        "rejected_commands": str(stats.rejected_commands),
        "last_command_rejection": stats.last_command_rejection,
        "trajectories_annotated": str(stats.trajectories),
        "rejected_trajectories": str(stats.rejected_trajectories),
        "last_trajectory_rejection": stats.last_trajectory_rejection,
        "services_answered": str(stats.services),
        "kernels": host.kernels_status(),
        "payloads": ", ".join(f"{n} ({p[1]} kg on {p[0]})" for n, p in live.model.payloads.items()),
        "external_torques_published": str(stats.estimates),
        "contact": str(host.estimation.contact) if host.estimation is not None else "",
        "rejected_efforts": str(stats.rejected_efforts),
        "last_effort_rejection": stats.last_effort_rejection,
    })
    if live.floating_base:
        values.update({"base_odometry_rate_hz": f"{stats.base_odometry / period:.1f}",
                       "rejected_base_odometry": str(stats.rejected_odometry),
                       "last_base_odometry_rejection": stats.last_odometry_rejection})
    stale = live.stale_joints(now)
    problems = []
    if mode != "off" and stale:
        problems.append(f"feedforward stopped: no joint state for {stale[:4]}"
                        f"{'...' if len(stale) > 4 else ''} within {live.state_timeout} s")
    if mode != "off" and stats.withheld:
        problems.append(f"feedforward withheld for {stats.withheld} joint state(s): "
                        f"{stats.withheld_reason}")
    if stats.clamped:
        problems.append("feedforward clamped to effort limits")
    if stats.rejected:
        problems.append(f"joint states rejected: {stats.last_rejection}")
    if stats.rejected_efforts:
        problems.append(f"joint_states efforts not used: {stats.last_effort_rejection}")
    if stats.rejected_commands:
        problems.append(stats.last_command_rejection)
    if stats.rejected_trajectories:
        problems.append(stats.last_trajectory_rejection)
    if stats.rejected_odometry:
        problems.append(stats.last_odometry_rejection)
    if host.description_error:
        problems.append(host.description_error)
    return conversions.diagnostics(name, live.model.name, "warn" if problems else "ok",
                                   "; ".join(problems) or "model live", values, stamp)

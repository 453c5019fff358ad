"""The LiveModel a node serves, across description reloads and kernel warm-ups; ROS-free.

The host owns what outlives one LiveModel: the description loader, the
kernel warm-up child, the state and payloads carried into a reloaded model,
and whether feedforward must wait for compiled kernels.  Its settings are a
dict of the node's validated parameters (:mod:`soa_dynamics_ros.ros.parameters`
names and checks them); it reports through a logger with ``info``,
``warning`` and ``error`` methods (an rclpy or a ``logging`` logger).
"""
import os
import time

from .. import kernels
from ..description.urdf import parse_urdf_xml, read_description_text
from ..errors import InvalidInputError, SoaDynamicsError, URDFError, XacroRefusedError
from ..model.floating_base import FloatingBaseModel
from ..model.robot_model import KERNELS_ENV, RobotModel
from .description_loader import DescriptionLoader
from .estimation import LiveEstimation
from .live_model import FLOATING_BASE_MODES, Feedforward, LiveModel, require_moving_joints
from .warmup import BackgroundWarmup

# Settings a new LiveModel is built for (the model itself stays).
LIVE_SETTINGS = {"feedforward_mode", "command_joints", "state_timeout", "effort_limit_scale",
                 "gravity", "computed_torque_kp", "computed_torque_kd",
                 "robot_compensates_gravity", "feedforward_ramp_time", "contact_frames"}
DESCRIPTION_SETTINGS = {"robot_description", "urdf_file"}
# Settings a new LiveEstimation is built for (its samples stay).
ESTIMATION_SETTINGS = {"observer_gain", "contact_thresholds", "contact_release_ratio",
                       "external_wrench_frame", "identification_buffer_time", "state_timeout",
                       "subtract_friction"}
# At most one "feedforward withheld" line per this many seconds.
WITHHELD_LOG_PERIOD = 2.0
# Of a refused description's reason in the log and /diagnostics.
MAX_DESCRIPTION_ERROR_CHARS = 1000

# Where a description came from decides what it may do (docs/robustness.md, "Trust").
STARTUP = "start-up"       # the operator's parameters: a file path or XML; xacro expanded
RUNTIME = "runtime"        # a parameter changed over ROS: a path or XML; xacro only if allowed
TOPIC = "topic"            # anyone on the ROS domain: URDF XML, never a path; xacro only if allowed
EXPANDED = "expanded"      # this process's own expansion: URDF taken as it is

# The most <link> elements a served description may have (robots have hundreds at
# most; docs/robustness.md).  Counted in the text before anything is parsed: a model's
# Python objects grow with its links, and the cyclic garbage collector holds the GIL
# while it scans them, a pause of the serving thread that grows with the description;
# the generic module's model takes about 32 bytes x links^2.
MAX_DESCRIPTION_LINKS = 4000


def description_from(config):
    """The robot description the settings give (XML text or a file path), or None."""
    for name in ("robot_description", "urdf_file"):
        if config[name].strip():
            return config[name]
    return None


def check_description_size(xml):
    """URDFError when ``xml`` (URDF text) has more than MAX_DESCRIPTION_LINKS ``<link`` tags.

    A plain count of the text, so that a huge description is refused before it is
    parsed; tags in comments count too (a description that large is refused either way)."""
    links = xml.count("<link")
    if links > MAX_DESCRIPTION_LINKS:
        raise URDFError(f"the robot description has {links} <link> tags; at most "
                        f"{MAX_DESCRIPTION_LINKS} are served")


def build_model(description, floating_base):
    """The model of a parsed description (kernels off: the host chooses them): with a free
    base when ``floating_base``; a description whose root hangs from a ``floating`` joint
    is a floating-base robot already, and refused unless ``floating_base`` says so."""
    if description.free_root_joint is not None and not floating_base:
        raise InvalidInputError(
            f"robot {description.name!r} hangs from the world by its floating joint "
            f"{description.free_root_joint!r}: serve it with the parameter floating_base true")
    if floating_base:
        return FloatingBaseModel(description, kernels="off")
    return RobotModel(description, kernels="off")


def check_floating_base_settings(model, config):
    """InvalidInputError when the feedforward settings do not fit the model's base."""
    mode = config["feedforward_mode"]
    if not isinstance(model, FloatingBaseModel):
        if mode == "whole_body_gravity":
            raise InvalidInputError("feedforward_mode 'whole_body_gravity' needs a floating-base "
                                    "robot (parameter floating_base true)")
        return
    if mode not in FLOATING_BASE_MODES:
        raise InvalidInputError(f"feedforward_mode {mode!r} is not served for floating-base "
                                f"robots; one of {', '.join(FLOATING_BASE_MODES)}")
    if config["robot_compensates_gravity"]:
        raise InvalidInputError("robot_compensates_gravity is not served for floating-base robots")
    for frame in config["contact_frames"]:
        if frame not in model.frame_names:
            raise InvalidInputError(f"parameter 'contact_frames': robot {model.name!r} has no "
                                    f"frame {frame!r}")
    if mode == "whole_body_gravity" and not config["contact_frames"]:
        raise InvalidInputError("feedforward_mode 'whole_body_gravity' needs contact_frames "
                                "(the frames the robot stands on)")


def check_marker_frame(frame, model):
    if frame and frame not in model.frame_names:
        raise InvalidInputError(f"parameter 'marker_frame': robot {model.name!r} has no frame "
                                f"{frame!r}")


class ModelHost:
    """Serves one LiveModel at a time; call :meth:`poll` periodically from the serving thread.

    ``startup_payloads()`` gives the payloads attached to the first model,
    as ``attach_payload`` keyword dicts; it is called once that model is built.
    """

    def __init__(self, config, logger, startup_payloads=list):
        self.config = config
        self.live = None
        self.estimation = None             # embedded.estimation.LiveEstimation of live.model
        self.estimation_error = ""         # why the settings give no estimation for this model
        self.description_error = ""        # why the newest description was refused
        self.awaiting_kernels = False      # compiling, or loading them once compiled
        self._logger = logger
        self._startup_payloads = startup_payloads
        self._warmup = None
        self._warmup_target = None         # (model, URDF XML) the running warm-up is for
        self._withholding = False
        self._withheld_logged_at = -float("inf")
        self._loader = DescriptionLoader(lambda request: self.load(*request))

    # ------------------------------------------------------------------ loading
    def _kernels_wanted(self):
        return (self.config["kernels"] != "off" and os.environ.get(KERNELS_ENV) != "off"
                and kernels.compiler_available())

    def load(self, description, origin):
        """(model, warm-up) of a description; runs in the loader thread, so it changes nothing here.

        ``origin`` (STARTUP, RUNTIME, TOPIC or EXPANDED) decides whether it may
        be a file path and whether xacro may expand it.

        Kernels only by explicit choice: the library's own "auto" would
        compile inside this process, holding the GIL for seconds.  Cached
        kernels are loaded here; otherwise the warm-up (XML, frames) says what
        a child process must compile first.  Meanwhile the generic compiled
        module answers when it is cached (``scripts/setup.sh`` builds it): a
        robot the machine never saw is served compiled code from its first
        state; without it, feedforward waits for the child (:meth:`feedforward`).
        """
        config = self.config
        # Expanded once, here: the warm-up child and the kernel-cache reload
        # get plain URDF and need neither package_paths nor xacro again.
        xml = description if origin == EXPANDED else self._description_text(description, origin)
        check_description_size(xml)
        model = build_model(parse_urdf_xml(xml), config["floating_base"])
        require_moving_joints(model)
        if not self._kernels_wanted():
            return model, None
        frames = [f for f in [config["marker_frame"]] if f in model.frame_names]
        # kernels.set_mode("c") builds the generic module when it is not in the cache: only the
        # warm-up child may compile.
        if kernels.generic_cached():
            model.kernels.set_mode("c")
            if model.kernels.cached(frames, derivatives=False, wrenches=False):
                model.kernels.prepare(frames, derivatives=False, wrenches=False)
                return model, None
            model.kernels.set_mode("generic")
        return model, (xml, frames)

    def _description_text(self, description, origin):
        config = self.config
        allow_xacro = origin == STARTUP or config["allow_runtime_xacro"]
        try:
            return read_description_text(description, config["package_paths"],
                                         config["xacro_timeout"], allow_xacro=allow_xacro,
                                         allow_path=origin != TOPIC)
        except XacroRefusedError as error:
            raise XacroRefusedError(
                f"{error}; a description that arrives while the node runs is expanded only "
                "with the parameter allow_runtime_xacro true (its risk: docs/robustness.md, "
                "'Trust')") from None

    def load_now(self, description, source):
        """Load and install a description in this thread; SoaDynamicsError if it cannot serve.

        For start-up, when nothing is served yet and a bad description
        should end the process.
        """
        started = time.perf_counter()
        model, warmup = self.load(description, STARTUP)
        check_marker_frame(self.config["marker_frame"], model)
        live = self.build_live(model, self.config)
        estimation = self.build_estimation(model, self.config)
        self._install(live, source, time.perf_counter() - started)
        self.estimation = estimation
        self._start_warmup(model, warmup)

    def request(self, description, source, origin=TOPIC):
        """Load a description in the background; the current model serves until it is ready.

        ``origin``: see :meth:`load`; unsaid, the least trusted, TOPIC.
        """
        self._loader.request((description, origin), source)

    def reconfigure(self, config, changed):
        """Serve with new settings (``changed``: the names that changed); checked completely first.

        A new description is only requested here (see :meth:`request`); any
        other refused setting raises SoaDynamicsError with nothing changed.
        """
        live = description = estimation = None
        if DESCRIPTION_SETTINGS & changed:
            description = description_from(config)
            if description is None:
                raise InvalidInputError("robot_description and urdf_file cannot both be empty")
        elif self.live is not None:
            check_marker_frame(config["marker_frame"], self.live.model)
            if ESTIMATION_SETTINGS & changed:
                estimation = self.build_estimation(self.live.model, config)
            if LIVE_SETTINGS & changed:
                live = self.build_live(self.live.model, config)
        self.config = config
        if description is not None:
            self.request(description, "parameters", RUNTIME)
        if live is not None:
            self._install(live)
        if estimation is not None:
            self.estimation, self.estimation_error = estimation, ""

    def build_live(self, model, config):
        """A LiveModel configured from ``config``; raises before the (possibly shared) model is touched."""
        check_floating_base_settings(model, config)
        live = LiveModel(model, config["state_timeout"], config["command_joints"],
                         config["effort_limit_scale"])
        live.contacts = [(frame, "point") for frame in config["contact_frames"]]
        live.gains = (config["computed_torque_kp"], config["computed_torque_kd"])
        live.robot_compensates_gravity = config["robot_compensates_gravity"]
        live.ramp_time = config["feedforward_ramp_time"]
        if self.live is None:
            for payload in self._startup_payloads():
                model.attach_payload(**payload)
                self._logger.info(f"payload {payload['name']!r} attached from parameters")
        else:
            old = self.live
            if model is not old.model:
                # The payloads that still fit the new model go with it.
                for name, (link, mass, com, inertia) in old.model.payloads.items():
                    if link in model.frame_names:
                        model.attach_payload(name, link, mass, com, inertia)
                    else:
                        self._logger.warning(f"payload {name!r} dropped: the new model has no "
                                             f"link {link!r}")
            live.take_over(old)
        model.gravity = config["gravity"]
        return live

    def build_estimation(self, model, config):
        """A LiveEstimation of ``model`` from ``config`` (keeping the current one's samples);
        SoaDynamicsError, with nothing changed, when the settings do not fit the model.
        None for a floating-base robot (not estimated yet; estimation_off says so)."""
        if isinstance(model, FloatingBaseModel):
            return None
        estimation = LiveEstimation(model, config["observer_gain"], config["contact_thresholds"],
                                    config["contact_release_ratio"],
                                    config["external_wrench_frame"],
                                    config["identification_buffer_time"], config["state_timeout"],
                                    config["subtract_friction"])
        if self.estimation is not None:
            estimation.take_over(self.estimation)
        return estimation

    def _install(self, live, source=None, seconds=None):
        self.live = live
        if source is not None:
            model = live.model
            self._logger.info(
                f"robot model {model.name!r} loaded from {source} in {seconds * 1e3:.0f} ms: "
                f"{len(model.joint_names)} joints ({', '.join(model.joint_names)})"
                f"{' on a free base' if live.floating_base else ''}, {len(model.frame_names)} "
                f"frames, {model.total_mass:.2f} kg")

    def _install_loaded(self, loaded):
        """Install a loaded description, or report why it was refused."""
        try:
            if loaded.error:
                raise SoaDynamicsError(loaded.error)
            live = self.build_live(loaded.model, self.config)
        except SoaDynamicsError as error:
            keeping = "keeping the previous model" if self.live else "no model loaded"
            reason = str(error)
            if len(reason) > MAX_DESCRIPTION_ERROR_CHARS:
                reason = f"{reason[:MAX_DESCRIPTION_ERROR_CHARS]}... ({len(reason)} characters)"
            self.description_error = f"robot description from {loaded.source} refused: {reason}"
            self._logger.error(f"{self.description_error} ({keeping})")
            return
        self.description_error = ""
        try:
            estimation, self.estimation_error = self.build_estimation(loaded.model, self.config), ""
        except SoaDynamicsError as error:    # e.g. external_wrench_frame not in the new robot
            estimation, self.estimation_error = None, str(error)
            self._logger.warning(f"estimation off for {loaded.model.name!r}: {error}")
        self._install(live, loaded.source, loaded.seconds)
        self.estimation = estimation
        frame = self.config["marker_frame"]
        if frame and frame not in loaded.model.frame_names:
            self._logger.warning(f"marker_frame {frame!r} is not a frame of "
                                 f"{loaded.model.name!r}: no inertia marker")
        self._start_warmup(loaded.model, loaded.warmup)

    # ------------------------------------------------------------------ kernel warm-up
    def _start_warmup(self, model, warmup):
        """Compile this robot's kernels in a child process; the model is reloaded with them after."""
        if self._warmup is not None:
            self._warmup.stop()
            self._warmup = None
        # Only the numpy path is too slow to feed forward; the generic module is not.
        self.awaiting_kernels = warmup is not None and model.kernels[1] is None
        if warmup is None:
            return
        xml, frames = warmup
        self._warmup = BackgroundWarmup(xml, frames, isinstance(model, FloatingBaseModel))
        self._warmup_target = (model, xml)
        meanwhile = ("the numpy path answers queries meanwhile, feedforward waits"
                     if self.awaiting_kernels else "the generic compiled module answers meanwhile")
        self._logger.info("compiling the kernels of this robot in a child process (seconds, "
                          f"once per robot); {meanwhile}")

    def poll(self):
        """Install a finished description load; after a finished warm-up, reload with the kernels."""
        loaded = self._loader.take_finished()
        if loaded is not None:
            self._install_loaded(loaded)
        if self._warmup is None:
            return
        outcome = self._warmup.poll()
        if outcome is None:
            return
        code, log = outcome
        self._warmup = None
        model, xml = self._warmup_target
        if code != 0:
            self.awaiting_kernels = False
            self._logger.error(f"kernel compilation failed (exit {code}); staying on the "
                               f"numpy path:\n{log}")
        elif self.live is not None and self.live.model is model:
            # Loading the now cached kernels is itself work for the loader thread.
            self.request(xml, "the kernel cache (compiled kernels in use)", EXPANDED)

    @property
    def background_work(self):
        """A description load or kernel warm-up whose end poll() has yet to take."""
        return self._warmup is not None or not self._loader.idle

    def kernels_status(self):
        mode, backend = self.live.model.kernels if self.live is not None else ("off", None)
        compiling = " (this robot's kernels compiling)" if self._warmup else ""
        if backend is None:
            return "numpy path" + (" (kernels compiling)" if self._warmup else "")
        # (generic without a warm-up: compiled, the reload with them is on its way)
        return "generic compiled module" + compiling if mode == "generic" else "compiled"

    # ------------------------------------------------------------------ feedforward
    def feedforward(self, now):
        """The feedforward for the latest state (a model is live); None when feedforward_mode is off.

        Withheld while compiled code is on its way and only the numpy path
        could answer (no generic module cached): the numpy path fell
        behind at 1 kHz, and the sim saw gaps of many cycles right
        after its first command; a sim that waits for the first command holds
        still until the kernels are in.
        """
        mode = self.config["feedforward_mode"]
        if mode == "off":
            return None
        if self.awaiting_kernels:
            return Feedforward(reason="compiled kernels not ready yet")
        started = time.perf_counter()
        result = self.live.feedforward(mode, now)
        result.seconds = time.perf_counter() - started
        return result

    # ------------------------------------------------------------------ estimation
    def estimation_off(self, now):
        """Why no external torque is estimated now ("" while it is)."""
        if self.live is None:
            return "no robot model loaded"
        if not self.config["estimation"]:
            return "parameter estimation is false"
        if self.estimation is None:
            return self._why_no_estimation()
        missing = self.live.effortless_joints(now)
        if missing:
            return (f"joint_states carry no effort for {missing[:4]}{'...' if len(missing) > 4 else ''}"
                    f" (none within state_timeout {self.live.state_timeout} s)")
        return self._estimation_kernels()

    def _why_no_estimation(self):
        """Why there is no LiveEstimation of the live model."""
        if self.live.floating_base:
            return "not estimated on floating-base robots yet"
        return self.estimation_error

    def _estimation_kernels(self):
        """Why the observer cannot run at the joint-state rate yet ("" when it can).

        Its C^T qd has no compiled path but the robot's own kernels: numpy's
        would take most of a 1 kHz cycle, held before the next state's feedforward.
        """
        mode, backend = self.live.model.kernels
        if mode == "c":
            return ""
        if self._warmup is not None or backend is not None:   # (generic: their reload is on its way)
            return "this robot's compiled kernels not ready yet"
        return "no compiled kernels (kernels off or no C compiler): too slow for the joint-state rate"

    def estimate(self, stamp, now):
        """The estimate for the latest state (an Estimate), or None when none may be made.

        Only from a state whose every joint, positions and efforts, was measured
        within ``state_timeout``, and only with this robot's own compiled kernels
        (:meth:`_estimation_kernels`).
        """
        live, estimation = self.live, self.estimation
        if estimation is None or not self.config["estimation"] or self._estimation_kernels():
            return None
        timeout = live.state_timeout
        if now - live.received_at.min() > timeout or now - live.effort_received_at.min() > timeout:
            return None
        return estimation.update(live.position, live.velocity, live.effort, stamp)

    def identify_payload(self, link, duration, apply, name):
        """``LiveEstimation.identify`` of the current model; SoaDynamicsError when estimation is off."""
        if self.live is None:
            raise InvalidInputError("estimation is off: no robot model loaded")
        reason = self._why_no_estimation() if self.estimation is None else self._estimation_kernels()
        if reason:
            raise InvalidInputError(f"estimation is off: {reason}")
        return self.estimation.identify(link, duration, apply, name)

    def withhold(self, reason, now):
        """Log (at most once per WITHHELD_LOG_PERIOD) that a state got no feedforward, and why."""
        if now - self._withheld_logged_at >= WITHHELD_LOG_PERIOD:
            self._withheld_logged_at = now
            self._logger.warning(f"feedforward withheld: {reason}")
        self._withholding = True
        if self.live is not None:
            self.live.interrupt()

    def resume(self):
        """Log once that feedforward flows again after being withheld."""
        if self._withholding:
            self._logger.info("feedforward resumed")
            self._withholding = False
            self._withheld_logged_at = -float("inf")

    def close(self):
        self._loader.close()
        if self._warmup is not None:
            self._warmup.stop()

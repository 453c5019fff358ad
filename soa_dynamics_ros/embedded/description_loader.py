"""Robot descriptions loaded in a worker thread, so that the thread serving the model never waits."""
import threading
import time
from dataclasses import dataclass

from ..errors import SoaDynamicsError
from ..model.robot_model import RobotModel


@dataclass
class LoadedDescription:
    """What the loader thread made of a description (``error`` set when it failed)."""
    source: str
    model: RobotModel = None
    warmup: tuple = None            # (URDF XML, frames) when the kernels must be compiled first
    error: str = ""
    seconds: float = 0.0


class DescriptionLoader:
    """Loads robot descriptions in a worker thread, so the executor thread never waits for one.

    Parsing, xacro expansion and loading cached kernels take milliseconds to
    seconds (unbounded for a hostile xacro); meanwhile the installed model
    keeps serving.  Only the newest request counts: a request waiting when a
    newer one arrives is dropped unstarted, and a load that finishes after a
    newer request was made is discarded.
    """

    def __init__(self, load):
        self._load = load                 # description -> (model, warmup); runs in the worker
        self._condition = threading.Condition()
        self._generation = 0
        self._pending = None              # (generation, description, source)
        self._finished = None             # (generation, LoadedDescription)
        self._taken = 0                   # the generation whose outcome take_finished returned
        self._closed = False
        threading.Thread(target=self._run, name="description-loader", daemon=True).start()

    def request(self, description, source):
        with self._condition:
            self._generation += 1
            self._pending = (self._generation, description, source)
            self._condition.notify()

    def take_finished(self):
        """The newest request's outcome once it is ready, else None."""
        with self._condition:
            finished, self._finished = self._finished, None
            if finished is None or finished[0] != self._generation:
                return None
            self._taken = finished[0]
            return finished[1]

    @property
    def idle(self):
        """No request whose outcome take_finished has yet to return."""
        with self._condition:
            return self._taken == self._generation

    def close(self):
        # The worker is not joined: a load can run for as long as a hostile
        # description makes it; the daemon thread ends with the process.
        with self._condition:
            self._closed = True
            self._condition.notify()

    def _run(self):
        while True:
            with self._condition:
                while self._pending is None and not self._closed:
                    self._condition.wait()
                if self._closed:
                    return
                generation, description, source = self._pending
                self._pending = None
            started = time.perf_counter()
            try:
                model, warmup = self._load(description)
                loaded = LoadedDescription(source, model, warmup)
            except SoaDynamicsError as error:
                loaded = LoadedDescription(source, error=str(error))
            except Exception as error:  # noqa: BLE001 - any description must leave the loader alive
                loaded = LoadedDescription(source, error=f"internal error: {type(error).__name__}: "
                                                         f"{error}")
            loaded.seconds = time.perf_counter() - started
            with self._condition:
                if generation == self._generation:
                    self._finished = (generation, loaded)

"""Structure-specialized compiled kernels.

Per robot, :mod:`.generator` traces the reference recursions into
straight-line C; :mod:`.build` compiles it with the system C compiler into an
extension module in an on-disk cache and imports it.  Names of the compiled
modules are hashes of the model structure, of the source of the recursions,
the tracer and the generator, and of the toolchain: a node restart finds them
and loads instead of compiling; a change to the physics code, to the robot's
structure or to the compiler gives a new name.  Inertias (payloads) and
gravity are inputs of the kernels, so they never force new code.

The cache directory is ``$SOA_DYNAMICS_CACHE/kernels`` or
``~/.cache/soa_dynamics_ros/kernels``.
"""
import hashlib
import logging
import os
import pathlib
import sys
import threading
import time

from . import build, generator

logger = logging.getLogger("soa_dynamics_ros.kernels")

BACKENDS = ("c",)
_SOURCES = ("symbolic.py", "generator.py", "build.py", "runtime.h", "../spatial.py", "../tree.py",
            "../algorithms/kinematics.py", "../algorithms/inverse_dynamics.py",
            "../algorithms/mass_matrix.py", "../algorithms/articulated_body.py",
            "../algorithms/task_space.py")
_lock = threading.Lock()


def compiler_available():
    """Whether kernels can be compiled here (see :func:`build.toolchain_problem`)."""
    return build.toolchain_problem() is None


def default_backend():
    """The backend ``kernels="auto"`` picks: ``"c"`` when a compiler is there, else none."""
    return "c" if compiler_available() else None


def cache_dir():
    root = os.environ.get("SOA_DYNAMICS_CACHE")
    path = pathlib.Path(root) if root else pathlib.Path.home() / ".cache" / "soa_dynamics_ros"
    return path / "kernels"


_CODE_VERSION = None


def code_version():
    """Hash of the code the compiled kernels are derived from, and of the toolchain."""
    global _CODE_VERSION
    if _CODE_VERSION is None:
        digest = hashlib.sha256(build.toolchain_id().encode())
        here = pathlib.Path(__file__).resolve().parent
        for name in _SOURCES:
            digest.update((here / name).read_bytes())
        _CODE_VERSION = digest.hexdigest()[:12]
    return _CODE_VERSION


def _module_name(kind, key):
    return f"soa_kernels_{kind}_{code_version()}_{key}"


def _load_module(kind, key, make_source, label):
    """The compiled module ``make_source(module_name)`` describes: imported, built first if needed.

    Returns ``(module, seconds, compiled)``.
    """
    name = _module_name(kind, key)
    with _lock:
        if name in sys.modules:
            return sys.modules[name], 0.0, False
        started = time.perf_counter()
        directory = cache_dir()
        path = directory / f"{name}{build.EXTENSION}"
        compiled = not path.exists()
        if compiled:
            logger.info("generating and compiling %s kernels for %s (a few seconds)", kind, label)
            source, _, stats = make_source(name)
            traced = time.perf_counter()
            build.build(source, name, directory)
            logger.info("compiled %s kernels for %s in %.2f s (tracing %.2f s): %s", kind, label,
                        time.perf_counter() - started, traced - started,
                        "; ".join(f"{k} {v['mul']} mul {v['add'] + v['sub']} add"
                                  for k, v in stats.items()))
        module = build.load(name, path)
        sys.modules[name] = module
        seconds = time.perf_counter() - started
        if not compiled:
            logger.info("%s kernels for %s loaded from cache in %.3f s", kind, label, seconds)
        return module, seconds, compiled


class Kernels:
    """The compiled kernels of one robot: one module for the model, one per task-space frame.

    Each module is built (or loaded from the cache) the first time one of its
    kernels is asked for, with a log line before and after.
    """

    def __init__(self, tree, backend="c", name="robot"):
        if backend not in BACKENDS:
            raise ValueError(f"unknown kernel backend {backend!r}; expected one of {BACKENDS}")
        problem = build.toolchain_problem()
        if problem is not None:
            raise ImportError(f"compiled kernels are unavailable: {problem}")
        self.tree = tree
        self.backend = backend
        self.name = name
        self.key = generator.structure_key(tree)
        self._module = None
        self._frames = {}
        self._ready = {}
        self.compile_seconds = {}

    def _model_module(self):
        if self._module is None:
            self._module = self._load("model", self.key, self.name,
                                      lambda module: generator.generate_model_source(
                                          self.tree, module, self.name))
        return self._module

    def _frame_module(self, frame):
        module = self._frames.get(frame)
        if module is None:
            module = self._frames[frame] = self._load(
                "frame", generator.frame_key(self.tree, frame), f"{self.name}:{frame}",
                lambda name: generator.generate_frame_source(self.tree, frame, name, self.name))
        return module

    def _load(self, kind, key, label, make_source):
        module, seconds, _ = _load_module(kind, key, make_source, label)
        self.compile_seconds[label] = seconds
        return module

    def get(self, kernel, frame=None):
        """The callable for ``kernel`` (compiled and loaded), or None if not generated."""
        ready_key = (kernel, frame)
        function = self._ready.get(ready_key)
        if function is None:
            module = self._model_module() if frame is None else self._frame_module(frame)
            function = getattr(module, kernel, None)
            if function is not None:
                self._ready[ready_key] = function
        return function

    MODEL_KERNELS = ("gravity_torques", "bias_torques", "inverse_dynamics", "mass_matrix",
                     "forward_dynamics", "gravity_torques_batch", "inverse_dynamics_batch",
                     "forward_dynamics_batch")
    FRAME_KERNELS = ("jacobian", "task_space_inertia")

    def prepare(self, kernels=None, frames=()):
        """Compile (or load) ``kernels`` (default: all model kernels) and per-frame kernels."""
        for name in kernels or self.MODEL_KERNELS:
            self.get(name)
        for frame in frames:
            for name in self.FRAME_KERNELS:
                self.get(name, frame)

    def cached(self, frames=()):
        """Whether :meth:`prepare` would only load (every module is compiled in the cache)."""
        directory = cache_dir()
        keys = [("model", self.key)] + [("frame", generator.frame_key(self.tree, frame))
                                        for frame in frames]
        return all((directory / f"{_module_name(kind, key)}{build.EXTENSION}").exists()
                   for kind, key in keys)


def pack_parameters(tree, gravity, out=None):
    return generator.pack_parameters(tree, gravity, out)


__all__ = ["Kernels", "BACKENDS", "compiler_available", "default_backend", "cache_dir",
           "pack_parameters"]

"""Compiled kernels: one generic module for every robot, and per-robot specializations.

Design (issue 14): every call of a model with kernels takes compiled code from
its first call on.  :mod:`.generic` (``generic.c``) runs the recursions of
:mod:`soa_dynamics_ros.algorithms` as loops over the parent array of any
tree; it is one extension module, compiled once per machine (not per robot)
and shared by every model.  The per-robot straight-line kernels below are the
specialization for hot paths: when one is ready it replaces the generic
function in ``RobotModel._fast``.  The numpy recursions stay the reference
(the tests hold both compiled paths to them at 1e-12) and the fallback where
no compiler exists or a compiled function declines (a status).

Per robot, :mod:`.tracing` runs the reference recursions on symbolic scalars,
:mod:`.c_emission` prints the traces as straight-line C and :mod:`.generator`
says which kernels a robot gets; :mod:`.build` compiles each with the system
C compiler into an extension module in an on-disk cache and imports it.  Names
of the compiled modules are hashes of the model structure, of the source of
the recursions, the tracing, the C printing and the catalogue, and of the
toolchain: a node restart finds them and loads instead of compiling; a change
to the physics code, to the robot's structure or to the compiler gives a new
name.  Inertias (payloads) and gravity are inputs of the kernels, so they
never force new code.

The cache directory is ``$SOA_DYNAMICS_CACHE/kernels`` or
``~/.cache/soa_dynamics_ros/kernels``.  The generic module is part of the
installation rather than of that cache: installing the package (``colcon build``,
``scripts/setup.sh``) builds it into the install prefix (:func:`prebuilt_dir`:
``<prefix>/share/soa_dynamics_ros/kernels``, the prefix found through the ament
index, or ``$SOA_DYNAMICS_PREBUILT``), so that an emptied or new kernel
cache (a robot never seen, a fresh ``SOA_DYNAMICS_CACHE``) still answers
every call compiled from the first one.  Without it there, it is built into
the cache at first need.

Nothing is loaded by name alone (:mod:`.store`): a module file is loaded only
from a directory this user (or root) owns and nobody else may write, when the
file is so owned and guarded too and its bytes hash to what its build
recorded.  A file that fails (corrupt, truncated, planted) is rebuilt, with a
warning; a cache directory that fails turns compiled kernels off (numpy
answers), with a warning.  The cache is created private (0700) and bounded
(``$SOA_DYNAMICS_CACHE_MAX_MB``, least recently used modules evicted).
"""
import concurrent.futures
import hashlib
import logging
import os
import pathlib
import sys
import threading
import time
import types

from . import build
from . import generator
from . import generic
from . import store
from .tracing import pack_parameters

logger = logging.getLogger("soa_dynamics_ros.kernels")

BACKENDS = ("c",)
# What the kernels are derived from: this folder's tracer, generator and
# builder, the C runtime they include (build.RUNTIME_HEADERS), and every module
# of the layers they trace (the joint model, the tree and the recursions).  A
# change to any of them gives new module names.
_SOURCES = ("symbolic.py", "tracing.py", "c_emission.py", "generator.py", "build.py",
            "compile_guard.py")
_TRACED_LAYERS = ("multibody", "algorithms")
_lock = threading.Lock()
_locks = {}                 # module name -> lock held while it is built or imported


def _unavailable():
    """Why compiled kernels cannot be used here, or None: no toolchain
    (:func:`build.toolchain_problem`), or a kernel cache that may not be trusted
    (warned about once)."""
    problem = build.toolchain_problem()
    if problem is None:
        directory = cache_dir()
        untrusted = store.directory_problem(directory)
        if untrusted is not None:
            problem = (f"the kernel cache {directory} {untrusted} (it must be yours and "
                       f"private: chmod 700, or set SOA_DYNAMICS_CACHE)")
            store.warn_once(f"compiled kernels are off: {problem}")
    return problem


def compiler_available():
    """Whether kernels can be compiled and loaded here (a toolchain and a trusted cache)."""
    return _unavailable() is None


def default_backend():
    """The backend ``kernels="auto"`` picks: ``"c"`` when a compiler is there, else none."""
    return "c" if compiler_available() else None


def cache_dir():
    root = os.environ.get("SOA_DYNAMICS_CACHE")
    path = pathlib.Path(root) if root else pathlib.Path.home() / ".cache" / "soa_dynamics_ros"
    return path / "kernels"


def ensure_cache_dir():
    """:func:`cache_dir`, created private (0700) if missing; UntrustedDirectoryError (an
    ImportError) when it exists and others could write to it or own it."""
    directory = cache_dir()
    store.make_directory(directory, private=True)
    return directory


_AMENT_INDEX_ENTRY = pathlib.Path("share", "ament_index", "resource_index", "packages", "soa_dynamics_ros")


def prebuilt_dir():
    """Where the installation keeps its generic module (built when it is installed)."""
    root = os.environ.get("SOA_DYNAMICS_PREBUILT")
    return pathlib.Path(root) if root else installed_prefix() / "share" / "soa_dynamics_ros" / "kernels"


def installed_prefix():
    """The install prefix of this package: the first on ``AMENT_PREFIX_PATH`` whose ament
    index lists it (a colcon workspace's install/, or the venv of ``scripts/setup.sh``),
    else the interpreter's prefix.  Read from the index's marker file, not through
    ament_index_python, so that this layer stays free of ROS."""
    for prefix in os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep):
        if prefix and (pathlib.Path(prefix) / _AMENT_INDEX_ENTRY).is_file():
            return pathlib.Path(prefix)
    return pathlib.Path(sys.prefix)


_CODE_VERSION = None


def code_version():
    """Hash of the code the compiled kernels are derived from, and of the toolchain."""
    global _CODE_VERSION
    if _CODE_VERSION is None:
        digest = hashlib.sha256(build.toolchain_id().encode())
        here = pathlib.Path(__file__).resolve().parent
        sources = [here / name for name in _SOURCES] + list(build.RUNTIME_HEADERS)
        for layer in _TRACED_LAYERS:
            sources += sorted((here.parent / layer).glob("*.py"))
        for path in sources:
            digest.update(path.read_bytes())
        _CODE_VERSION = digest.hexdigest()[:12]
    return _CODE_VERSION


def _module_name(kernel, key):
    return f"soa_kernels_{kernel}_{code_version()}_{key}"


def _module_lock(name):
    with _lock:
        return _locks.setdefault(name, threading.Lock())


def _in_use():
    """Names of the modules this process loaded or is building or loading (never evicted)."""
    with _lock:
        busy = {name for name, lock in _locks.items() if lock.locked()}
    return busy | set(sys.modules)


def _rebuild_warning(path, problem):
    return f"kernel module {path} {problem}: rebuilding it"


def _loadable(directory, name):
    """Whether module ``name`` would load from ``directory`` with no build (a file that
    would be rebuilt is warned about once)."""
    if store.directory_problem(directory) is not None:
        return False
    path = directory / f"{name}{build.EXTENSION}"
    problem = store.library_problem(path)
    if problem not in (None, store.MISSING):
        store.warn_once(_rebuild_warning(path, problem))
    return problem is None


def _load_module(name, make_source, label, directory=None,
                 optimization=build.KERNEL_OPTIMIZATION):
    """The compiled module ``make_source()`` describes: imported, built first if needed.

    ``make_source`` returns ``(source, stats)``, stats (operation counts) or None.
    Returns ``(module, seconds)``.  Different modules build concurrently (the
    compiler runs as a child process); one module is built once per process.
    ``directory`` is where it is looked for and built (default: the cache);
    ``optimization``: the compiler's -O option.  A file there that may not be
    loaded (:func:`store.library_problem`) or fails to load is rebuilt, with
    a warning.  After a build into the cache, the cache is held to its bound.
    """
    with _module_lock(name):
        if name in sys.modules:
            return sys.modules[name], 0.0
        started = time.perf_counter()
        directory = cache_dir() if directory is None else directory
        in_cache = directory == cache_dir()
        store.make_directory(directory, private=in_cache)
        path = directory / f"{name}{build.EXTENSION}"
        module = None
        problem = store.library_problem(path)
        if problem is None:
            try:
                module = build.load(name, path)
            except ImportError as error:
                problem = f"does not load ({' '.join(str(error).split())[:300]})"
        if problem not in (None, store.MISSING):
            store.warn_once(_rebuild_warning(path, problem))
        compiled = module is None
        if compiled:
            logger.info("compiling kernel %s (seconds)", label)
            source, stats = make_source()
            build.build(source, name, directory, optimization)
            module = build.load(name, path)
        sys.modules[name] = module
        if in_cache and compiled:
            store.evict(directory, _in_use())
        elif in_cache:
            store.touch(path)
        seconds = time.perf_counter() - started
        if compiled and stats:
            logger.info("kernel %s compiled in %.2f s (%d mul, %d add)", label, seconds,
                        stats["mul"], stats["add"] + stats["sub"])
        elif compiled:
            logger.info("kernel %s compiled in %.2f s", label, seconds)
        else:
            logger.info("kernel %s loaded from cache in %.3f s", label, seconds)
        return module, seconds


class Kernels:
    """The compiled kernels of one robot, one module per kernel (and frame).

    Each module is built (or loaded from the cache) the first time one of its
    kernels is asked for, with a log line before and after; :meth:`prepare`
    builds several at once.
    """

    MODEL_KERNELS = generator.MODEL_KERNELS
    DERIVATIVE_KERNELS = generator.DERIVATIVE_KERNELS
    FRAME_KERNELS = generator.FRAME_KERNELS
    WRENCHED_KERNELS = generator.WRENCHED_KERNELS

    def __init__(self, tree, backend="c", name="robot"):
        if backend not in BACKENDS:
            raise ValueError(f"unknown kernel backend {backend!r}; expected one of {BACKENDS}")
        problem = _unavailable()
        if problem is not None:
            raise ImportError(f"compiled kernels are unavailable: {problem}")
        self.tree = tree
        self.backend = backend
        self.name = name
        self.key = generator.structure_key(tree)
        self._modules = {}         # (kernel, frame) -> module, None when not generated
        self._ready = {}           # (kernel or its batch version, frame) -> callable
        self.compile_seconds = {}

    @property
    def modules(self):
        """Read-only, for diagnostics: ``(kernel, frame) -> module`` of every module asked
        for so far (built or loaded), None where the kernel is not generated."""
        return types.MappingProxyType(self._modules)

    def _module(self, kernel, frame):
        key = (kernel, frame)
        if key not in self._modules:
            if not generator.exists(self.tree, kernel):
                self._modules[key] = None
            else:
                label = f"{self.name}.{kernel}" + (
                    "" if frame is None else f"[{frame}]" if isinstance(frame, str)
                    else f"[{', '.join(frame)}]")
                name = _module_name(kernel, generator.kernel_key(self.tree, kernel, frame))
                module, seconds = _load_module(
                    name, lambda: generator.generate_source(self.tree, kernel, name, self.name,
                                                            frame), label)
                self.compile_seconds[label] = seconds
                self._modules[key] = module
        return self._modules[key]

    def get(self, kernel, frame=None):
        """The callable for ``kernel`` (compiled and loaded), or None if not generated or
        left to the generic module (a single call of a batch-only module)."""
        function = self._ready.get((kernel, frame))
        if function is None and not generator.batch_only(self.tree, kernel):
            module = self._module(kernel.removesuffix("_batch"), frame)
            function = getattr(module, kernel, None)
            if function is not None:
                self._ready[(kernel, frame)] = function
        return function

    def _wanted(self, frames, derivatives, wrenches):
        model_kernels = self.MODEL_KERNELS + (self.DERIVATIVE_KERNELS if derivatives else ())
        link_sets = [(frame,) for frame in dict.fromkeys(frames)]
        if wrenches and 1 < len(link_sets) <= generator.MAX_WRENCHED_LINKS:
            link_sets.append(tuple(sorted(dict.fromkeys(frames))))
        return [(kernel, None) for kernel in model_kernels] + [
            (kernel, frame) for frame in frames for kernel in self.FRAME_KERNELS] + [
            (kernel, links) for links in (link_sets if wrenches else ())
            for kernel in self.WRENCHED_KERNELS
            if derivatives or kernel not in generator.WRENCHED_DERIVATIVE_KERNELS]

    def prepare(self, frames=(), derivatives=True, wrenches=True):
        """Compile (or load) every model kernel and the per-frame kernels of ``frames``.

        ``wrenches``: also the wrenched dynamics of each frame's link alone and, for two
        to ``MAX_WRENCHED_LINKS`` frames, of all of them at once.  ``derivatives=False``
        (the derivative kernels and their batches, which share their modules) and
        ``wrenches=False`` leave those out (a node's start-up: they compile for several
        seconds beside its 1 kHz feedforward, and the generic module answers meanwhile).

        Modules are built in parallel, one compiler per core.  Returns every
        kernel asked for and its batch: ``{(kernel, frame or None): callable or None}``,
        None where none is generated (over the size cap, or no such batch), so that
        the caller stops asking for it from the first call on.
        """
        wanted = self._wanted(frames, derivatives, wrenches)
        with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
            for future in [pool.submit(self._module, kernel, frame) for kernel, frame in wanted]:
                future.result()
        return {(name, frame): self.get(name, frame) for kernel, frame in wanted
                for name in (kernel, kernel + "_batch")}

    def cached(self, frames=(), derivatives=True, wrenches=True):
        """Whether :meth:`prepare` would only load (every module is compiled in the cache)."""
        directory = cache_dir()
        return all(
            _loadable(directory, _module_name(kernel, generator.kernel_key(self.tree, kernel,
                                                                           frame)))
            for kernel, frame in self._wanted(frames, derivatives, wrenches)
            if generator.exists(self.tree, kernel))


def _generic_directory():
    """The installation's directory when it holds a generic module that may be loaded, else
    the cache (with a warning when the installation's may not be)."""
    prebuilt = prebuilt_dir()
    library = prebuilt / f"{generic.module_name()}{build.EXTENSION}"
    problem = store.directory_problem(prebuilt)
    problem = (f"is in a directory that {problem}" if problem is not None
               else store.library_problem(library))
    if problem is None:
        return prebuilt
    if os.path.lexists(library):
        store.warn_once(f"the installed generic kernel module {library} {problem}: building it "
                        f"into the kernel cache instead (scripts/setup.sh reinstalls it)")
    return cache_dir()


def generic_module():
    """The generic compiled recursions (:mod:`.generic`): built once per installation (or
    per cache), loaded once per process.  Raises ImportError without a compiler,
    KernelBuildError if it fails."""
    return _generic(_generic_directory())


def install_generic_module():
    """Build the generic module into :func:`prebuilt_dir` (at install time); the module."""
    return _generic(prebuilt_dir())


def _generic(directory):
    problem = _unavailable()
    if problem is not None:
        raise ImportError(f"compiled kernels are unavailable: {problem}")
    name = generic.module_name()
    module, _ = _load_module(name, lambda: (generic.module_source(name), None), "generic",
                             directory, build.GENERIC_OPTIMIZATION)
    return module


def generic_cached():
    """Whether :func:`generic_module` would only load (the installation or the cache has it)."""
    return _loadable(_generic_directory(), generic.module_name())


def compiled_tree(tree):
    """``tree`` as a model of the generic module (:class:`.generic.CompiledTree`)."""
    return generic.CompiledTree(generic_module(), tree)


__all__ = ["Kernels", "BACKENDS", "compiler_available", "default_backend", "cache_dir",
           "ensure_cache_dir", "prebuilt_dir", "installed_prefix", "generic_module",
           "install_generic_module", "generic_cached", "compiled_tree", "pack_parameters"]

"""What is checked before a compiled module is loaded from disk, and the kernel cache's bound.

Loading a module runs its code, so a module is loaded only from a directory
owned by this user (or root) that nobody else may write, only when the file
itself is so owned and guarded, and only when its bytes hash to the SHA-256
its build recorded beside it (:func:`.build.record_path`).  A file that fails
is rebuilt (see ``kernels._load_module``), never loaded.  Whoever may write
as this user can replace a module and its record together: that is outside
what this defends (docs/robustness.md, "Kernel cache").

The cache (not an installation's directory) is bounded:
:data:`MAX_MB_ENV` megabytes, the least recently used modules evicted after
each build.
"""
import logging
import math
import os
import stat
import threading

from . import build

logger = logging.getLogger("soa_dynamics_ros.kernels")

MAX_MB_ENV = "SOA_DYNAMICS_CACHE_MAX_MB"
DEFAULT_MAX_MB = 512.0
# The returned problem when a module file is not there (nothing to warn about).
MISSING = "is missing"
# A record is a hex SHA-256 and a newline: a longer file is no record.
_RECORD_BYTES = 65
_MODULE_PREFIXES = ("soa_kernels_", "soa_generic_")
# Deleted in this order: a process looking at a module being evicted then finds
# no library (and builds it), never a library without its record (a warning).
_MODULE_SUFFIXES = (build.EXTENSION, build.RECORD_SUFFIX, ".c")

_verified = {}      # library path -> (file identity, digest) once its bytes matched the record
_warned = set()
_state_lock = threading.Lock()


class UntrustedDirectoryError(ImportError):
    """A kernel directory that may not be trusted: nothing is built in or loaded from it."""


def warn_once(message):
    """Log ``message`` as a warning the first time this process meets it."""
    with _state_lock:
        if message in _warned:
            return
        _warned.add(message)
    logger.warning(message)


def _ownership_problem(status):
    if status.st_uid not in (os.geteuid(), 0):
        return f"is owned by uid {status.st_uid}, not by this user (uid {os.geteuid()}) or root"
    if status.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"is writable by group or others (mode {stat.S_IMODE(status.st_mode):o})"
    return None


def directory_problem(directory):
    """Why modules in ``directory`` may not be trusted, or None (also when it does not
    exist: :func:`make_directory` creates it)."""
    try:
        status = os.stat(directory)
    except FileNotFoundError:
        return None
    except OSError as error:
        return f"cannot be examined ({error.strerror})"
    if not stat.S_ISDIR(status.st_mode):
        return "is not a directory"
    return _ownership_problem(status)


def make_directory(directory, private):
    """Create ``directory`` if missing (mode 0700 when ``private``, the cache; else readable
    by everyone, an installation's); UntrustedDirectoryError when it may not be trusted."""
    directory.mkdir(mode=0o700 if private else 0o755, parents=True, exist_ok=True)
    problem = directory_problem(directory)
    if problem is not None:
        raise UntrustedDirectoryError(f"the kernel directory {directory} {problem}: no module "
                                      f"is built in or loaded from it")


def _open_guarded(path):
    """``(open binary file, None)`` for a regular file (not a link) this user or root owns
    and nobody else may write, else ``(None, problem)``."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return None, MISSING
    except OSError as error:
        return None, f"cannot be opened ({error.strerror})"
    file = os.fdopen(descriptor, "rb")
    status = os.fstat(descriptor)
    problem = ("is not a regular file" if not stat.S_ISREG(status.st_mode)
               else _ownership_problem(status))
    if problem is not None:
        file.close()
        return None, problem
    return file, None


def _recorded_digest(library):
    """``(digest, None)`` recorded by the build of ``library``, or ``(None, problem)``."""
    record, problem = _open_guarded(build.record_path(library))
    if record is None:
        return None, ("has no hash record (it was not built here)" if problem == MISSING
                      else f"has a hash record that {problem}")
    with record:
        text = record.read(_RECORD_BYTES + 1)
    digest = text.strip().decode("ascii", errors="replace")
    if len(text) > _RECORD_BYTES or len(digest) != 64 or digest.strip("0123456789abcdef"):
        return None, "has a malformed hash record"
    return digest, None


def library_problem(library):
    """Why the module file ``library`` may not be loaded, or None; :data:`MISSING` when it
    is not there.

    Its bytes are hashed once per process (while the file's device, inode, size and
    modification time stay the same): a node's start-up checks and then loads each module.
    """
    file, problem = _open_guarded(library)
    if file is None:
        return problem
    with file:
        expected, problem = _recorded_digest(library)
        if problem is not None:
            return problem
        status = os.fstat(file.fileno())
        identity = (status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns)
        if _verified.get(str(library)) == (identity, expected):
            return None
        digest = build.sha256_of(file)
    if digest != expected:
        return "does not match the hash recorded when it was built (corrupt or replaced)"
    _verified[str(library)] = (identity, expected)
    return None


def touch(library):
    """Mark ``library`` as used now (its record's modification time): eviction keeps it longest."""
    try:
        os.utime(build.record_path(library))
    except OSError:
        pass        # a record this process may not change is never evicted by it either


def max_bytes():
    """The cache's bound: ``$SOA_DYNAMICS_CACHE_MAX_MB`` megabytes, else :data:`DEFAULT_MAX_MB`."""
    text = os.environ.get(MAX_MB_ENV)
    if text is None:
        return int(DEFAULT_MAX_MB * 2 ** 20)
    try:
        megabytes = float(text)
    except ValueError:
        megabytes = math.nan
    if not (0 < megabytes < math.inf):
        warn_once(f"{MAX_MB_ENV}={text[:40]!r} is not a positive number of megabytes: the "
                  f"kernel cache is bounded to {DEFAULT_MAX_MB:g} MB")
        return int(DEFAULT_MAX_MB * 2 ** 20)
    return int(megabytes * 2 ** 20)


def _modules(directory):
    """``({module name: [bytes, last use]}, names being built)`` of the files in ``directory``."""
    modules, building = {}, set()
    with os.scandir(directory) as entries:
        for entry in entries:
            if entry.name.startswith("."):
                # a build's temporary files: .<module>.<pid>.<suffix>
                building.add(entry.name[1:].split(".", 1)[0])
                continue
            suffix = next((s for s in _MODULE_SUFFIXES if entry.name.endswith(s)), None)
            if suffix is None or not entry.name.startswith(_MODULE_PREFIXES):
                continue
            try:
                status = entry.stat(follow_symlinks=False)
            except FileNotFoundError:
                continue
            module = modules.setdefault(entry.name.removesuffix(suffix), [0, 0.0])
            module[0] += status.st_size
            module[1] = max(module[1], status.st_mtime)
    return modules, building


def evict(directory, in_use):
    """Delete the least recently used modules in ``directory`` until its modules take at
    most :func:`max_bytes`; never a module named in ``in_use`` or being built.

    Another process that loaded an evicted module keeps it (the mapping outlives the
    file); one about to load it finds it missing and builds it again.
    """
    limit = max_bytes()
    modules, building = _modules(directory)
    total = sum(size for size, _ in modules.values())
    evicted = 0
    for name in sorted(modules, key=lambda name: modules[name][1]):
        if total <= limit:
            break
        if name in in_use or name in building:
            continue
        for suffix in _MODULE_SUFFIXES:
            (directory / f"{name}{suffix}").unlink(missing_ok=True)
        total -= modules[name][0]
        evicted += 1
    if evicted:
        logger.info("kernel cache %s: %d least recently used modules evicted (bound %.0f MB, "
                    "%s)", directory, evicted, limit / 2 ** 20, MAX_MB_ENV)

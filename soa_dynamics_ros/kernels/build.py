"""Compile a generated kernel module with the system C compiler and import it.

The toolchain is the one that builds the package's ROS interfaces (``cc``, or
``$CC``, with Python's and numpy's headers), so a machine set up by
``scripts/setup.sh`` has it.  Compiled code depends on more than its source:
:func:`toolchain_id` (compiler version, flags, CPU, Python and numpy) is part of
every module's name, so a cache shared by two machines never loads code built
for the other.
"""
import functools
import hashlib
import importlib.machinery
import importlib.util
import os
import pathlib
import platform
import shutil
import subprocess
import sys
import sysconfig

import numpy as np

RUNTIME_DIR = pathlib.Path(__file__).resolve().parent          # runtime.h
# runtime.h and what it includes (runtime_c.h, the Python-free part an exported library
# carries, and runtime/*.h): what every compiled module includes, so their bytes go into
# every module's name.
RUNTIME_HEADERS = (RUNTIME_DIR / "runtime.h", RUNTIME_DIR / "runtime_c.h",
                   *sorted((RUNTIME_DIR / "runtime").glob("*.h")))
# -march=native: the generated arithmetic is measurably faster with FMA and the
# host's vector registers (docs/performance.md, "Design measurements").
# -fno-math-errno lets sin and cos of one angle become one sincos call.  No
# -ffast-math: it would change NaN handling and reorder the reference's arithmetic.
FLAGS = ("-march=native", "-fno-math-errno", "-std=gnu11", "-fPIC", "-shared")
# The per-robot kernels are straight-line code: -O3 measured no faster than -O2 and
# compiles longer.  The generic module is loops over bodies and rows, which -O3
# inlines and vectorizes: measurably faster, nothing slower (docs/performance.md,
# "Design measurements").
KERNEL_OPTIMIZATION = "-O2"
GENERIC_OPTIMIZATION = "-O3"
EXTENSION = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
# Beside each library, the SHA-256 of its bytes as built (see .store): the loader
# loads no library whose bytes differ.
RECORD_SUFFIX = ".sha256"
# Whatever the umask: the loader refuses files that group or others may write.
LIBRARY_MODE = 0o755
RECORD_MODE = 0o644


class KernelBuildError(RuntimeError):
    """The C compiler failed on a generated module (its message ends with the compiler's)."""


def compiler():
    """The C compiler: ``$CC`` if set, else ``cc`` or ``gcc``; its path, or None if not found."""
    chosen = os.environ.get("CC")
    return shutil.which(chosen) if chosen else shutil.which("cc") or shutil.which("gcc")


def python_include():
    """The directory of the Python headers the kernels compile against."""
    return pathlib.Path(sysconfig.get_paths()["include"])


@functools.lru_cache(maxsize=None)
def toolchain_problem():
    """Why kernels cannot be compiled on this machine, or None when they can."""
    if compiler() is None:
        return (f"the C compiler CC={os.environ['CC']!r} is not found" if os.environ.get("CC")
                else "no C compiler (cc or gcc): install gcc (scripts/setup.sh does)")
    if not (python_include() / "Python.h").exists():
        return f"no Python headers in {python_include()}: install python3-dev"
    return None


def host_cpu():
    """The host CPU's model and instruction-set flags (what -march=native compiles for)."""
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            lines = [line for line in cpuinfo.read().split("\n\n")[0].splitlines()
                     if line.startswith(("model name", "flags"))]
        return "\n".join(lines)
    except OSError:
        return platform.processor() or platform.machine()


@functools.lru_cache(maxsize=None)
def vector_math():
    """``(compile flags, link flags)`` for glibc's vector math library where the toolchain
    links it (runtime.h then takes the batch lanes' sin and cos from it), else empty."""
    found = subprocess.run([compiler(), "-print-file-name=libmvec.so"], capture_output=True,
                           text=True, timeout=60).stdout.strip()
    if os.path.isabs(found) and os.path.exists(found):
        return ("-DSOA_LIBMVEC",), ("-lmvec",)
    return (), ()


@functools.lru_cache(maxsize=None)
def toolchain_id():
    """Hash of what compiled code depends on besides its source."""
    version = subprocess.run([compiler(), "--version"], capture_output=True, text=True,
                             timeout=60).stdout.splitlines()[:1]
    digest = hashlib.sha256("\n".join(
        version + list(FLAGS) + [flag for flags in vector_math() for flag in flags] + [
            KERNEL_OPTIMIZATION, GENERIC_OPTIMIZATION, host_cpu(), sys.version, np.__version__,
            EXTENSION]).encode())
    return digest.hexdigest()[:8]


def record_path(library):
    """The file holding the SHA-256 the build recorded for ``library`` (a module's path)."""
    library = pathlib.Path(library)
    return library.with_name(library.name.removesuffix(EXTENSION) + RECORD_SUFFIX)


def sha256_of(file):
    """The hex SHA-256 of an open binary file's bytes (hashlib.file_digest is Python 3.11+)."""
    digest = hashlib.sha256()
    for block in iter(lambda: file.read(1 << 20), b""):
        digest.update(block)
    return digest.hexdigest()


def _remove_leftovers(directory):
    """Delete temporary files of builds whose process died (killed mid-compile)."""
    for leftover in directory.glob(".soa_*"):
        try:
            pid = int(leftover.name.split(".")[2])
            os.kill(pid, 0)
        except ProcessLookupError:
            leftover.unlink(missing_ok=True)
        except (ValueError, IndexError, PermissionError):
            continue


def build(source, name, directory, optimization=KERNEL_OPTIMIZATION):
    """Compile C ``source`` into the extension module ``name`` in ``directory``; its path.

    ``optimization``: the compiler's -O option (:data:`GENERIC_OPTIMIZATION` for the
    generic module).

    The source is kept beside the library (``name.c``) for readers, and the
    SHA-256 of the library in ``name.sha256`` (:func:`record_path`) for the
    loader.  Files are
    written under temporary names (with this process's id) in the same folder
    and renamed, so no process ever sees half a file under a final name; a
    build's temporary files are removed when it fails, and by the next build
    when its process was killed.  The compiler runs under
    :mod:`.compile_guard`, which kills it if this process dies.
    """
    _remove_leftovers(directory)
    path = directory / f"{name}{EXTENSION}"
    partial_source = directory / f".{name}.{os.getpid()}.c"
    partial_library = directory / f".{name}.{os.getpid()}{EXTENSION}"
    partial_record = directory / f".{name}.{os.getpid()}{RECORD_SUFFIX}"
    defines, libraries = vector_math()
    command = [compiler(), optimization, *FLAGS, *defines, f"-I{RUNTIME_DIR}",
               f"-I{python_include()}", f"-I{np.get_include()}", str(partial_source), "-o",
               str(partial_library), *libraries]
    try:
        partial_source.write_text(source)
        returncode, errors = _run_guarded(command)
        if returncode != 0:
            raise KernelBuildError(f"compiling {partial_source.name} failed "
                                   f"({' '.join(command)}):\n{errors[-4000:]}")
        os.chmod(partial_library, LIBRARY_MODE)
        with open(partial_library, "rb") as library:
            digest = sha256_of(library)
        descriptor = os.open(partial_record, os.O_WRONLY | os.O_CREAT | os.O_EXCL, RECORD_MODE)
        with os.fdopen(descriptor, "w") as record:
            record.write(digest + "\n")
        # The record first: a process that finds the new library finds its record.
        os.replace(partial_record, record_path(path))
        os.replace(partial_library, path)
        os.replace(partial_source, directory / f"{name}.c")
    finally:
        for leftover in (partial_source, partial_library, partial_record):
            leftover.unlink(missing_ok=True)
    return path


def _run_guarded(command):
    """Run ``command`` under :mod:`.compile_guard`; its exit status and standard error."""
    # The guard reads a pipe whose write end only this process holds (children
    # do not inherit it: close_fds): it sees end of file when this process ends.
    guard = subprocess.Popen([sys.executable, "-I", "-S", str(RUNTIME_DIR / "compile_guard.py"),
                              *command], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE)
    try:
        errors = guard.stderr.read().decode(errors="replace")
        return guard.wait(), errors
    finally:
        guard.stdin.close()        # also on KeyboardInterrupt: the guard stops the compiler
        guard.stderr.close()
        guard.wait()


def load(name, path):
    """Import the extension module ``name`` from ``path``."""
    loader = importlib.machinery.ExtensionFileLoader(name, str(path))
    spec = importlib.util.spec_from_file_location(name, path, loader=loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module

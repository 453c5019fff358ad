"""Finding ROS packages, and expanding xacro in a child process with a deadline.

xacro evaluates Python expressions (``${9**9**9}``), so expanding an untrusted
description can take unbounded time and memory.  :func:`expand` runs xacro
in a child Python (this interpreter, ``sys.executable``) that limits its own
address space, dies with its parent (Linux ``PR_SET_PDEATHSIG``) and is
killed at the deadline.  This file is also the child's script; it imports
only the standard library (and xacro, in the child), so that the child starts
without loading numpy or this package.

Packages (``$(find pkg)``, ``package://pkg/...``) are looked up in the ament
index first (``AMENT_PREFIX_PATH``, then this environment's prefix), then
under the caller's ``package_paths``.
"""
import json
import os
import signal
import subprocess
import sys

DEFAULT_TIMEOUT = 10.0               # seconds, whole expansion (far above its start-up)
MEMORY_LIMIT_BYTES = 2 * 1024 ** 3   # address space of the child
# How deep below each of package_paths a package folder is looked for.
PACKAGE_SEARCH_DEPTH = 4
_EXIT_XACRO_ERROR, _EXIT_MEMORY = 2, 3
# Of xacro's message in an error: an expression's message is whatever the
# description makes it (a file it read, included).
MAX_MESSAGE_CHARS = 300


class PackageNotFoundError(LookupError):
    """A package that neither the ament index nor the search paths hold."""


def _ament_prefixes():
    prefixes = [p for p in os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep) if p]
    return prefixes + [sys.prefix]


def _declared_name(package_xml):
    """The ``<name>`` a package.xml declares, or None (unreadable or malformed)."""
    import xml.etree.ElementTree as ElementTree
    try:
        name = ElementTree.parse(package_xml).getroot().findtext("name")
    except (OSError, ElementTree.ParseError):
        return None
    return name.strip() if name else None


def _search(package, root, unreadable):
    """The shallowest folder under ``root`` that is ``package`` (breadth-first, bounded).

    What cannot be listed or looked at is skipped and added to ``unreadable``
    (path, reason), so that a package not found can say where it may be.
    """
    level = [root]
    for _depth in range(PACKAGE_SEARCH_DEPTH + 1):
        below = []
        for directory in level:
            try:
                entries = sorted(os.scandir(directory), key=lambda entry: entry.name)
            except OSError as error:
                unreadable.append((directory, error.strerror or type(error).__name__))
                continue
            holds_package_xml, folders = False, []
            for entry in entries:
                try:      # (a symbolic link is followed: to a loop, or where it may not look)
                    if entry.name == "package.xml" and entry.is_file():
                        holds_package_xml = True
                    elif entry.is_dir() and not entry.name.startswith("."):
                        folders.append(entry)
                except OSError as error:
                    unreadable.append((entry.path, error.strerror or type(error).__name__))
            if holds_package_xml and (
                    _declared_name(os.path.join(directory, "package.xml")) == package):
                return directory
            for entry in folders:
                if entry.name == package:
                    return entry.path
                below.append(entry.path)
        level = below
    return None


def find_package(package, package_paths=()):
    """The folder of ROS package ``package``, or :class:`PackageNotFoundError` saying where
    it looked.

    The ament index (``<prefix>/share/<package>`` of each ``AMENT_PREFIX_PATH``
    entry and of this environment's prefix) comes first; then each of
    ``package_paths`` in order: a folder named ``package`` or one whose
    package.xml declares that name, up to :data:`PACKAGE_SEARCH_DEPTH` levels below.
    """
    for prefix in _ament_prefixes():
        candidate = os.path.join(prefix, "share", package)
        if os.path.isdir(candidate):
            return candidate
    unreadable = []
    for root in package_paths:
        found = _search(package, os.fspath(root), unreadable)
        if found is not None:
            return found
    skipped = "".join(f"; {path!r} could not be searched ({reason})"
                      for path, reason in unreadable[:5])
    if len(unreadable) > 5:
        skipped += f" and {len(unreadable) - 5} more"
    raise PackageNotFoundError(
        f"package {package!r} not found: not in the ament index (share/{package} of "
        f"AMENT_PREFIX_PATH and {sys.prefix}) nor, as a folder of that name or a package.xml "
        f"declaring it, up to {PACKAGE_SEARCH_DEPTH} levels below package_paths "
        f"{[os.fspath(p) for p in package_paths]}{skipped}")


def expand(package_paths, timeout=DEFAULT_TIMEOUT, path=None, text=None):
    """The URDF that xacro makes of file ``path`` or string ``text``, expanded in a child.

    Raises ``RuntimeError`` with the reason (xacro's message, the deadline or
    the memory limit); the caller turns it into its own error type.
    """
    if not timeout > 0:
        raise ValueError(f"xacro_timeout must be a positive number of seconds, not {timeout!r}")
    request = json.dumps({"path": path, "text": text, "parent": os.getpid(),
                          "package_paths": [os.fspath(p) for p in package_paths],
                          "memory": MEMORY_LIMIT_BYTES})
    child = subprocess.Popen([sys.executable, os.path.abspath(__file__)],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, encoding="utf-8")
    try:
        output, errors = child.communicate(request, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"xacro expansion did not finish within {timeout:g} s (an "
                           "expression too costly to evaluate?); the expansion was stopped")
    finally:
        # Also on KeyboardInterrupt: the child never outlives this call.
        if child.poll() is None:
            child.kill()
        child.communicate()
    if child.returncode == 0:
        return output
    message = errors.strip().splitlines()[-1] if errors.strip() else ""
    if len(message) > MAX_MESSAGE_CHARS:
        message = f"{message[:MAX_MESSAGE_CHARS]}... ({len(message)} characters)"
    if child.returncode == _EXIT_MEMORY or child.returncode == -signal.SIGKILL:
        raise RuntimeError(f"xacro expansion exceeded its memory limit of "
                           f"{MEMORY_LIMIT_BYTES // 2**20} MiB (an expression too large "
                           "to evaluate?)")
    if child.returncode == _EXIT_XACRO_ERROR:
        raise RuntimeError(f"xacro expansion failed: {message}")
    raise RuntimeError(f"xacro expansion failed: the child process ended with status "
                       f"{child.returncode}: {message}")


def _die_with_parent(parent):
    """Ask Linux to kill this process when its parent dies (no-op elsewhere)."""
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        pr_set_pdeathsig = 1
        libc.prctl(pr_set_pdeathsig, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent:   # the parent died before prctl took effect
        os._exit(1)


def _child():
    request = json.loads(sys.stdin.read())
    _die_with_parent(request["parent"])
    import resource
    resource.setrlimit(resource.RLIMIT_AS, (request["memory"], request["memory"]))
    try:
        import xacro
        import xacro.substitution_args
    except ImportError:
        sys.stderr.write("the description uses xacro; install the 'xacro' package "
                         "(pip install xacro) to expand it\n")
        sys.exit(_EXIT_XACRO_ERROR)

    missing = []

    def find(package):
        try:
            return find_package(package, request["package_paths"])
        except PackageNotFoundError as error:
            missing.append(str(error))   # xacro rewraps the exception; keep its words
            raise
    # xacro's $(find) asks ament_index_python; this adds the caller's search paths.
    xacro.substitution_args._eval_find = find
    _parse_without_namespaces()
    try:
        if request["path"] is not None:
            document = xacro.process_file(request["path"])
        else:
            import xml.dom.minidom
            document = xml.dom.minidom.parseString(request["text"])
            xacro.process_doc(document)
        sys.stdout.write(document.toxml())
    except Exception as error:  # xacro raises many unrelated types
        if _caused_by_memory_error(error):
            sys.exit(_EXIT_MEMORY)
        message = missing[0] if missing else f"{type(error).__name__}: {error}"
        sys.stderr.write(" ".join(message.split()) + "\n")
        sys.exit(_EXIT_XACRO_ERROR)


def _parse_without_namespaces():
    """Make xacro's parser (minidom) take names as written, as urdfdom does.

    Namespace-aware, it stops at a prefix without an ``xmlns:`` declaration
    ("unbound prefix"), which Drake's URDFs use (``drake:``); xacro itself
    matches names by their text (``xacro:include``), prefix included.
    """
    from xml.dom import expatbuilder, minidom
    minidom.parse = lambda file, parser=None, bufsize=None: expatbuilder.parse(
        file, namespaces=False)
    minidom.parseString = lambda string, parser=None: expatbuilder.parseString(
        string, namespaces=False)


def _caused_by_memory_error(error):
    """Whether a MemoryError is anywhere in the chain (xacro wraps errors in ``.exc``)."""
    seen = set()
    while error is not None and id(error) not in seen:
        if isinstance(error, MemoryError):
            return True
        seen.add(id(error))
        error = getattr(error, "exc", None) or error.__cause__ or error.__context__
    return False


if __name__ == "__main__":
    # This file's folder is sys.path[0]; its modules (this xacro.py first) must not shadow
    # xacro's imports. Python puts the folder of the file's real path there: under
    # `colcon build --symlink-install` this file is a symlink into the source tree.
    here = os.path.dirname(os.path.realpath(__file__))
    sys.path[:] = [entry for entry in sys.path if os.path.realpath(entry or ".") != here]
    _child()

"""Exception types of the model library.

Every error a caller can provoke is one of these, so that a node or a tool can
answer ``success=false`` with the message instead of crashing, and a user can
catch exactly the class of problem they care about.
"""
import difflib

# "Did you mean" searches: difflib compares a name with every candidate, in time
# that grows with the square of the name's length; a name or a candidate list
# past these gets no suggestion rather than a search that stalls its caller.
MAX_SUGGESTED_NAME_LENGTH = 256
MAX_SUGGESTION_CANDIDATES = 1000
# Names from outside are quoted in error text cut to this many characters,
# and lists of them to this many names.
SHOWN_NAME_LENGTH = 64
SHOWN_NAMES = 8


def close_names(name, known):
    """Up to three of ``known`` that look like ``name``, for a "did you mean" hint; none
    when the name or the candidates are too many to search quickly."""
    known = list(known)
    if len(name) > MAX_SUGGESTED_NAME_LENGTH or len(known) > MAX_SUGGESTION_CANDIDATES:
        return []
    return difflib.get_close_matches(name, known, n=3, cutoff=0.5)


def shown(name):
    """A name from outside, quoted for error text: cut to SHOWN_NAME_LENGTH characters,
    with its length, when longer."""
    name = str(name)
    if len(name) <= SHOWN_NAME_LENGTH:
        return repr(name)
    return f"{name[:SHOWN_NAME_LENGTH]!r}... ({len(name)} characters)"


def shown_names(names):
    """A list of names from outside for error text: the first SHOWN_NAMES, each
    :func:`shown`, and how many more there are."""
    names = list(names)
    more = f", ... {len(names) - SHOWN_NAMES} more" if len(names) > SHOWN_NAMES else ""
    return f"[{', '.join(map(shown, names[:SHOWN_NAMES]))}{more}]"


def clipped(text, limit):
    """``text`` cut to ``limit`` characters, saying how many were left out: the last
    bound on any error text that leaves the process (replies, logs, /diagnostics)."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text) - limit} more characters)"


class SoaDynamicsError(Exception):
    """Base class of every error raised on purpose by soa_dynamics_ros."""


class InvalidInputError(SoaDynamicsError, ValueError):
    """A numeric argument has the wrong shape or holds NaN/inf."""


class UnbalancedContactsError(InvalidInputError):
    """Contacts that cannot hold the robot still (``whole_body_gravity``): the base's
    gravity wrench is not a combination of the wrenches they can apply.  ``residual``
    (N, N m) is what the best combination leaves unbalanced, ``relative_residual`` that
    over the base's gravity wrench."""

    def __init__(self, message, residual, relative_residual):
        super().__init__(message)
        self.residual = residual
        self.relative_residual = relative_residual


class UnknownNameError(SoaDynamicsError, LookupError):
    """A joint, link or payload name that the model does not have."""

    def __init__(self, kind, name, known):
        self.kind = kind
        self.name = name
        close = close_names(str(name), known)
        hint = f"; did you mean {', '.join(map(shown, close))}?" if close else ""
        super().__init__(f"unknown {kind} {shown(name)}{hint}")

    def __str__(self):
        # LookupError would otherwise print the message with quotes around it.
        return self.args[0]


class URDFError(SoaDynamicsError, ValueError):
    """A robot description that is malformed or uses something unsupported.

    ``element`` and ``line`` locate the problem in the XML where known.
    """

    def __init__(self, message, element=None, line=None):
        self.element = element
        self.line = line
        where = ""
        if element is not None:
            where = f" (in <{element}>" + (f" at line {line})" if line else ")")
        elif line:
            where = f" (at line {line})"
        super().__init__(message + where)


class XacroRefusedError(URDFError):
    """A description that uses xacro where xacro may not run (``allow_xacro=False``)."""


class UnsupportedJointError(URDFError):
    """A joint type the fixed-base tree model cannot represent (floating, planar)."""


class InertiaError(URDFError):
    """Physically impossible inertial parameters."""


class InertiaWarning(UserWarning):
    """Suspicious inertial parameters accepted because validation is not strict."""


class DescriptionWarning(UserWarning):
    """A description accepted with a part that has no effect ignored (a mimic tag on a
    fixed joint, left behind when a model was reduced by locking joints)."""


class StaleStateError(SoaDynamicsError):
    """The measured state is too old to compute from (a joint's latest state past its timeout).

    ``joints`` names the stale joints.
    """

    def __init__(self, message, joints=()):
        self.joints = list(joints)
        super().__init__(message)


class SingularDynamicsError(SoaDynamicsError, ArithmeticError):
    """A solve that has no unique answer (e.g. a massless body on a moving joint)."""


class TrajectoryError(InvalidInputError):
    """A joint path that cannot be used: malformed CSV, bad columns, time not increasing.

    ``line`` is the 1-based CSV line where known.
    """

    def __init__(self, message, line=None):
        self.line = line
        super().__init__(message if line is None else f"line {line}: {message}")


class JointLimitError(TrajectoryError):
    """A path leaves the URDF position or velocity limits (strict checking)."""


class JointLimitWarning(UserWarning):
    """A path leaves the URDF position or velocity limits (default checking)."""


class NonSerialChainError(SoaDynamicsError, ValueError):
    """An operation for serial chains (DH extraction) met a branching robot.

    ``branch_link`` names the link where the moving structure branches.
    """

    def __init__(self, message, branch_link=None):
        self.branch_link = branch_link
        super().__init__(message)


class PlotError(SoaDynamicsError, RuntimeError):
    """A plot could not be made (matplotlib missing, or the file cannot be written)."""

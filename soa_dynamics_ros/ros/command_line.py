"""The command line of the package's ROS executables: ``--help`` and one-line mistakes.

Read before ``rclpy.init`` so that ``--help`` (before or after ``--ros-args``)
prints the usage and the parameter table and never starts ROS, and so that a
params file that cannot be read is named in one line instead of rcl's
exception.  What only rcl can judge (an unknown ROS argument, a params file
that is not valid YAML) is turned into one line by :func:`ros_arguments_error`.
Parameters given but never declared (a misspelt ``-p urdf_fil:=...``, a
params-file key under the node's name) are warned about, as ROS does not:
:func:`unknown_parameters` names each with its closest declared name.
"""
import difflib
import os
import re
import textwrap

USAGE_ERROR = 2         # the exit status of a command-line mistake, as argparse's
HELP_FLAGS = ("-h", "--help")
# ROS arguments followed by a value (rcl's arguments.c): the value is never a flag.
VALUED_ROS_OPTIONS = {"-p", "--param", "-r", "--remap", "--params-file", "--log-level",
                      "-e", "--enclave", "--log-config-file", "--log-file-name"}
MAX_SHOWN = 200         # characters of an argument quoted back
HELP_WIDTH = 88
MAX_UNKNOWN_NAMED = 10  # unknown parameters named in the warning; the rest counted
ROS_ARGUMENTS_HELP = """\
ROS arguments (after --ros-args):
  -p NAME:=VALUE          set a parameter (the value is read as YAML)
  --params-file FILE      parameters from a YAML file, under the node's name or /**
  -r FROM:=TO             remap a name (e.g. -r __ns:=/arm, -r ~/feedforward:=/commands)
  --log-level LEVEL       debug | info | warn | error | fatal"""


class CommandLineError(Exception):
    """A mistake on the command line: one line, exit status :data:`USAGE_ERROR`."""


def _shown(text):
    text = str(text)
    return repr(text if len(text) <= MAX_SHOWN else text[:MAX_SHOWN] + "...")


def split_arguments(argv):
    """(the program's own arguments, the ROS arguments) of ``argv`` (without the program name).

    ROS arguments run from each ``--ros-args`` to the next ``--`` or the end.
    """
    own, ros, in_ros = [], [], False
    for token in argv:
        if token == "--ros-args":
            in_ros = True
        elif token == "--" and in_ros:
            in_ros = False
        else:
            (ros if in_ros else own).append(token)
    return own, ros


def _ros_flags_and_values(ros):
    """(flags, [(option, value)]) of the ROS arguments."""
    flags, valued = [], []
    tokens = iter(ros)
    for token in tokens:
        if token in VALUED_ROS_OPTIONS:
            valued.append((token, next(tokens, None)))
        else:
            flags.append(token)
    return flags, valued


def wants_help(argv):
    own, ros = split_arguments(argv)
    flags, _ = _ros_flags_and_values(ros)
    return any(token in HELP_FLAGS for token in own + flags)


def check_arguments(argv, program):
    """:class:`CommandLineError` for an argument of the program's own, or an unreadable
    params file; rcl reads the rest."""
    own, ros = split_arguments(argv)
    if own:
        raise CommandLineError(f"unexpected argument {_shown(own[0])}: {program} takes only ROS "
                               f"arguments, after --ros-args (see {program} --help)")
    _, valued = _ros_flags_and_values(ros)
    for option, value in valued:
        if option == "--params-file" and value is not None:
            _check_readable(value)


def _check_readable(path):
    if os.path.isdir(path):
        raise CommandLineError(f"params file {_shown(path)} is a directory")
    try:
        with open(path, "rb"):
            pass
    except OSError as error:
        raise CommandLineError(f"cannot read params file {_shown(path)}: "
                               f"{error.strerror or error}") from None


def ros_arguments_error(error, program):
    """One line for what rclpy.init refused in the ROS arguments (its message without
    rcl's source locations)."""
    message = re.sub(r",? at [^,]*\.c:\d+", "", str(error)).strip()
    if type(error).__name__ == "UnknownROSArgsError":
        message = f"unknown ROS argument(s) {message}"
    message = message[:4 * MAX_SHOWN]
    return f"{message} (see {program} --help)"


# ---------------------------------------------------------------------- help
def type_name(default):
    """The parameter type ROS gives a value like ``default``."""
    if isinstance(default, bool):
        return "bool"
    if isinstance(default, int):
        return "integer"
    if isinstance(default, float):
        return "double"
    if isinstance(default, str):
        return "string"
    element = type_name(default[0]) if len(default) else "string"
    return f"{element} array"


def _default_text(default):
    if isinstance(default, str):
        return repr(default)
    if isinstance(default, bool):
        return str(default).lower()
    if isinstance(default, list):
        if len(default) > 3 and len(set(default)) == 1:
            return f"[{default[0]!r}] x {len(default)}"
        return "[" + ", ".join(repr(value) for value in default) + "]"
    return f"{default:g}" if isinstance(default, float) else str(default)


def help_text(program, node_name, summary, parameters, notes=""):
    """The ``--help`` of an executable: usage, summary, ROS arguments, parameter table.

    ``parameters``: (name, default, description, read_only) rows.
    """
    lines = [f"usage: {program} [-h] [--ros-args [ROS arguments]]", "", summary.strip(), "",
             ROS_ARGUMENTS_HELP, "",
             f"parameters (node {node_name!r}; read-only ones are set at start-up only):"]
    for name, default, description, read_only in parameters:
        lines.append(f"  {name} ({type_name(default)}, default {_default_text(default)}"
                     + (", read-only)" if read_only else ")"))
        lines.append(textwrap.fill(description.strip(), HELP_WIDTH, initial_indent=" " * 6,
                                   subsequent_indent=" " * 6))
    if notes:
        lines += ["", notes.strip()]
    return "\n".join(lines)


# ---------------------------------------------------------------------- unknown parameters
def unknown_parameters(given, declared):
    """``[(name, closest declared name or None)]`` of the names in ``given`` never declared."""
    declared = sorted(declared)
    return [(name, next(iter(difflib.get_close_matches(name, declared, n=1, cutoff=0.6)), None))
            for name in sorted(given) if name not in declared]


def unknown_parameter_warning(node_name, unknown):
    """One line naming every unknown parameter and its closest known one."""
    named = [_shown(name) + (f" (did you mean {closest!r}?)" if closest else "")
             for name, closest in unknown[:MAX_UNKNOWN_NAMED]]
    if len(unknown) > MAX_UNKNOWN_NAMED:
        named.append(f"and {len(unknown) - MAX_UNKNOWN_NAMED} more")
    return (f"{node_name} has no parameter " + ", ".join(named)
            + ": ignored (see --help for the parameters)")

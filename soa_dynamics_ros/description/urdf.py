"""Reading URDF (and xacro) into a plain description of links and joints.

The parser is written on the standard library's expat so that every element
keeps its line number for error messages, entity declarations can be refused
(no entity-expansion attacks), and the library needs nothing beyond numpy.
Defaults follow the URDF specification, not any one parser: a missing
``<origin>`` is the identity, a missing ``<axis>`` is ``1 0 0``.
"""
from dataclasses import dataclass, field
import math
import os
import warnings
import xml.parsers.expat

import numpy as np

from ..errors import DescriptionWarning, URDFError, UnsupportedJointError, XacroRefusedError
from ..multibody.joints import JOINT_MODELS, joint_model
from ..multibody.spatial import rotation_from_rpy
from . import xacro as xacro_expand
from .xacro import PackageNotFoundError, find_package

# Joint types the URDF specification defines beyond those the joint model supports.
UNSUPPORTED_JOINT_TYPES = ("floating", "planar")
# The one floating joint that loads: from a massless root link (``world``), the robot's
# free base (docs/floating_base.md); it never reaches the joint model.
FLOATING = "floating"
MAX_DESCRIPTION_BYTES = 64 * 1024 * 1024
# Magnitudes no robot has; beyond them products of the parameters overflow or
# lose all precision, so they are refused as malformed rather than computed.
MAX_LENGTH = 1e4        # m: origins and centres of mass
MAX_MASS = 1e9          # kg
MAX_INERTIA = 1e12      # kg m^2
AXIS_ROUNDING = 1e-12   # components of a unit joint axis below this are zero (_joint)
# Of a path or other input quoted in an error message (shown()).
MAX_SHOWN_CHARS = 200


@dataclass
class XmlElement:
    tag: str
    attributes: dict
    line: int
    children: list = field(default_factory=list)

    def find(self, tag):
        for child in self.children:
            if child.tag == tag:
                return child
        return None

    def find_all(self, tag):
        return [child for child in self.children if child.tag == tag]


@dataclass
class LinkDescription:
    name: str
    line: int
    has_inertial: bool = False
    mass: float = 0.0
    com: np.ndarray = field(default_factory=lambda: np.zeros(3))
    # 3x3 inertia about the centre of mass, in the link frame's axes.
    inertia: np.ndarray = field(default_factory=lambda: np.zeros((3, 3)))


@dataclass
class Mimic:
    joint: str
    multiplier: float = 1.0
    offset: float = 0.0


@dataclass
class JointDescription:
    name: str
    type: str
    parent: str
    child: str
    line: int
    origin_rotation: np.ndarray = field(default_factory=lambda: np.eye(3))
    origin_translation: np.ndarray = field(default_factory=lambda: np.zeros(3))
    axis: np.ndarray = field(default_factory=lambda: np.array([1.0, 0.0, 0.0]))
    lower: float = -math.inf
    upper: float = math.inf
    effort: float = math.inf
    velocity: float = math.inf
    damping: float = 0.0
    friction: float = 0.0
    mimic: Mimic = None


@dataclass
class RobotDescription:
    name: str
    links: dict           # name -> LinkDescription, in document order
    joints: dict          # name -> JointDescription, in document order
    root: str
    # Name of the floating joint that joined ``root`` to a massless world link, removed
    # from ``links`` and ``joints``: the robot has a free base (docs/floating_base.md).
    free_root_joint: str = None


def parse_xml(text):
    """Parse XML text into :class:`XmlElement` nodes, refusing DTD entities."""
    parser = xml.parsers.expat.ParserCreate()
    root_holder, stack = [], []

    def start(tag, attributes):
        element = XmlElement(tag, attributes, parser.CurrentLineNumber)
        if stack:
            stack[-1].children.append(element)
        else:
            root_holder.append(element)
        stack.append(element)

    def end(_tag):
        stack.pop()

    def refuse_entity(name, *_args):
        raise URDFError(f"entity declaration {name!r} is not allowed in a robot description",
                        line=parser.CurrentLineNumber)

    parser.StartElementHandler = start
    parser.EndElementHandler = end
    parser.EntityDeclHandler = refuse_entity
    parser.SetParamEntityParsing(xml.parsers.expat.XML_PARAM_ENTITY_PARSING_NEVER)
    try:
        parser.Parse(text, True)
    except xml.parsers.expat.ExpatError as error:
        raise URDFError(f"malformed XML: {xml.parsers.expat.errors.messages[error.code]}",
                        line=error.lineno) from None
    return root_holder[0]


def resolve_package_uri(source, package_paths=None):
    """A filesystem path for ``package://pkg/rel/path`` or ``file://`` URIs (others unchanged).

    This package's own files come from its checkout when it runs from one;
    other packages are found by :func:`~soa_dynamics_ros.description.xacro.find_package`:
    the ament index (``AMENT_PREFIX_PATH``, then this Python environment's
    prefix, where scripts/setup.sh installs this package's share directory),
    then ``package_paths``.
    """
    if source.startswith("file://"):
        return source[len("file://"):]
    if not source.startswith("package://"):
        return source
    package, _, relative = source[len("package://"):].partition("/")
    if package == "soa_dynamics_ros":
        # Running from a checkout (editable install): its files are the current ones.
        checkout = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        candidate = os.path.join(checkout, relative)
        if os.path.exists(os.path.join(checkout, "package.xml")) and os.path.exists(candidate):
            return candidate
    try:
        return os.path.join(find_package(package, _search_paths(package_paths)), relative)
    except PackageNotFoundError as error:
        raise URDFError(f"cannot resolve {shown(source)}: {error}") from None


def _search_paths(package_paths):
    if package_paths is None:
        return []
    if isinstance(package_paths, (str, os.PathLike)):
        # One path given bare would otherwise be searched character by character.
        package_paths = [package_paths]
    try:
        paths = [os.path.expanduser(os.fspath(path)) for path in package_paths]
    except TypeError:
        raise URDFError(f"package_paths must be a list of directories, not "
                        f"{package_paths!r}") from None
    missing = [path for path in paths if not os.path.isdir(path)]
    if missing:
        raise URDFError(f"package_paths {missing} are not directories")
    return paths


def _is_xml_text(source):
    return source.lstrip().startswith("<")


def shown(text, limit=MAX_SHOWN_CHARS):
    """``repr(text)``, cut to about ``limit`` characters: error messages stay bounded
    whatever the input."""
    if len(text) <= limit:
        return repr(text)
    return f"{text[:limit]!r}... ({len(text)} characters)"


def uses_xacro(text):
    """Whether XML ``text`` needs xacro: ``xacro:`` elements or attributes, ``${...}``
    or ``$(...)``.

    The ``xmlns:xacro`` declaration alone does not count: xacro output keeps it.
    Malformed XML answers False, so that the parser reports the problem.
    """
    parser = xml.parsers.expat.ParserCreate()

    class Found(Exception):
        """Stops the parse at the first use of xacro."""

    def substitutes(value):
        return "${" in value or "$(" in value

    def start(tag, attributes):
        if tag.startswith("xacro:") or any(
                name.startswith("xacro:") or substitutes(value) for name, value in attributes.items()):
            raise Found

    def characters(data):
        if substitutes(data):
            raise Found

    def refuse_entity(*_args):
        raise xml.parsers.expat.ExpatError("entity declaration")

    parser.StartElementHandler = start
    parser.CharacterDataHandler = characters
    parser.EntityDeclHandler = refuse_entity
    parser.SetParamEntityParsing(xml.parsers.expat.XML_PARAM_ENTITY_PARSING_NEVER)
    try:
        parser.Parse(text, True)
    except Found:
        return True
    except xml.parsers.expat.ExpatError:
        pass
    return False


def _expand_xacro(package_paths, timeout, path=None, text=None):
    try:
        return xacro_expand.expand(_search_paths(package_paths), timeout, path=path, text=text)
    except (RuntimeError, ValueError) as error:
        raise URDFError(str(error)) from None


def _xacro_refused(where):
    return XacroRefusedError(
        f"{where} uses xacro (a xacro: element or attribute, ${{...}} or $(...)), which runs "
        "the Python in its expressions, and xacro is not allowed for it (allow_xacro=False): "
        "give it expanded URDF")


def _read_file(path):
    """The text of description file ``path``; its contents never appear in an error."""
    if not os.path.isfile(path):
        raise URDFError(f"robot description file {shown(path)} does not exist")
    try:
        # Read to one byte past the limit: /proc and other special files report size 0.
        with open(path, "rb") as handle:
            data = handle.read(MAX_DESCRIPTION_BYTES + 1)
    except OSError as error:
        raise URDFError(f"cannot read robot description file {shown(path)}: "
                        f"{error.strerror or type(error).__name__}") from None
    if len(data) > MAX_DESCRIPTION_BYTES:
        raise URDFError(f"robot description file {shown(path)} is larger than "
                        f"{MAX_DESCRIPTION_BYTES // 2**20} MiB")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise URDFError(f"robot description file {shown(path)} is not UTF-8 text (byte "
                        f"{error.start}): not a URDF") from None
    if not _is_xml_text(text):
        raise URDFError(f"robot description file {shown(path)} is not XML (a URDF starts "
                        "with '<'): not a URDF")
    return text


def read_description_text(source, package_paths=None,
                          xacro_timeout=xacro_expand.DEFAULT_TIMEOUT, allow_xacro=True,
                          allow_path=True):
    """Return URDF XML text from a path, an XML string or a xacro file/string.

    Only a description that uses xacro (:func:`uses_xacro`) is expanded, in a
    child process stopped after ``xacro_timeout`` seconds
    (:func:`~soa_dynamics_ros.description.xacro.expand`); ``$(find pkg)`` and
    ``package://`` look in ``package_paths`` after the ament index.

    xacro runs the Python in a description's expressions with this process's
    rights (the child bounds time and memory, not what the code does): expand
    only descriptions you trust.  ``allow_xacro=False`` refuses one that uses
    xacro instead; ``allow_path=False`` takes ``source`` as XML text only, never
    as a file to open.  Both for descriptions from untrusted sources (a
    network, a topic): docs/descriptions.md, "Untrusted descriptions".
    """
    if not isinstance(source, (str, os.PathLike)):
        raise URDFError(f"a robot description must be a path or an XML string, "
                        f"not {type(source).__name__}")
    source = os.fspath(source)
    if len(source) > MAX_DESCRIPTION_BYTES:
        raise URDFError(f"robot description is larger than {MAX_DESCRIPTION_BYTES // 2**20} MiB")
    if _is_xml_text(source):
        text = source
        if uses_xacro(text):
            if not allow_xacro:
                raise _xacro_refused("the robot description")
            text = _expand_xacro(package_paths, xacro_timeout, text=text)
    elif not allow_path:
        raise URDFError(f"the robot description is not XML (a URDF starts with '<'; "
                        f"{len(source)} characters given) and, as text from this source, is "
                        "never opened as a file path")
    else:
        source = resolve_package_uri(source, package_paths)
        text = _read_file(source)
        if uses_xacro(text):
            if not allow_xacro:
                raise _xacro_refused(f"robot description file {shown(source)}")
            # From the file, so that relative includes and $(dirname) resolve.
            text = _expand_xacro(package_paths, xacro_timeout, path=source)
    if len(text) > MAX_DESCRIPTION_BYTES:
        raise URDFError(f"robot description is larger than {MAX_DESCRIPTION_BYTES // 2**20} MiB")
    return text


def _numbers(element, attribute, count, default=None):
    raw = element.attributes.get(attribute)
    if raw is None:
        if default is None:
            raise URDFError(f"missing attribute '{attribute}'", element.tag, element.line)
        return np.array(default, dtype=float)
    try:
        # Text from XML; numbers or sequences of them from urdf_parser_py objects.
        tokens = raw.split() if isinstance(raw, str) else np.ravel(np.asarray(raw, dtype=object))
        values = np.array([float(token) for token in tokens], dtype=float)
    except (TypeError, ValueError):
        raise URDFError(f"attribute {attribute}={raw!r} is not numeric",
                        element.tag, element.line) from None
    if values.size != count:
        raise URDFError(f"attribute {attribute}={raw!r} needs {count} numbers",
                        element.tag, element.line)
    if not np.all(np.isfinite(values)):
        raise URDFError(f"attribute {attribute}={raw!r} is not finite", element.tag, element.line)
    return values


def _number(element, attribute, default=None):
    return float(_numbers(element, attribute, 1, None if default is None else [default])[0])


def _bounded(values, bound, element, attribute):
    if np.any(np.abs(values) > bound):
        raise URDFError(f"attribute {attribute} = {values.tolist()} is beyond {bound:g}: not a "
                        "physical robot", element.tag, element.line)
    return values


def _origin(parent):
    origin = parent.find("origin")
    if origin is None:
        return np.eye(3), np.zeros(3)
    xyz = _bounded(_numbers(origin, "xyz", 3, [0.0, 0.0, 0.0]), MAX_LENGTH, origin, "xyz")
    rpy = _numbers(origin, "rpy", 3, [0.0, 0.0, 0.0])
    return rotation_from_rpy(*rpy), xyz


def _required_name(element, what):
    name = element.attributes.get("name")
    if not name:
        raise URDFError(f"{what} without a name", element.tag, element.line)
    return name


def parse_link_element(element):
    link = LinkDescription(_required_name(element, "link"), element.line)
    inertial = element.find("inertial")
    if inertial is None:
        return link
    mass_element = inertial.find("mass")
    inertia_element = inertial.find("inertia")
    if mass_element is None or inertia_element is None:
        raise URDFError(f"link {link.name!r}: <inertial> needs <mass> and <inertia>",
                        "inertial", inertial.line)
    rotation, com = _origin(inertial)
    moments = {key: _bounded(np.array(_number(inertia_element, key)), MAX_INERTIA, inertia_element,
                             key).item()
               for key in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")}
    inertia = np.array([
        [moments["ixx"], moments["ixy"], moments["ixz"]],
        [moments["ixy"], moments["iyy"], moments["iyz"]],
        [moments["ixz"], moments["iyz"], moments["izz"]],
    ])
    link.has_inertial = True
    link.mass = _bounded(np.array(_number(mass_element, "value")), MAX_MASS, mass_element,
                         "value").item()
    link.com = com
    link.inertia = rotation @ inertia @ rotation.T
    return link


def parse_joint_element(element):
    name = _required_name(element, "joint")
    joint_type = element.attributes.get("type")
    if joint_type == FLOATING:
        return _floating_joint(element, name)
    if joint_type in UNSUPPORTED_JOINT_TYPES:
        raise UnsupportedJointError(
            f"joint {name!r} is of type {joint_type!r}; only fixed-base trees of "
            f"{_supported_types()} joints are supported", "joint", element.line)
    if joint_type not in JOINT_MODELS:
        raise URDFError(f"joint {name!r} has unknown type {joint_type!r}", "joint", element.line)
    model = joint_model(joint_type)
    joint = _joint_frame(element, name, joint_type)
    axis_element = element.find("axis")
    if axis_element is not None and model.moving:
        axis = _numbers(axis_element, "xyz", 3, [1.0, 0.0, 0.0])
        largest = np.max(np.abs(axis))
        if largest < 1e-12:
            raise URDFError(f"joint {name!r} has a zero axis", "axis", axis_element.line)
        axis = axis / largest           # (the norm of "0 0 1e308" overflows)
        # Exporters write an axis turned by pi/2 as "0 1 6.12323e-17" (cos(pi/2) in
        # doubles; iCub's URDF).  Such a component changes the dynamics below 1e-12
        # relative, but kept it makes every product with the axis dense in the compiled
        # kernels.
        axis[np.abs(axis) < AXIS_ROUNDING] = 0.0
        joint.axis = axis / np.linalg.norm(axis)
    limit = element.find("limit")
    if limit is not None and model.moving:
        joint.effort = _number(limit, "effort", math.inf)
        joint.velocity = _number(limit, "velocity", math.inf)
        if model.bounded:
            joint.lower = _number(limit, "lower", 0.0)
            joint.upper = _number(limit, "upper", 0.0)
            if joint.lower > joint.upper:
                raise URDFError(f"joint {name!r}: lower limit {joint.lower} exceeds upper "
                                f"limit {joint.upper}", "limit", limit.line)
        if joint.effort < 0 or joint.velocity < 0:
            raise URDFError(f"joint {name!r}: negative effort or velocity limit", "limit", limit.line)
    elif model.bounded:
        raise URDFError(f"{joint_type} joint {name!r} has no <limit> (the URDF specification "
                        "requires one)", "joint", element.line)
    dynamics = element.find("dynamics")
    if dynamics is not None:
        joint.damping = _number(dynamics, "damping", 0.0)
        joint.friction = _number(dynamics, "friction", 0.0)
    mimic = element.find("mimic")
    if mimic is not None:
        master = mimic.attributes.get("joint")
        if not master:
            raise URDFError(f"joint {name!r}: <mimic> without joint=...", "mimic", mimic.line)
        joint.mimic = Mimic(master, _number(mimic, "multiplier", 1.0), _number(mimic, "offset", 0.0))
    return joint


def _joint_frame(element, name, joint_type):
    """A joint's description with its links and origin read, the rest at defaults."""
    links = {}
    for role in ("parent", "child"):
        tag = element.find(role)
        if tag is None or not tag.attributes.get("link"):
            raise URDFError(f"joint {name!r} has no <{role} link=...>", "joint", element.line)
        links[role] = tag.attributes["link"]
    joint = JointDescription(name, joint_type, links["parent"], links["child"], element.line)
    joint.origin_rotation, joint.origin_translation = _origin(element)
    return joint


def _floating_joint(element, name):
    """A floating joint, kept only as far as :func:`_free_root` needs to accept or refuse it."""
    return _joint_frame(element, name, FLOATING)


def _free_root(links, joints, root):
    """``(root, free_root_joint)``: the URDF's root, or, where a massless root link holds
    the robot by a floating joint at the identity, that joint's child and name, the world
    link and the joint removed (the robot's free base, as Pinocchio's free-flyer).  Any
    other floating joint is refused by name."""
    floating = [joint for joint in joints.values() if joint.type == FLOATING]
    if not floating:
        return root, None
    joint = floating[0]
    below_root = [other.name for other in joints.values() if other.parent == root]
    problem = None
    if joint.parent != root or len(floating) > 1:
        problem = "only a floating joint from the root link (the robot's free base) is supported"
    elif below_root != [joint.name]:
        problem = (f"the root link {root!r} it hangs from holds other joints "
                   f"({', '.join(map(repr, below_root))}); a free base needs it alone")
    elif links[root].has_inertial and links[root].mass > 0:
        problem = f"the root link {root!r} it hangs from has mass (a world link has none)"
    elif not (np.array_equal(joint.origin_rotation, np.eye(3))
              and not np.any(joint.origin_translation)):
        problem = "its <origin> is not the identity (the base pose is q's, in the world)"
    if problem:
        raise UnsupportedJointError(f"joint {joint.name!r} is of type 'floating': {problem}",
                                    "joint", joint.line)
    del links[root], joints[joint.name]
    return joint.child, joint.name


def _check_topology(name, links, joints, root_element):
    child_of = {}
    for joint in joints.values():
        for role, link in (("parent", joint.parent), ("child", joint.child)):
            if link not in links:
                raise URDFError(f"joint {joint.name!r} names {role} link {link!r}, which is "
                                "not defined", "joint", joint.line)
        if joint.child in child_of:
            raise URDFError(f"link {joint.child!r} is the child of two joints "
                            f"({child_of[joint.child]!r} and {joint.name!r}); URDF must be a tree",
                            "joint", joint.line)
        child_of[joint.child] = joint.name
    roots = [link for link in links if link not in child_of]
    if len(roots) != 1:
        detail = "none (the joints form a cycle)" if not roots else ", ".join(map(repr, roots))
        raise URDFError(f"robot {name!r} must have exactly one root link; found {detail}",
                        "robot", root_element.line)
    reached, frontier = {roots[0]}, [roots[0]]
    children = {}
    for joint in joints.values():
        children.setdefault(joint.parent, []).append(joint.child)
    while frontier:
        for child in children.get(frontier.pop(), []):
            reached.add(child)
            frontier.append(child)
    unreached = [link for link in links if link not in reached]
    if unreached:
        raise URDFError(f"links {unreached!r} are not connected to the root {roots[0]!r} "
                        "(the joints form a cycle)", "robot", root_element.line)
    return roots[0]


def parse_urdf(source, package_paths=None, xacro_timeout=xacro_expand.DEFAULT_TIMEOUT,
               allow_xacro=True, allow_path=True):
    """Parse a URDF path, XML string or xacro into a :class:`RobotDescription`.

    ``package_paths``, ``xacro_timeout``, ``allow_xacro`` and ``allow_path``: see
    :func:`read_description_text`.
    """
    return parse_urdf_xml(read_description_text(source, package_paths, xacro_timeout,
                                                allow_xacro, allow_path))


def parse_urdf_xml(text):
    """The :class:`RobotDescription` of URDF XML ``text`` as it is: never expanded with
    xacro, never taken for a file path (for text that is already URDF, such as
    :func:`read_description_text`'s)."""
    root_element = parse_xml(text)
    if root_element.tag != "robot":
        raise URDFError(f"the root element is <{root_element.tag}>, expected <robot>",
                        root_element.tag, root_element.line)
    _warn_undeclared_prefixes(root_element)
    return description_from_element(root_element)


def _warn_undeclared_prefixes(root_element):
    """One DescriptionWarning naming the namespace prefixes used without an ``xmlns:``
    declaration.

    Drake's URDFs write ``<drake:joint>`` and ``<limit drake:acceleration=...>``
    without declaring ``drake:``; urdfdom, Pinocchio and the ROS tools ignore what
    they do not know, and so does this reader (it reads no prefixed name).
    """
    uses = {}     # prefix -> [count, first line]

    def used(name, line):
        prefix, colon, _ = name.partition(":")
        if colon and prefix not in declared[-1] and prefix not in ("xml", "xmlns"):
            uses.setdefault(prefix, [0, line])[0] += 1

    declared = [frozenset()]
    stack = [(root_element, False)]
    while stack:
        element, leaving = stack.pop()
        if leaving:
            declared.pop()
            continue
        declared.append(declared[-1] | {name[len("xmlns:"):] for name in element.attributes
                                        if name.startswith("xmlns:")})
        used(element.tag, element.line)
        for name in element.attributes:
            used(name, element.line)
        stack.append((element, True))
        stack.extend((child, False) for child in reversed(element.children))
    if uses:
        listed = ", ".join(f"{prefix}: ({count} uses, first at line {line})"
                           for prefix, (count, line) in uses.items())
        warnings.warn(f"robot {root_element.attributes.get('name', '')!r}: elements and "
                      f"attributes in undeclared namespace prefixes are ignored: {listed}",
                      DescriptionWarning, stacklevel=3)


def description_from_element(root_element, parse_link=parse_link_element,
                             parse_joint=parse_joint_element):
    """The :class:`RobotDescription` of a ``<robot>`` element, with every check of the reader.

    ``parse_link`` / ``parse_joint`` read one element; the reader of
    urdf_parser_py objects wraps them so that errors name the link or joint
    (objects have no line numbers).
    """
    name = root_element.attributes.get("name", "")
    links, joints = {}, {}
    for element in root_element.find_all("link"):
        link = parse_link(element)
        if link.name in links:
            raise URDFError(f"duplicate link name {link.name!r}", "link", element.line)
        links[link.name] = link
    for element in root_element.find_all("joint"):
        joint = parse_joint(element)
        if joint.name in joints:
            raise URDFError(f"duplicate joint name {joint.name!r}", "joint", element.line)
        joints[joint.name] = joint
    if not links:
        raise URDFError(f"robot {name!r} has no links", "robot", root_element.line)
    root = _check_topology(name, links, joints, root_element)
    root, free_root_joint = _free_root(links, joints, root)
    # Reduced models (Talos's talos_reduced.urdf) lock joints by making them fixed and
    # keep their <mimic>: a joint that cannot move follows nothing.
    _ignore_mimics(name, [(joint, repr(joint.mimic.joint)) for joint in joints.values()
                          if joint.mimic is not None and not joint_model(joint.type).moving],
                   "a fixed joint cannot follow another; the <mimic> of {} fixed joint(s) is "
                   "ignored")
    # A <mimic> naming no joint that moves is a broken file (example-robot-data's
    # alex_psyonic_hands.urdf names "index_q1" for "Left_index_q1"); Pinocchio and KDL
    # ignore <mimic>, MoveIt logs it and goes on.  The joint moves on its own.
    unfollowable = [(joint, _unfollowable(joints.get(joint.mimic.joint), joint.mimic.joint))
                    for joint in joints.values() if joint.mimic is not None]
    _ignore_mimics(name, [(joint, why) for joint, why in unfollowable if why],
                   "the <mimic> of {} joint(s) names no joint that moves and is ignored "
                   "(each moves on its own)")
    for joint in joints.values():
        _check_mimic_chain(joints, joint)
    return RobotDescription(name, links, joints, root, free_root_joint)


def _ignore_mimics(name, ignored, explanation):
    """Drop the <mimic> of each ``(joint, what it names)`` in ``ignored``, with one
    DescriptionWarning for all: ``explanation`` (its ``{}`` the count), then the list."""
    if not ignored:
        return
    listed = ", ".join(f"{joint.name!r} (line {joint.line}, mimics {what})"
                       for joint, what in ignored)
    warnings.warn(f"robot {name!r}: {explanation.format(len(ignored))}: {listed}",
                  DescriptionWarning, stacklevel=3)
    for joint, _ in ignored:
        joint.mimic = None


def _unfollowable(master, name):
    """Why a <mimic> of joint ``name`` (``master``, None if there is none) cannot be
    followed, or ""."""
    if master is None:
        return f"unknown joint {name!r}"
    if not joint_model(master.type).moving:
        return f"{name!r}, a {master.type} joint"
    return ""


def _check_mimic_chain(joints, joint):
    """Refuse a mimic chain that comes back on itself (it has no independent joint)."""
    current, seen = joint, {joint.name}
    while current.mimic is not None:
        current = joints[current.mimic.joint]
        if current.name in seen:
            raise URDFError(f"mimic joints form a cycle through {joint.name!r}", "mimic",
                            joint.line)
        seen.add(current.name)


def _supported_types():
    names = list(JOINT_MODELS)
    return ", ".join(names[:-1]) + " and " + names[-1]

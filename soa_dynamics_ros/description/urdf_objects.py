"""Robot descriptions held as ``urdf_parser_py.urdf.Robot`` objects.

ROS Python tools pass robot models around as urdf-parser-py objects
(``URDF.from_xml_string`` on ``/robot_description``).  :func:`description_from_robot`
turns one into the :class:`~soa_dynamics_ros.description.urdf.RobotDescription` the XML
reader produces from the same text, through the reader's own checks: each
object is presented as the element it was read from, holding its numbers as
they are (no text in between, so every quantity is the XML path's, bit for
bit), and a piece urdf-parser-py left as ``None`` is a missing element, to
which the reader applies the URDF specification (a missing ``<origin>`` is the
identity, a missing ``<axis>`` is ``1 0 0``, a revolute joint without
``<limit>`` is refused).

urdf-parser-py is never imported here: an object of its ``Robot`` class can
only exist once its owner has imported the module, and the library keeps
numpy as its only dependency.
"""
import sys

from ..errors import URDFError
from .urdf import XmlElement, description_from_element, parse_joint_element, parse_link_element

ROBOT_CLASS = "urdf_parser_py.urdf.Robot"


def is_urdf_parser_robot(source):
    """Whether ``source`` is a ``urdf_parser_py.urdf.Robot`` (or urdfdom_py's, the same module)."""
    module = sys.modules.get("urdf_parser_py.urdf")
    robot_class = getattr(module, "Robot", None)
    return isinstance(robot_class, type) and isinstance(source, robot_class)


def description_from_robot(robot):
    """The :class:`~soa_dynamics_ros.description.urdf.RobotDescription` of a urdf_parser_py ``Robot``.

    Raises :class:`~soa_dynamics_ros.errors.URDFError` (or a subclass) naming
    the link or joint for everything the XML reader refuses, and for pieces of
    the wrong type.
    """
    if not is_urdf_parser_robot(robot):
        raise URDFError(f"a robot description must be a path, an XML string or a {ROBOT_CLASS}, "
                        f"not {type(robot).__name__}")
    name = _text(getattr(robot, "name", None), "robot name")
    links = [_link_element(link) for link in _items(robot, "links")]
    joints = [_joint_element(joint) for joint in _items(robot, "joints")]
    root = _element("robot", links + joints, name=name)
    return description_from_element(root, _naming_errors("link", parse_link_element),
                                    _naming_errors("joint", parse_joint_element))


def _items(robot, attribute):
    items = getattr(robot, attribute, None)
    if not isinstance(items, (list, tuple)):
        raise URDFError(f"robot.{attribute} must be a list, not {type(items).__name__}")
    return items


def _text(value, what):
    """A name as the reader sees it: a string, or absent (``None``) for the reader to refuse."""
    if value is not None and not isinstance(value, str):
        raise URDFError(f"{what} {value!r} is not a string")
    return value


def _element(tag, children=(), **attributes):
    """An element holding the attributes that are set; ``None`` children are absent elements."""
    return XmlElement(tag, {key: value for key, value in attributes.items() if value is not None},
                      None, [child for child in children if child is not None])


def _fields(tag, item, names):
    """The element ``<tag>`` of a urdf_parser_py object (``None``: absent), its fields as attributes."""
    if item is None:
        return None
    return _element(tag, **{name: getattr(item, name, None) for name in names})


def _link_element(link):
    name = _text(getattr(link, "name", None), "link name")
    inertial = getattr(link, "inertial", None)
    inertial_element = None
    if inertial is not None:
        mass = getattr(inertial, "mass", None)
        inertial_element = _element("inertial", [
            _fields("origin", getattr(inertial, "origin", None), ("xyz", "rpy")),
            None if mass is None else _element("mass", value=mass),
            _fields("inertia", getattr(inertial, "inertia", None),
                    ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")),
        ])
    return _element("link", [inertial_element], name=name)


def _joint_element(joint):
    name = _text(getattr(joint, "name", None), "joint name")
    where = f"joint {name!r}:"
    parent = _text(getattr(joint, "parent", None), f"{where} parent link")
    child = _text(getattr(joint, "child", None), f"{where} child link")
    mimic = getattr(joint, "mimic", None)
    if mimic is not None:
        _text(getattr(mimic, "joint", None), f"{where} mimicked joint")
    axis = getattr(joint, "axis", None)
    return _element("joint", [
        None if parent is None else _element("parent", link=parent),
        None if child is None else _element("child", link=child),
        _fields("origin", getattr(joint, "origin", None), ("xyz", "rpy")),
        None if axis is None else _element("axis", xyz=axis),
        _fields("limit", getattr(joint, "limit", None), ("lower", "upper", "effort", "velocity")),
        _fields("dynamics", getattr(joint, "dynamics", None), ("damping", "friction")),
        _fields("mimic", mimic, ("joint", "multiplier", "offset")),
    ], name=name, type=getattr(joint, "type", None))


def _naming_errors(kind, parse):
    """``parse`` whose errors name the link or joint, as line numbers do for XML."""
    def parse_naming_errors(element):
        try:
            return parse(element)
        except URDFError as error:
            name = element.attributes.get("name")
            if not name or repr(name) in str(error):
                raise
            named = type(error)(f"{kind} {name!r}: {error}")
            named.element, named.line = error.element, error.line
            raise named from None
    return parse_naming_errors

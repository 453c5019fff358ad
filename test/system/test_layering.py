"""The architecture, checked by reading the source: layers import only downwards,
ROS stays in its two folders, and no module reaches into another's internals."""
import ast

from support.robots import REPO

PACKAGE = REPO / "soa_dynamics_ros"
# Lowest first: a module may import its own layer and the layers before it.
LAYERS = ["errors", "validation", "multibody", "description", "algorithms", "kernels", "model",
          "estimation", "plant", "embedded", "ros", "sim"]
# The package's front door and the old-path alias import the model and the reader.
ENTRY_MODULES = {"__init__", "urdf"}
ROS_LAYERS = {"ros", "sim"}
ROS_PACKAGES = {"rclpy", "rosidl_runtime_py", "builtin_interfaces", "std_msgs", "sensor_msgs",
                "geometry_msgs", "trajectory_msgs", "visualization_msgs", "diagnostic_msgs",
                "rcl_interfaces", "rosgraph_msgs", "std_srvs"}
GENERATED = {"msg", "srv"}           # the package's own interfaces, built by rosidl
# The standard library's immediate exit; xacro's package lookup, which xacro offers no
# public hook for (description/xacro.py says why); rclpy 9.1.2's EventsExecutor
# workaround (ros/process.py says why); an object of the same class (a traced value's
# negation, a tree view being made, a floating-base model's fixed-base chain, whose
# compiled tree and packed parameters its warm path reads without a property's call).
PRIVATE_NAMES_ALLOWED = {"os._exit", "xacro.substitution_args._eval_find",
                         "subscription._callback_type", "other._neg_of", "view._singular_below",
                         "self._chain._compiled", "self._chain._params"}


def library_modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE).parts
        if parts[0] in GENERATED or "__pycache__" in parts:
            continue
        layer = parts[0].removesuffix(".py")
        yield path, parts, layer, ast.parse(path.read_text())


def imported_layers(parts, tree):
    """(line, first component inside soa_dynamics_ros) of every import of the package."""
    package = list(parts[:-1])
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level:
            target = package[:len(package) - (node.level - 1)] + (
                node.module.split(".") if node.module else [])
            yield node.lineno, target[0] if target else node.names[0].name
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("soa_dynamics_ros."):
            yield node.lineno, node.module.split(".")[1]
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("soa_dynamics_ros."):
                    yield node.lineno, alias.name.split(".")[1]


def external_packages(tree):
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from ((node.lineno, alias.name.split(".")[0]) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            yield node.lineno, node.module.split(".")[0]


def test_every_module_belongs_to_a_layer():
    unknown = {layer for _, _, layer, _ in library_modules()} - set(LAYERS) - ENTRY_MODULES
    assert not unknown, f"modules outside the layers table: {sorted(unknown)}"


def test_layers_import_only_downwards():
    upward = []
    for path, parts, layer, tree in library_modules():
        if layer in ENTRY_MODULES:
            continue
        for line, target in imported_layers(parts, tree):
            if target in GENERATED:
                ok = layer in ROS_LAYERS
            elif target == "RobotModel":        # `from .. import RobotModel`: the model layer
                ok = LAYERS.index(layer) >= LAYERS.index("model")
            else:
                ok = target in LAYERS and LAYERS.index(target) <= LAYERS.index(layer)
            if not ok:
                upward.append(f"{path.relative_to(REPO)}:{line}: {layer} imports {target}")
    assert not upward, upward


def test_only_the_ros_and_sim_folders_import_ros():
    found = [f"{path.relative_to(REPO)}:{line}: {package}"
             for path, _, layer, tree in library_modules() if layer not in ROS_LAYERS
             for line, package in external_packages(tree) if package in ROS_PACKAGES]
    assert not found, found


def test_no_module_uses_another_objects_private_names():
    """A module's own ``self._x`` is its business; ``other._x`` of another module is not."""
    reaching = []
    for path, _, _, tree in library_modules():
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                names = [alias.name for alias in node.names if alias.name.startswith("_")
                         and not alias.name.startswith("__")]
            elif (isinstance(node, ast.Attribute) and node.attr.startswith("_")
                  and not node.attr.startswith("__")
                  and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))):
                names = [ast.unparse(node)]
            else:
                continue
            reaching += [f"{path.relative_to(REPO)}:{node.lineno}: {name}" for name in names
                         if name not in PRIVATE_NAMES_ALLOWED]
    assert not reaching, reaching

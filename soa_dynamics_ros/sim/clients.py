"""Driving the model node and the simulated arm from another process: their processes,
service calls, parameters, the wait for compiled kernels and a node spun in a thread.

Shared by the demos, the benchmarks and the tests; ROS is imported where it is
used, so that importing this module needs none.
"""
import contextlib
import pathlib
import sys
import threading
import time

from soa_dynamics_ros.ros.processes import ChildProcess

REPO = pathlib.Path(__file__).resolve().parents[2]     # the repository (editable install)


def config_dir():
    if (REPO / "config" / "panda_sim.yaml").is_file():
        return REPO / "config"
    from ament_index_python.packages import get_package_share_directory
    return pathlib.Path(get_package_share_directory("soa_dynamics_ros")) / "config"


def start_process(name, module, ros_args, log_dir, env):
    """``python -m module --ros-args ...`` with its log in ``log_dir/name.log``."""
    return ChildProcess([sys.executable, "-m", module, "--ros-args", *ros_args],
                        log_dir / f"{name}.log", env)


def wait_until(condition, timeout, what):
    """Return once ``condition()`` holds; TimeoutError("``what`` within ...") after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} within {timeout:.0f} s")
        time.sleep(0.02)


def call_service(node, client, request, timeout=10.0):
    if not client.wait_for_service(timeout_sec=timeout):
        raise TimeoutError(f"service {client.srv_name} not available")
    future = client.call_async(request)
    done = threading.Event()
    future.add_done_callback(lambda _: done.set())
    if not done.wait(timeout):
        raise TimeoutError(f"no answer from {client.srv_name}")
    return future.result()


def parameter_value(value):
    """rcl_interfaces/ParameterValue of a bool, string, number, string list or number list."""
    from rcl_interfaces.msg import ParameterType, ParameterValue
    if isinstance(value, bool):
        return ParameterValue(type=ParameterType.PARAMETER_BOOL, bool_value=value)
    if isinstance(value, str):
        return ParameterValue(type=ParameterType.PARAMETER_STRING, string_value=value)
    if isinstance(value, (int, float)):
        return ParameterValue(type=ParameterType.PARAMETER_DOUBLE, double_value=float(value))
    values = list(value)
    if values and all(isinstance(v, str) for v in values):
        return ParameterValue(type=ParameterType.PARAMETER_STRING_ARRAY, string_array_value=values)
    return ParameterValue(type=ParameterType.PARAMETER_DOUBLE_ARRAY,
                          double_array_value=[float(v) for v in values])


def set_parameters(node, values, target="/soa_dynamics"):
    """Set string, number or number-list parameters ``{name: value}`` of ``target`` in one
    atomic request: one exchange, and the target sees them all at once (a sim then steps
    with none of them half set); RuntimeError if refused."""
    from rcl_interfaces.msg import Parameter
    from rcl_interfaces.srv import SetParametersAtomically
    client = node.create_client(SetParametersAtomically, f"{target}/set_parameters_atomically")
    request = SetParametersAtomically.Request(parameters=[
        Parameter(name=name, value=parameter_value(value)) for name, value in values.items()])
    try:
        result = call_service(node, client, request).result
    finally:
        node.destroy_client(client)
    if not result.successful:
        raise RuntimeError(f"setting {', '.join(values)} of {target} refused: {result.reason}")


def set_parameter(node, name, value, target="/soa_dynamics"):
    """Set one string, number or number-list parameter of ``target``; RuntimeError if refused."""
    set_parameters(node, {name: value}, target)


def wait_for_compiled_kernels(node, longest):
    """Run the loop until the node answers from its compiled kernels, at most ``longest`` s.

    The node compiles a robot's kernels once, in a child process (seconds),
    and then loads them: the demo measures the node as it runs from then on.
    Returns the mean feedforward compute time [us] of the last diagnostics
    period (0 while no joint states arrive).
    """
    from diagnostic_msgs.msg import DiagnosticArray
    periods = []    # (kernels, mean compute us) per diagnostics period

    def on_diagnostics(message):
        for status in message.status:
            values = {kv.key: kv.value for kv in status.values}
            if values.get("feedforward_compute_mean_us") and "kernels" in values:
                periods.append((values["kernels"], float(values["feedforward_compute_mean_us"])))
    subscription = node.create_subscription(DiagnosticArray, "/diagnostics", on_diagnostics, 10)
    print("[demo] warming up (the first run for a robot compiles its kernels, a few seconds) ...")
    deadline = time.monotonic() + longest
    try:
        # Two diagnostics periods on the compiled kernels: the load pause is over.
        while time.monotonic() < deadline and not (
                len(periods) >= 2 and all(p[0] == "compiled" for p in periods[-2:])):
            time.sleep(0.1)
    finally:
        node.destroy_subscription(subscription)
    return periods[-1][1] if periods else float("nan")


@contextlib.contextmanager
def spinning_node(name):
    """An rclpy node of its own context, spun in a daemon thread while the block runs."""
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    context = rclpy.Context()
    rclpy.init(context=context)
    node = rclpy.create_node(name, context=context)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    spinning = threading.Thread(target=lambda: _spin(executor, context), daemon=True)
    spinning.start()
    try:
        yield node
    finally:
        executor.shutdown()
        rclpy.try_shutdown(context=context)
        spinning.join(timeout=5)
        node.destroy_node()


def _spin(executor, context):
    while context.ok():
        try:
            executor.spin_once(timeout_sec=0.05)
        except Exception:  # noqa: BLE001 - shutdown races end the loop
            if not context.ok():
                return
            raise

# Convenience aliases; the scripts work without make.
.PHONY: setup test demo bench soak

# One-command set-up: .venv with ROS 2 Kilted wheels, CMake build, editable install.
setup:
	bash scripts/setup.sh

# Test suite (localhost-only discovery, a random ROS_DOMAIN_ID unless one is set).
test:
	bash scripts/test.sh

# Speed against Pinocchio, warm and cold, the node's latency, and the exported C library against
# Pinocchio's C++ (bench/bench_export_c.py); tables in bench/results/ (BENCH_ARGS=--quick for a smoke).
bench:
	bash bench/run_all.sh $(BENCH_ARGS)

# Load and soak of the node: 1 kHz joint states + 200 requests/s for 10 min (docs/robustness.md).
soak:
	.venv/bin/python bench/bench_soak.py $(BENCH_ARGS)

# Closed-loop demo: MuJoCo arm + model node, gravity hold (10 s), a pick-and-place without/with
# trajectory feedforward, then estimation (external torques, wrench, contact, payload) against the
# sim's truth; prints a report, writes build/demo/closed_loop.png, trajectory_feedforward.png and
# estimation.png.
demo:
	.venv/bin/python -m soa_dynamics_ros.sim.demo

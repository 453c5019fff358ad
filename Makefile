# Convenience aliases; the scripts work without make.
.PHONY: setup test bench

# One-command set-up: .venv with ROS 2 Kilted wheels, CMake build, editable install.
setup:
	bash scripts/setup.sh

# Test suite (localhost-only discovery, a random ROS_DOMAIN_ID unless one is set).
test:
	bash scripts/test.sh

# Speed against Pinocchio/PyKDL; tables in bench/results/ (BENCH_ARGS=--quick for a smoke).
bench:
	.venv/bin/python bench/bench_dynamics.py $(BENCH_ARGS)

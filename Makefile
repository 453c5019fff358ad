# Convenience aliases; the scripts work without make.
.PHONY: setup test

# One-command set-up: .venv with ROS 2 Kilted wheels, CMake build, editable install.
setup:
	bash scripts/setup.sh

# Test suite (localhost-only discovery, a random ROS_DOMAIN_ID unless one is set).
test:
	bash scripts/test.sh

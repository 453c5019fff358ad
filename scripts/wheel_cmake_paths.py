"""Point the ROS wheels' CMake files at this interpreter's Python and numpy headers.

usage: <venv>/bin/python scripts/wheel_cmake_paths.py <venv>/share

The ros-*-* wheels' exported CMake files hard-code the wheel builder's include
directories (/opt/python/cp3xx-cp3xx/...); CMake stops on a path that does not
exist.  scripts/setup.sh and scripts/ci_workspace.sh run this after pip.
"""
import pathlib
import re
import sys
import sysconfig

import numpy

NUMPY_INCLUDE = re.compile(r"/opt/python/cp3\d+-cp3\d+/lib/python3\.\d+/site-packages/numpy/_core/include")
PYTHON_INCLUDE = re.compile(r"/opt/python/cp3\d+-cp3\d+/include/python3\.\d+")


def main(share):
    python_include = sysconfig.get_paths()["include"]
    numpy_include = numpy.get_include()
    changed = 0
    left = []
    for path in pathlib.Path(share).rglob("*.cmake"):
        try:
            text = path.read_text()
        except (UnicodeDecodeError, OSError):
            continue
        if "/opt/python/" not in text:
            continue
        new = PYTHON_INCLUDE.sub(lambda _: python_include, NUMPY_INCLUDE.sub(lambda _: numpy_include, text))
        if new != text:
            path.write_text(new)
            changed += 1
        if "/opt/python/" in new:
            left.append(str(path))
    print(f"[setup]   {changed} file(s) rewritten (python: {python_include}; numpy: {numpy_include})")
    for path in left:
        print(f"[setup]   note: /opt/python/ still mentioned in {path}")


if __name__ == "__main__":
    main(sys.argv[1])

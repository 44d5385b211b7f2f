#!/bin/sh
# The Python suite against the package as `pip install .` installs it (docs/python.md, "Installing
# with pip"): a fresh virtual environment that sees Debian's packages (pytest, setuptools), the
# repository installed into it without build isolation or an index (nothing is downloaded), reusing
# the CMake build tree that runs this test, then pytest from outside the source tree with no
# PYTHONPATH: what is imported is the installed package.
#   pip_install_test.sh PYTHON SOURCE_DIR BUILD_DIR VENV_DIR [pytest arguments...]
set -eu
python=$1 source_dir=$2 build_dir=$3 venv=$4
shift 4
rm -rf "$venv"
"$python" -m venv --system-site-packages "$venv"
cd "$source_dir"
GPUSCHED_CMAKE_BUILD_DIR="$build_dir" "$venv/bin/python" -m pip install --no-build-isolation --no-index --no-deps \
  --disable-pip-version-check --quiet .
cd "$venv"
unset PYTHONPATH
"$venv/bin/python" -c "import gpusched, os; assert gpusched.__file__.startswith('$venv'), gpusched.__file__; \
assert os.path.isdir(os.path.join(gpusched.data_dir(), 'alibaba-gpu-v2023')), gpusched.data_dir()"
exec "$venv/bin/python" -m pytest "$@"

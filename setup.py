"""The setuptools half of `pip install .` (pyproject.toml): the package python/gpusched/ plus its
compiled module gpusched._core, built by the project's CMake (target gpusched_python) and copied
where setuptools expects it, and the shipped data (data/) as package data so that an installed
wheel finds its traces without the source tree.

Environment:
  GPUSCHED_CMAKE_BUILD_DIR  reuse a configured build tree (CI's Release build) instead of
                            configuring a fresh one under setuptools' build directory;
  GPUSCHED_BUILD_JOBS       parallel build jobs (default: the number of CPUs).
"""
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent


def project_version() -> str:
    text = (ROOT / "CMakeLists.txt").read_text(encoding="utf-8")
    return re.search(r"project\(gpusched VERSION ([0-9.]+)", text).group(1)


class CMakeExtension(Extension):
    def __init__(self, name: str) -> None:
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    def build_extension(self, ext: Extension) -> None:
        target = Path(self.get_ext_fullpath(ext.name)).resolve()
        build_dir = os.environ.get("GPUSCHED_CMAKE_BUILD_DIR")
        if build_dir:
            build_dir = Path(build_dir).resolve()
            if not (build_dir / "CMakeCache.txt").exists():
                raise RuntimeError(f"GPUSCHED_CMAKE_BUILD_DIR={build_dir}: not a configured CMake build tree")
        else:
            build_dir = Path(self.build_temp).resolve() / "cmake"
            configure = ["cmake", "-S", str(ROOT), "-B", str(build_dir), "-DCMAKE_BUILD_TYPE=Release",
                         "-DGPUSCHED_PYTHON=ON", f"-DPython3_EXECUTABLE={sys.executable}",
                         "-DGPUSCHED_BUILD_TESTS=OFF", "-DGPUSCHED_BUILD_TOOL=OFF", "-DGPUSCHED_BUILD_EXAMPLES=OFF",
                         "-DGPUSCHED_BUILD_BENCHMARKS=OFF", "-DGPUSCHED_BUILD_C_API=OFF", "-DGPUSCHED_INSTALL=OFF"]
            if shutil.which("ninja"):
                configure += ["-G", "Ninja"]
            subprocess.run(configure, check=True)
        jobs = os.environ.get("GPUSCHED_BUILD_JOBS") or str(os.cpu_count() or 1)
        subprocess.run(["cmake", "--build", str(build_dir), "--target", "gpusched_python", "-j", jobs], check=True)
        built = sorted((build_dir / "python" / "gpusched").glob("_core*.so"))
        if not built:
            raise RuntimeError(f"{build_dir}/python/gpusched: the CMake build made no _core module")
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(built[0], target)


class BuildPyWithData(build_py):
    """The package's Python files, then data/ beside them (gpusched/data)."""

    def run(self) -> None:
        super().run()
        if not self.dry_run:
            shutil.copytree(ROOT / "data", Path(self.build_lib) / "gpusched" / "data", dirs_exist_ok=True)


(ROOT / ".pybuild").mkdir(exist_ok=True)  # setuptools' build and egg-info base (not CMake's build/)
setup(
    version=project_version(),
    packages=["gpusched"],
    package_dir={"gpusched": "python/gpusched"},
    ext_modules=[CMakeExtension("gpusched._core")],
    cmdclass={"build_ext": CMakeBuild, "build_py": BuildPyWithData},
    options={"build": {"build_base": ".pybuild"}, "egg_info": {"egg_base": ".pybuild"}},
    zip_safe=False,
)

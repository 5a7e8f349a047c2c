"""`pip install .`: the tenferro Python module, built by CMake (docs/python.md).

The extension, the dlopen'ed provider modules and the linalg provider table
land next to each other in the package, where the library finds them
(Note [Locating provider files] in include/tenferro/base/build_info.h).

Environment:
  TENFERRO_CMAKE_BUILD_DIR  package the module of this existing, built build
                            tree instead of configuring and building one;
  CMAKE_ARGS                extra configure arguments (e.g. -DTENFERRO_ARCH=x86-64-v3
                            for a package that runs on other machines);
  CMAKE_BUILD_PARALLEL_LEVEL  build jobs (default: every CPU).
"""

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent
SETUPTOOLS_DIR = "build/python-setuptools"  # keeps build/ and egg-info out of the sources


def project_version():
    text = (ROOT / "CMakeLists.txt").read_text()
    return re.search(r"project\(\s*tenferro\s+VERSION\s+([0-9.]+)", text).group(1)


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        prebuilt = os.environ.get("TENFERRO_CMAKE_BUILD_DIR")
        build_dir = Path(prebuilt).resolve() if prebuilt else Path(self.build_temp).resolve() / "cmake"
        if not prebuilt:
            configure = [
                "cmake", "-S", str(ROOT), "-B", str(build_dir),
                "-DCMAKE_BUILD_TYPE=Release",
                "-DTENFERRO_BUILD_TESTS=OFF",
                "-DTENFERRO_BUILD_BENCHMARKS=OFF",
                f"-DTENFERRO_PYTHON_EXECUTABLE={sys.executable}",
            ]
            if shutil.which("ninja"):
                configure += ["-G", "Ninja"]
            configure += shlex.split(os.environ.get("CMAKE_ARGS", ""))
            subprocess.check_call(configure)
            jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL", str(os.cpu_count() or 1))
            subprocess.check_call(["cmake", "--build", str(build_dir), "--target", "tenferro_python", "--parallel", jobs])
        package = build_dir / "python" / "tenferro"
        built = sorted(package.glob("_tenferro*.so"))
        if not built:
            sys.exit(f"tenferro: no extension module in {package}: the CMake configure step skipped the Python "
                     "module (see its 'tenferro python:' message) or the build tree was not built")
        target = Path(self.get_ext_fullpath(ext.name))
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(built[0], target)
        shutil.copy2(package / "_version.py", target.parent / "_version.py")
        # tenferro._mpi (built when CMake found MPI), the provider modules and
        # data, next to the extension.
        extras = list(package.glob("_mpi*.so"))
        extras += list((build_dir / "linalg_modules").glob("*.so")) + list((build_dir / "blas_modules").glob("*.so"))
        extras.append(build_dir / "data" / "linalg_provider_table.json")
        for f in extras:
            shutil.copy2(f, target.parent / f.name)


setup(
    version=project_version(),
    ext_modules=[Extension("tenferro._tenferro", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
    package_data={"tenferro": ["*.so", "*.json", "*.pyi", "py.typed"]},
    options={"build": {"build_base": SETUPTOOLS_DIR}, "egg_info": {"egg_base": SETUPTOOLS_DIR}},
    zip_safe=False,
)

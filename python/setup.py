"""Builds the colstore wheel: the Python package with the SQLite module inside.

packaging/build.sh (`make wheel`) stages this folder beside the built
module (colstore/colstore.so) and runs `pip wheel --no-build-isolation`
there, with Debian's setuptools and wheel: no network.  The module is a SQLite extension, not a CPython
extension, so the wheel is tagged for any Python 3 (py3-none) but for this
platform only (linux_x86_64 or whatever the build machine is): it carries
machine code.  It links against the system's libnuma, libgomp, libzstd,
zlib, libsnappy and liblz4 (SQLite itself is the process that loads it); colstore.load() names the
Debian packages when one is missing.
"""
import os

from setuptools import setup
from setuptools.dist import Distribution

try:
    from wheel.bdist_wheel import bdist_wheel
except ImportError:  # pragma: no cover - wheel is a build requirement
    bdist_wheel = None

HERE = os.path.dirname(os.path.abspath(__file__))


class BinaryDistribution(Distribution):
    """A distribution with machine code in it, so bdist_wheel tags the platform."""

    def has_ext_modules(self):
        return True


cmdclass = {}
if bdist_wheel is not None:
    class PlatformWheel(bdist_wheel):
        """py3-none-<platform>: any CPython 3 (no Python ABI is used), this platform."""

        def finalize_options(self):
            super().finalize_options()
            self.root_is_pure = False

        def get_tag(self):
            _, _, plat = super().get_tag()
            return "py3", "none", plat

    cmdclass["bdist_wheel"] = PlatformWheel

if not os.path.exists(os.path.join(HERE, "colstore", "colstore.so")):
    raise SystemExit("colstore: colstore/colstore.so is missing; build the wheel with `make wheel`, "
                     "which builds the module and puts it there")

with open(os.path.join(HERE, "README.md"), encoding="utf-8") as f:
    long_description = f.read()

setup(
    name="colstore",
    version="0.1.0",
    description="Query large column files from SQLite at memory speed (a SQLite loadable extension)",
    long_description=long_description,
    long_description_content_type="text/markdown",
    packages=["colstore"],
    package_data={"colstore": ["colstore.so"]},
    python_requires=">=3.8",
    extras_require={"numpy": ["numpy"], "dask": ["numpy", "pandas", "dask[dataframe]", "distributed"]},
    distclass=BinaryDistribution,
    cmdclass=cmdclass,
    zip_safe=False,
)

"""colstore for Python: load the bundled SQLite extension with one call.

A SQLite extension is a shared library that each connection loads; the hard
part for a user is finding it.  This package carries the module inside
itself (colstore/colstore.so, put there by `make wheel`), so
`loadable_path()` is always right for the installed copy and `load(con)` is
the one call a user needs, from any directory and any virtual environment:

    import sqlite3, colstore
    con = sqlite3.connect("my.db")
    con.enable_load_extension(True)
    colstore.load(con)

The path handed to SQLite has no suffix: sqlite3_load_extension adds the
platform's own (".so"), and derives the entry point sqlite3_colstore_init
from the file name, so the module file must stay named colstore.

The numpy helpers (rows, mask, read, append) live in colstore.arrays and are
imported on first use, so the package loads, and says what to install,
where numpy is missing.
"""
import os

__version__ = "0.1.0"
__all__ = ["load", "loadable_path", "rows", "mask", "read", "append", "__version__"]

# The runtime libraries the module links against, as Debian names them: what
# a load that fails on a missing shared object asks the user to install.
RUNTIME_PACKAGES = "libnuma1 libgomp1 libzstd1 zlib1g libsnappy1v5 liblz4-1"


def loadable_path():
    """The path of the bundled module without its suffix, as
    sqlite3.Connection.load_extension and SQL's load_extension() take it.

    COLSTORE_LOADABLE_PATH, where set, names another module instead (without
    its suffix): for running the package from a source tree against a build,
    as the benchmarks do; worker processes inherit it."""
    override = os.environ.get("COLSTORE_LOADABLE_PATH")
    if override:
        return os.path.abspath(override)
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "colstore")


def load(con):
    """Loads colstore into the sqlite3 connection con.

    Loading must be enabled first (con.enable_load_extension(True)), as for
    any extension: the package does not widen what a connection allows.
    """
    path = loadable_path()
    if not os.path.exists(path + ".so"):
        raise ImportError("colstore: the module is missing from the package (%s.so); "
                          "reinstall the wheel built by `make wheel`" % path)
    try:
        con.load_extension(path)
    except Exception as e:
        text = str(e)
        if "not authorized" in text:
            raise type(e)("colstore: loading extensions is disabled on this connection; "
                          "call con.enable_load_extension(True) before colstore.load(con)") from e
        if "cannot open shared object" in text:
            raise type(e)("colstore: the module needs shared libraries this system lacks (%s); "
                          "on Debian or Ubuntu install them: apt-get install %s"
                          % (text, RUNTIME_PACKAGES)) from e
        raise


def _arrays():
    try:
        from colstore import arrays
    except ImportError as e:  # numpy is the one import arrays makes
        raise ImportError("colstore: rows, mask, read and append need numpy (%s); install it with "
                          "`pip install numpy` or `apt-get install python3-numpy`" % e) from e
    return arrays


def rows(positions):
    """The `_rows` BLOB (little-endian int64 positions) for WHERE _rows = ?."""
    return _arrays().rows(positions)


def mask(bools):
    """The `_mask` BLOB (one byte per row, 1 = selected) for WHERE _mask = ?."""
    return _arrays().mask(bools)


def read(con, table, columns=None, rows=None, mask=None):
    """Columns of table as a dict of numpy arrays (see colstore.arrays.read)."""
    return _arrays().read(con, table, columns=columns, rows=rows, mask=mask)


def append(con, table, columns):
    """Appends whole columns to table (see colstore.arrays.append)."""
    return _arrays().append(con, table, columns)

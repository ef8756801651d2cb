#!/usr/bin/env bash
# The Python package as a user gets it: the wheel that `make wheel` builds
# (packaging/build.sh, from the module under test) is installed with pip
# into fresh virtual environments of /usr/bin/python3 and used from another
# directory, README examples included:
#   - a plain venv (no numpy): load() works, loadable_path() points inside the
#     venv, the numpy helpers say what to install;
#   - a venv that sees the system's numpy (--system-site-packages): rows(),
#     mask(), read() and append() against the same rows read through SQL.
# Without python3-venv or the wheel tools the test prints SKIP and exits 77.
set -euo pipefail

. "$(dirname "$0")/wheel_env.sh"
whl=$WHEEL
case "$(basename "$whl")" in
  colstore-*-py3-none-linux_*.whl) ;;
  *) fail "the wheel is not tagged py3-none-<platform>: $(basename "$whl")" ;;
esac

# The README's Python package examples: blocks whose fence names this test.
"$PY" - "$ROOT/README.md" "$tmp/readme" <<'PYEOF'
import os, re, sys
text = open(sys.argv[1], encoding="utf-8").read()
blocks = re.findall(r"^```python [^\n]*test_wheel\.sh[^\n]*\n(.*?)^```$", text, re.S | re.M)
if not blocks:
    sys.exit("README.md has no python block marked for tests/client/test_wheel.sh")
os.makedirs(sys.argv[2])
for i, b in enumerate(blocks):
    open(os.path.join(sys.argv[2], "example%d.py" % i), "w").write(b)
PYEOF

for kind in plain numpy; do
  env="$tmp/venv-$kind"
  if [ "$kind" = numpy ]; then
    "$PY" -c "import numpy" 2>/dev/null || { echo "numpy is not installed: the numpy venv is left out"; continue; }
    new_venv "$env" --system-site-packages
  else
    new_venv "$env"
  fi
  mkdir -p "$tmp/work-$kind" && cd "$tmp/work-$kind"
  for ex in "$tmp"/readme/example*.py; do
    if [ "$kind" = plain ] && grep -q "numpy" "$ex"; then continue; fi
    "$env/bin/python" "$ex" >/dev/null || fail "README example $(basename "$ex") failed in the $kind venv"
  done
  "$env/bin/python" - "$kind" "$env" <<'PYEOF'
import os, sqlite3, sys
kind, env = sys.argv[1], sys.argv[2]
import colstore
assert colstore.loadable_path().startswith(os.path.realpath(env)) or colstore.loadable_path().startswith(env), \
    colstore.loadable_path()
# Where the binding refuses extension loading (most builds, until
# enable_load_extension(True); Debian's python3 allows it), load() says what
# to call; a missing runtime library names the packages.
class Refusing:
    def __init__(self, text):
        self.text = text
    def load_extension(self, path):
        raise sqlite3.OperationalError(self.text)
for text, start in (("not authorized", "colstore: loading extensions is disabled"),
                    ("libnuma.so.1: cannot open shared object file", "colstore: the module needs shared libraries")):
    try:
        colstore.load(Refusing(text))
        raise SystemExit("load() hid a refusal")
    except sqlite3.OperationalError as e:
        assert str(e).startswith(start), e
con = sqlite3.connect("t.db")
con.enable_load_extension(True)
colstore.load(con)
con.enable_load_extension(False)
assert con.execute("SELECT colstore_version()").fetchone()[0].startswith("colstore " + colstore.__version__)
con.execute("SELECT colstore_create('t.cst', 'WITH RECURSIVE k(v) AS (SELECT 0 UNION ALL SELECT v + 1 "
            "FROM k WHERE v < 99) SELECT v AS i, v * 0.5 AS x, CASE WHEN v % 3 THEN ''s'' || v END AS s FROM k')")
con.execute("CREATE VIRTUAL TABLE t USING colstore('t.cst')")
assert con.execute("SELECT count(*), sum(i) FROM t").fetchone() == (100, 4950)
if kind == "plain":
    try:
        colstore.rows([1, 2])
        raise SystemExit("rows() worked without numpy")
    except ImportError as e:
        assert str(e).startswith("colstore: rows, mask, read and append need numpy"), e
    sys.exit(0)
import numpy as np
want = con.execute("SELECT i, x, s FROM t WHERE _rows = ?", (colstore.rows([5, 3, 9]),)).fetchall()
assert want == [(5, 2.5, "s5"), (3, 1.5, None), (9, 4.5, None)], want
assert con.execute("SELECT count(*) FROM t WHERE _mask = ?",
                   (colstore.mask(np.arange(100) % 2 == 0),)).fetchone()[0] == 50
got = colstore.read(con, "t")
assert list(got) == ["i", "x", "s"]
assert got["i"].dtype == np.int64 and (np.asarray(got["i"]) == np.arange(100)).all()
assert (np.asarray(got["x"]) == np.arange(100) * 0.5).all()
s = got["s"]
assert isinstance(s, np.ma.MaskedArray) and s.mask.sum() == 34
assert [None if m else v for v, m in zip(s.data, s.mask)] == [r[0] for r in con.execute("SELECT s FROM t")]
sel = colstore.read(con, "t", columns=["x"], rows=[7, 1])
assert (np.asarray(sel["x"]) == [3.5, 0.5]).all(), sel
sel = colstore.read(con, "t", columns=["i"], mask=np.arange(100) >= 98)
assert (np.asarray(sel["i"]) == [98, 99]).all(), sel
n = colstore.append(con, "t", {"i": np.array([1000, 1001], dtype=np.int32),
                               "x": np.ma.masked_array([1.0, 2.0], mask=[False, True]),
                               "s": ["a", None]})
assert n == 2, n
con.commit()
assert con.execute("SELECT i, x, s FROM t WHERE rowid >= 100").fetchall() == [(1000, 1.0, "a"), (1001, None, None)]
try:
    colstore.append(con, "t", {"i": np.array([1.5])})
    raise SystemExit("a float array went into an INT64 column")
except TypeError as e:
    assert str(e).startswith("colstore: column i is INT64"), e
PYEOF
  cd "$tmp"
done
echo "ok: $(basename "$whl") installs into fresh venvs and works there"

# Sourced by the Node client tests (test_node.sh, test_npm.sh): makes sure
# better-sqlite3 is installed once into $BUILD/node_client (so reruns are
# fast) and sets NODE_CLIENT to that folder.  When node or npm is missing,
# the install fails, or under the sanitizers (node does not run with libasan
# preloaded), the calling test prints SKIP and exits 77, which ctest reports
# as skipped (SKIP_RETURN_CODE), never as passed.
# Needs: BUILD; INSTALL_TIMEOUT (seconds).

node_skip() {
  echo "SKIP: $1"
  exit 77
}

[ -z "${COLSTORE_ASAN:-}" ] || node_skip "node cannot run with the sanitizer runtimes preloaded (COLSTORE_ASAN is set)"
command -v node >/dev/null 2>&1 || node_skip "node is not installed"
command -v npm >/dev/null 2>&1 || node_skip "npm is not installed"

NODE_CLIENT="$BUILD/node_client"
mkdir -p "$NODE_CLIENT" || node_skip "cannot create $NODE_CLIENT"
# Loaded means its native addon too: require() alone succeeds while another
# test's install is still compiling it.  The install is serialized (flock),
# since ctest runs the Node tests side by side.
node_client_ready() {
  (cd "$NODE_CLIENT" && node -e "new (require('better-sqlite3'))(':memory:').close()" >/dev/null 2>&1)
}
exec 9>"$NODE_CLIENT/.install-lock"
flock 9
if ! node_client_ready; then
  [ -f "$NODE_CLIENT/package.json" ] || echo '{"name": "colstore-node-client", "private": true}' >"$NODE_CLIENT/package.json"
  log="$NODE_CLIENT/npm-install.log"
  if ! (cd "$NODE_CLIENT" && timeout "$INSTALL_TIMEOUT" npm install --no-audit --no-fund --loglevel=error \
        better-sqlite3@12 >"$log" 2>&1); then
    node_skip "npm install better-sqlite3@12 failed or took over ${INSTALL_TIMEOUT}s (see $log)"
  fi
  node_client_ready || node_skip "better-sqlite3 installed but does not load (no native build?); see $log"
fi
flock -u 9
exec 9>&-

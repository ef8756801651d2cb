/*
** colstore for Node: the path of the bundled SQLite extension, and load(db).
**
** The package carries the module (lib/colstore.so, put there by `make npm`),
** so the path is always the installed copy's.  It is given to SQLite without
** its suffix: sqlite3_load_extension adds the platform's own and derives the
** entry point, sqlite3_colstore_init, from the file name.  load(db) takes any
** database object with better-sqlite3's loadExtension(path) method; the
** package depends on no binding, so it adds nothing to an install.
*/
'use strict';

const fs = require('fs');
const path = require('path');

const RUNTIME_PACKAGES = 'libnuma1 libgomp1 libzstd1 zlib1g libsnappy1v5 liblz4-1';

function getLoadablePath() {
  const base = path.join(__dirname, 'lib', 'colstore');
  if (!fs.existsSync(base + '.so')) {
    throw new Error(`colstore: the module is missing from the package (${base}.so); ` +
                    'reinstall the tarball built by `make npm`');
  }
  return base;
}

function load(db) {
  if (!db || typeof db.loadExtension !== 'function') {
    throw new TypeError('colstore: load(db) takes a better-sqlite3 Database (an object with loadExtension)');
  }
  try {
    db.loadExtension(getLoadablePath());
  } catch (e) {
    if (/cannot open shared object/.test(String(e.message))) {
      e.message = `colstore: the module needs shared libraries this system lacks (${e.message}); ` +
                  `on Debian or Ubuntu install them: apt-get install ${RUNTIME_PACKAGES}`;
    }
    throw e;
  }
}

module.exports = {getLoadablePath, load};

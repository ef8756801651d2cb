# colstore - a thin wrapper over CMake.  Every target first makes sure the
# Debian packages it needs are present: as root it installs what is missing,
# otherwise it prints the exact apt-get line and stops.
BUILD      ?= build
ASAN_BUILD ?= build-asan
JOBS       ?= $(shell nproc 2>/dev/null || echo 2)
PACKAGES   := sqlite3 libsqlite3-dev libnuma-dev libxxhash-dev check libsubunit-dev \
              cmake pkg-config gcc make python3 python3-numpy clang-format zlib1g-dev libzstd-dev \
              python3-venv python3-pip python3-setuptools python3-wheel \
              python3-pandas python3-dask python3-distributed libsnappy-dev liblz4-dev

FUZZ_BUILD   ?= build-fuzz
FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?= fuzz_store fuzz_filter fuzz_writer fuzz_import fuzz_parquet fuzz_arrow
# clang, its sanitizer and libFuzzer runtimes, and its OpenMP runtime: only
# `make fuzz` and `make fuzz-build` need them.
FUZZ_PACKAGES := clang libclang-rt-dev libomp-dev
# matplotlib: only `make plots` needs it (make test does not).
PLOT_PACKAGES := python3-matplotlib

.PHONY: all deps fuzz-deps build module test test-asan demo bench bench-quick fuzz fuzz-build clean fuzz-sql \
        install uninstall plot-deps plots wheel npm

# make install: the module goes to $(DESTDIR)$(LIBDIR) as libcolstore.so, whose
# SONAME is colstore.so, with the link colstore.so beside it.  ldconfig (which
# indexes only lib*.so* files, by their SONAME) then maps the bare name
# colstore.so to it, so sqlite3_load_extension finds `colstore` from any
# directory: `.load colstore`, load_extension("colstore").
PREFIX ?= /usr/local
LIBDIR ?= $(PREFIX)/lib
DOCDIR ?= $(PREFIX)/share/doc/colstore

all: build

# $(call ensure_packages,LIST): as root, installs what of LIST is missing;
# otherwise prints the apt-get line and fails.  One shell line, so it can
# stand in any recipe.
ensure_packages = @missing=""; for p in $(1); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'install ok installed' || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "colstore: installing$$missing"; \
	    export DEBIAN_FRONTEND=noninteractive; \
	    apt-get update -qq && apt-get install -y -qq --no-install-recommends $$missing; \
	  else \
	    echo "colstore: missing packages; run: sudo apt-get install -y$$missing"; exit 1; \
	  fi; \
	fi

deps:
	$(call ensure_packages,$(PACKAGES))

# The same check for the fuzzing toolchain.
fuzz-deps: deps
	$(call ensure_packages,$(FUZZ_PACKAGES))

build: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	cmake --build $(BUILD) -j $(JOBS)

# Only the loadable module (core + ext), with the compiler's output kept in
# $(BUILD)/module-build.log unless it fails: what `make demo` and `make
# install` need, without the tests and benchmarks.
module: deps
	@mkdir -p $(BUILD)
	@echo "colstore: building the module (log: $(BUILD)/module-build.log)"
	@{ cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo && \
	   cmake --build $(BUILD) -j $(JOBS) --target colstore; } >$(BUILD)/module-build.log 2>&1 || \
	 { tail -n 40 $(BUILD)/module-build.log; echo "colstore: the build failed; the whole log is $(BUILD)/module-build.log"; exit 1; }

# ctest reports a test that could not run (exit 77: no sqlite3 shell, no
# node, no ../shared/slt) as skipped; the list and their reasons come last.
test: build
	@{ ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS); echo $$? >$(BUILD)/ctest-status; } \
	  | tee $(BUILD)/ctest-output.txt; \
	 tests/print_skips.sh $(BUILD) $(BUILD)/ctest-output.txt; exit $$(cat $(BUILD)/ctest-status)

# The SQL and client suites load the instrumented module into the system
# python3 and sqlite3, so the sanitizer runtimes are preloaded for them.
test-asan: deps
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DCOLSTORE_SANITIZE=ON >/dev/null
	cmake --build $(ASAN_BUILD) -j $(JOBS)
	@{ CK_FORK=no ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	   LD_PRELOAD="$$(gcc -print-file-name=libasan.so) $$(gcc -print-file-name=libubsan.so)" \
	   COLSTORE_ASAN=1 ctest --test-dir $(ASAN_BUILD) --output-on-failure -j $(JOBS); \
	   echo $$? >$(ASAN_BUILD)/ctest-status; } | tee $(ASAN_BUILD)/ctest-output.txt; \
	 tests/print_skips.sh $(ASAN_BUILD) $(ASAN_BUILD)/ctest-output.txt; exit $$(cat $(ASAN_BUILD)/ctest-status)

demo: module
	@mkdir -p $(BUILD)/demo
	@echo "colstore: running sql/demo.sql in the sqlite3 shell (in $(BUILD)/demo)"
	@cd $(BUILD)/demo && sqlite3 -batch -cmd '.load ../colstore' -cmd '.timer on' :memory: < ../../sql/demo.sql

# DESTDIR stages the files for a package (no ldconfig then: the package's
# own trigger runs it); without it ldconfig updates the cache when it can.
install: module
	install -d $(DESTDIR)$(LIBDIR) $(DESTDIR)$(DOCDIR)/docs/figures
	install -m 0755 $(BUILD)/colstore.so $(DESTDIR)$(LIBDIR)/libcolstore.so
	ln -sf libcolstore.so $(DESTDIR)$(LIBDIR)/colstore.so
	install -m 0644 README.md $(DESTDIR)$(DOCDIR)/
	install -m 0644 docs/*.md $(DESTDIR)$(DOCDIR)/docs/
	install -m 0644 docs/figures/*.svg $(DESTDIR)$(DOCDIR)/docs/figures/
	@if [ -z "$(DESTDIR)" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v ldconfig >/dev/null 2>&1; then ldconfig; fi; \
	  if (cd / && echo 'SELECT colstore_version();' | sqlite3 -batch -cmd '.load colstore' :memory:) >/dev/null 2>&1; then \
	    echo "colstore: installed in $(LIBDIR); \`.load colstore\` works from any directory"; \
	  else \
	    echo "colstore: installed in $(LIBDIR), but the bare name colstore does not resolve yet:"; \
	    echo "  run ldconfig as root (if $(LIBDIR) is in /etc/ld.so.conf.d), or"; \
	    echo "  export LD_LIBRARY_PATH=$(LIBDIR), or load it by path: .load $(LIBDIR)/colstore"; \
	  fi; \
	fi

# Packages (python/, node/): each is staged in a temporary folder beside a
# stripped copy of the module and built there, so the source folders stay
# clean; the results go to dist/.  The wheel is built with Debian's setuptools and wheel, without
# PyPI; `pip install dist/colstore-*.whl` then works in any environment on
# this platform.  The npm tarball is what `npm install ./dist/colstore-*.tgz`
# takes.
wheel: module
	packaging/build.sh wheel $(BUILD)/colstore.so dist

npm: module
	@command -v npm >/dev/null 2>&1 || \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm; \
	  else echo "colstore: make npm needs npm; run: sudo apt-get install -y nodejs npm"; exit 1; fi
	packaging/build.sh npm $(BUILD)/colstore.so dist

uninstall:
	rm -f $(DESTDIR)$(LIBDIR)/libcolstore.so $(DESTDIR)$(LIBDIR)/colstore.so
	rm -rf $(DESTDIR)$(DOCDIR)
	@if [ -z "$(DESTDIR)" ] && [ "$$(id -u)" = 0 ] && command -v ldconfig >/dev/null 2>&1; then ldconfig; fi

bench: build
	./$(BUILD)/bench_sql

# Push-down queries as a user's session sees them: back to back, right after
# a native query, after a long native scan, and with one core busy
# (bench/bench_busy.py; its data is made once in $(BUILD)/bench-data).
bench-quick: build
	/usr/bin/python3 bench/bench_busy.py --module $(BUILD)/colstore --dir $(BUILD)/bench-data --rounds 5

# The figures of docs/performance.md (docs/figures/*.svg), drawn by
# bench/plot.py from the benches' JSON in bench/results/.  It reads the JSON
# files present (about 20 s with the module built) and runs a bench only when
# it has none; with PLOTS_RERUN=1 it first runs again every bench feeding the
# figures and the two cache=memory benches of the README's claims, 3 runs
# each, interleaved (about an hour on the shared 2-core development host).
plot-deps:
	$(call ensure_packages,$(PLOT_PACKAGES))

plots: plot-deps module
	/usr/bin/python3 bench/plot.py --module $(BUILD)/colstore $(if $(PLOTS_RERUN),--rerun)

# libFuzzer targets (tests/fuzz/): clang with ASan and UBSan, in their own
# build directory.  `make fuzz` runs each for FUZZ_SECONDS from its corpus
# in $(FUZZ_BUILD)/corpus/ (seeded from the golden files and the committed
# regressions) and prints executions, coverage and any crash it saved.
fuzz-build: fuzz-deps
	cmake -S . -B $(FUZZ_BUILD) -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCOLSTORE_FUZZ=ON -DCOLSTORE_WERROR=OFF >/dev/null
	cmake --build $(FUZZ_BUILD) -j $(JOBS) --target $(FUZZ_TARGETS)

fuzz: fuzz-build
	@status=0; for t in $(FUZZ_TARGETS); do \
	  tests/fuzz/run_fuzz.sh $(FUZZ_BUILD) $$t $(FUZZ_SECONDS) || status=1; \
	done; exit $$status

# Randomized differential testing of SQL against native SQLite
# (tests/sql/fuzz_sql.py): make fuzz-sql [SEED=n] [MINUTES=m]; without SEED
# a random seed is drawn and printed.  FUZZ_SQL_ARGS passes more options,
# e.g. FUZZ_SQL_ARGS=--skip-known to leave out the shapes of known bugs.
MINUTES ?= 5
fuzz-sql: build
	/usr/bin/python3 tests/sql/fuzz_sql.py --module $(BUILD)/colstore --minutes $(MINUTES) $(if $(SEED),--seed $(SEED)) $(FUZZ_SQL_ARGS)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD) dist

# colstore - a thin wrapper over CMake.  Every target first makes sure the
# Debian packages it needs are present: as root it installs what is missing,
# otherwise it prints the exact apt-get line and stops.
BUILD      ?= build
ASAN_BUILD ?= build-asan
JOBS       ?= $(shell nproc 2>/dev/null || echo 2)
PACKAGES   := sqlite3 libsqlite3-dev libnuma-dev libxxhash-dev check libsubunit-dev \
              cmake pkg-config gcc make python3

FUZZ_BUILD   ?= build-fuzz
FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?= fuzz_store fuzz_filter fuzz_writer
# clang, its sanitizer and libFuzzer runtimes, and its OpenMP runtime: only
# `make fuzz` and `make fuzz-build` need them.
FUZZ_PACKAGES := clang libclang-rt-dev libomp-dev

.PHONY: all deps fuzz-deps build test test-asan demo bench bench-quick fuzz fuzz-build clean fuzz-sql

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

test: build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

# The SQL and client suites load the instrumented module into the system
# python3 and sqlite3, so the sanitizer runtimes are preloaded for them.
test-asan: deps
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DCOLSTORE_SANITIZE=ON >/dev/null
	cmake --build $(ASAN_BUILD) -j $(JOBS)
	CK_FORK=no ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  LD_PRELOAD="$$(gcc -print-file-name=libasan.so) $$(gcc -print-file-name=libubsan.so)" \
	  COLSTORE_ASAN=1 ctest --test-dir $(ASAN_BUILD) --output-on-failure -j $(JOBS)

demo: build
	@mkdir -p $(BUILD)/demo
	cd $(BUILD)/demo && sqlite3 -batch -cmd '.load ../colstore' -cmd '.timer on' :memory: < ../../sql/demo.sql

bench: build
	./$(BUILD)/bench_sql

# Push-down queries as a user's session sees them: back to back, right after
# a native query, after a long native scan, and with one core busy
# (bench/bench_busy.py; its data is made once in $(BUILD)/bench-data).
bench-quick: build
	/usr/bin/python3 bench/bench_busy.py --module $(BUILD)/colstore --dir $(BUILD)/bench-data --rounds 5

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
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD)

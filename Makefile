# colstore - a thin wrapper over CMake.  Every target first makes sure the
# Debian packages it needs are present: as root it installs what is missing,
# otherwise it prints the exact apt-get line and stops.
BUILD      ?= build
ASAN_BUILD ?= build-asan
JOBS       ?= $(shell nproc 2>/dev/null || echo 2)
PACKAGES   := sqlite3 libsqlite3-dev libnuma-dev libxxhash-dev check libsubunit-dev \
              cmake pkg-config gcc make python3

.PHONY: all deps build test test-asan demo bench clean

all: build

deps:
	@missing=""; for p in $(PACKAGES); do \
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

clean:
	rm -rf $(BUILD) $(ASAN_BUILD)

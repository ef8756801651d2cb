#!/usr/bin/python3
"""check_layers.py - core/'s folders call only downward, checked on the objects.

core/ is built one OBJECT library per folder (CMakeLists.txt,
COLSTORE_LAYERS, bottom first).  A call from a lower folder up to a higher
one is what made the flat core/ a circle: nothing at compile time stops it,
since every header is reachable from every file.  The linker's view cannot
be argued with, so this reads it: `nm` lists what each folder's object files
define and what they leave undefined, and a folder fails when one of its
undefined symbols is defined by a folder later in the order.  Calls inside a
folder, and to libc, are free.

Usage: check_layers.py [--src CORE_DIR] NM LAYER=OBJ[:OBJ...]... (bottom first), the object
files of each layer as CMake lists them ($<TARGET_OBJECTS>), so a stale
object of a file moved away is never read.  Exit 0 when every call runs
downward, 1 with one line per upward call otherwise, 2 when a layer has no
objects (the check would pass vacuously).
"""
import os
import re
import subprocess
import sys


def upward_includes(core, layers):
    """(file, header, header's layer) for every include of a higher layer's header."""
    home = {}
    for layer in layers:
        for name in os.listdir(os.path.join(core, layer)):
            home[name] = layer
    found = []
    for i, layer in enumerate(layers):
        for name in sorted(os.listdir(os.path.join(core, layer))):
            with open(os.path.join(core, layer, name), encoding="utf-8") as f:
                for header in re.findall(r'^\s*#\s*include\s+"([^"]+)"', f.read(), re.M):
                    if header in home and layers.index(home[header]) > i:
                        found.append((f"{layer}/{name}", header, home[header]))
    return found


def symbols(nm, objs):
    """(defined, undefined) global symbol names of the object files."""
    defined, undefined = set(), set()
    out = subprocess.run([nm, "-g", *objs], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == "U":
            undefined.add(parts[1])
        elif len(parts) == 3 and parts[1] not in "Uw":
            defined.add(parts[2])
    return defined, undefined


def main(argv):
    src = None
    if len(argv) > 2 and argv[1] == "--src":
        src, argv = argv[2], argv[:1] + argv[3:]
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    nm, layers = argv[1], []
    rank, defs, undefs = {}, {}, {}
    for i, arg in enumerate(argv[2:]):
        layer, _, joined = arg.partition("=")
        objs = [o for o in joined.split(":") if o]
        missing = [o for o in objs if not os.path.exists(o)]
        if not objs or missing:
            print(f"check_layers: layer {layer}: no object files ({' '.join(missing)})", file=sys.stderr)
            return 2
        layers.append(layer)
        d, u = symbols(nm, objs)
        for sym in d:
            rank.setdefault(sym, (i, layer))
        defs[layer], undefs[layer] = d, u
    bad = 0
    for i, layer in enumerate(layers):
        for sym in sorted(undefs[layer] - defs[layer]):
            if sym in rank and rank[sym][0] > i:
                print(f"check_layers: {layer} calls {sym}, defined by {rank[sym][1]} above it")
                bad += 1
    for name, header, where in upward_includes(src, layers) if src else []:
        print(f"check_layers: {name} includes {header}, of {where} above it")
        bad += 1
    if bad:
        print(f"check_layers: {bad} upward call(s) or include(s); order (bottom first): {' '.join(layers)}")
        return 1
    print(f"check_layers: {len(layers)} layers, every call{' and include' if src else ''} runs downward: {' < '.join(layers)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

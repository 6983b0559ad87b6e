#!/usr/bin/env python3
"""Fails the build when a layer of src/ includes a layer it does not depend on.

Run by meson (src/meson.build) on every build with the layers and their
direct dependencies as declared there, LAYER=DEP,DEP...  A file in
src/LAYER/ may include its own layer's headers and those of the layers it
depends on, directly or through them (the transitive closure); any other
'#include "X/..."' of a directory of src/ is an error that names the file,
the line and the dependency it would need.  A cycle in the declarations
themselves is an error too.  On success it touches --stamp.

  check-layers.py --src DIR --stamp FILE util= model=util ...
"""

import argparse
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([A-Za-z0-9_]+)/[^"]+"')
# Layers that are not part of the profiler's library graph, with what they may include.
SEPARATE = {"runtime": {"sections", "util"}}


def closure(deps, layer, seen=None, stack=()):
    if layer in stack:
        raise ValueError("cycle: " + " -> ".join(stack + (layer,)))
    if seen is None:
        seen = set()
    for d in deps.get(layer, ()):
        if d not in seen:
            seen.add(d)
            closure(deps, d, seen, stack + (layer,))
    return seen


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--src", required=True)
    ap.add_argument("--stamp", required=True)
    ap.add_argument("layers", nargs="*")
    a = ap.parse_args()

    deps = {}
    for spec in a.layers:
        name, _, rest = spec.partition("=")
        deps[name] = [d for d in rest.split(",") if d]
    errors = []
    allowed = {}
    for layer in deps:
        try:
            allowed[layer] = closure(deps, layer) | {layer}
        except ValueError as e:
            errors.append("src/meson.build: the layers' dependencies have a " + str(e))
    for layer, extra in SEPARATE.items():
        allowed[layer] = extra | {layer}

    dirs = {d for d in os.listdir(a.src) if os.path.isdir(os.path.join(a.src, d))}
    for layer in sorted(dirs):
        if layer not in allowed:
            errors.append("src/%s/ is not a layer declared in src/meson.build" % layer)
            continue
        top = os.path.join(a.src, layer)
        for dirpath, _, files in os.walk(top):
            for f in sorted(files):
                if not f.endswith((".c", ".h")):
                    continue
                path = os.path.join(dirpath, f)
                with open(path, errors="replace") as fh:
                    for n, line in enumerate(fh, 1):
                        m = INCLUDE.match(line)
                        if not m or m.group(1) not in dirs or m.group(1) in allowed[layer]:
                            continue
                        errors.append(
                            "%s:%d: layer '%s' includes %s, but does not depend on layer '%s'"
                            % (os.path.relpath(path, os.path.dirname(a.src)), n, layer,
                               line.strip().split(None, 1)[1], m.group(1)))
    if errors:
        for e in errors:
            print("check-layers: " + e, file=sys.stderr)
        print("check-layers: declare the dependency in src/%s/meson.build (if it runs "
              "downwards) or move the code to the layer it belongs in" % "LAYER",
              file=sys.stderr)
        return 1
    with open(a.stamp, "w") as fh:
        fh.write("ok\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

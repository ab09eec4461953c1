#!/bin/sh
# layers.sh - the layer table of docs/design.md#layout, enforced: every
# #include of the library, the kernels, the planner, the tools and the
# component, and every symbol their built objects take from each other, runs
# along an arrow of the table. Run from the build tree (make check), or as
#   test/layers.sh SRCDIR [BUILDDIR]
# Prints each offence with its file and exits 1 when there is one.
set -eu
src=${1:-${srcdir:-.}}
build=${2:-.}
PYTHON=${PYTHON:-python3}
command -v "$PYTHON" >/dev/null 2>&1 || { echo "layers: SKIP (no python3)"; exit 77; }
command -v nm >/dev/null 2>&1 || { echo "layers: SKIP (no nm)"; exit 77; }
exec "$PYTHON" - "$src" "$build" <<'EOF'
import os, re, subprocess, sys
src, build = sys.argv[1], sys.argv[2]

# folder -> layer (longest prefix wins); each layer's folder says its name
FOLDERS = [
    ('src/include/', 'public'), ('src/util/', 'util'), ('src/core/', 'core'),
    ('src/transport/', 'transport'), ('src/engine/', 'engine'),
    ('src/backends/host/', 'host backend'), ('src/backends/gpu/', 'GPU backend'),
    ('src/kernels/', 'kernels'), ('src/planner/', 'planner'), ('src/tools/', 'tools'),
    ('src/lib/', 'library'), ('ompi/mca/coll/dfccl/', 'component'),
]
MAY = {
    'public': set(),
    'util': {'public'},
    'core': {'public', 'util'},
    'transport': {'core', 'public', 'util'},
    'engine': {'core', 'transport', 'public', 'util'},
    'host backend': {'engine', 'core', 'transport', 'public', 'util'},
    'GPU backend': {'engine', 'core', 'transport', 'kernels', 'public', 'util'},
    'kernels': {'core', 'public'},
    'planner': {'core', 'public', 'util'},
    'tools': {'planner', 'engine', 'core', 'transport', 'public', 'util'},
    'component': {'public'},
    # the assembly of libdfccl: names every backend for the engine
    'library': {'engine', 'host backend', 'GPU backend', 'core', 'transport', 'public', 'util'},
}
# the one header the kernels share with the GPU backend's host side
KERNEL_ABI = 'src/backends/gpu/gpu_shared.h'

def layer_of(path):
    best = None
    for prefix, layer in FOLDERS:
        if path.startswith(prefix) and (best is None or len(prefix) > len(best[0])):
            best = (prefix, layer)
    return best[1] if best else None

def allowed(frm, to, target=None):
    if frm == to:
        return True
    if frm == 'kernels' and target == KERNEL_ABI:
        return True
    return to in MAY[frm]

bad = []
files = 0
inc_re = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
for top in ('src', 'ompi/mca/coll/dfccl'):
    for d, _, names in os.walk(os.path.join(src, top)):
        for n in sorted(names):
            if not re.search(r'\.(c|h|cu|cuh|def)$', n):
                continue
            path = os.path.relpath(os.path.join(d, n), src)
            frm = layer_of(path)
            if frm is None:
                continue
            files += 1
            text = open(os.path.join(src, path), errors='replace').read()
            for m in inc_re.finditer(text):
                x = m.group(1)
                here = os.path.normpath(os.path.join(os.path.dirname(path), x))
                if os.path.exists(os.path.join(src, 'src', x)):
                    target = 'src/' + x
                elif os.path.exists(os.path.join(src, here)):
                    target = here
                    if '/' in x:
                        bad.append('%s: include "%s": write it from src/, not relative' % (path, x))
                        continue
                elif frm == 'component':
                    continue   # Open MPI's own headers
                else:
                    bad.append('%s: include "%s": not found under src/' % (path, x))
                    continue
                to = layer_of(target)
                if to and not allowed(frm, to, target):
                    bad.append('%s (%s) includes %s (%s)' % (path, frm, target, to))
include_bad = len(bad)

# linked symbols: which layer's objects define and use what, read from the
# layers' archives (what libdfccl is made of), the kernel's object, the
# tools' objects and the component's shared object
objs = []   # (layer, path, nm options)
for d, _, names in os.walk(build):
    for n in sorted(names):
        p = os.path.join(d, n)
        rel = os.path.relpath(p, build).replace('/.libs', '')
        layer = layer_of(rel)
        if n.endswith('.a') and '/.libs' in p and layer and layer != 'component':
            objs.append((layer, p, []))
        elif rel == 'src/kernels/daemon_kernel.o' and '/.libs' in p:
            objs.append(('kernels', p, []))
        elif layer == 'tools' and n.endswith('.o'):
            objs.append(('tools', p, []))
        elif n == 'mca_coll_dfccl.so' and layer == 'component':
            objs.append(('component', p, ['-D']))
if not any(l == 'engine' for l, _, _ in objs):
    print('layers: no built objects under %s (build first)' % build)
    sys.exit(1)
defined, used = {}, []
for layer, p, opts in objs:
    out = subprocess.run(['nm', '-P'] + opts + [p], capture_output=True, text=True).stdout
    for line in out.splitlines():
        f = line.split()
        if len(f) < 2 or f[0].endswith(':'):
            continue
        sym, kind = f[0], f[1]
        if kind == 'U':
            used.append((layer, p, sym))
        elif kind in 'TDBRCVW' and kind.isupper() and layer != 'component':
            defined.setdefault(sym, set()).add(layer)
exported = set()
symfile = os.path.join(build, 'src', 'libdfccl.sym')
if os.path.exists(symfile):
    exported = set(open(symfile).read().split())
symbad = 0
seen = set()
for layer, p, sym in used:
    where = defined.get(sym)
    if not where or layer in where:
        continue
    if layer == 'component':
        ok = sym in exported
    else:
        ok = any(allowed(layer, w) for w in where)
    if not ok and (layer, sym) not in seen:
        seen.add((layer, sym))
        symbad += 1
        bad.append('%s (%s) uses %s from %s' % (os.path.relpath(p, build), layer, sym,
                                                 ', '.join(sorted(where))))
for b in bad:
    print('layers: ' + b)
print('layers: %d files, %d includes and %d linked symbols against the arrows'
      % (files, include_bad, symbad))
sys.exit(1 if bad else 0)
EOF

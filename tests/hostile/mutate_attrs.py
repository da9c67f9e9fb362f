#!/usr/bin/env python3
"""mutate_attrs.py — the generator half of issue 17's probe: valid-looking HLO with wrong attributes.

Takes modules that load (tests/hlo/data/all_ops.hlo: every opcode), and for every integer inside an
instruction's attributes (dimension numbers, windows, slices, paddings, sizes, indices, counts)
writes one mutant with that integer replaced by a hostile value (-1, 0, 7, 99, 2^63-1, -2^63).
Each mutant goes through every stage that reads attributes: load (the verifier), the interpreter,
the whole pipeline, the code emitter (kernels --source) and, with --compile, the CPU backend with
--check. Each must end with exit 0 or 1, within the time limit, with no sanitizer report and no
crash: the attribute is either rejected with a located error or handled.

Usage: mutate_attrs.py FXPLAIN [--every N] [--compile] [HLO...]
"""
import os
import re
import subprocess
import sys
import tempfile

VALUES = ['-1', '0', '7', '99', '9223372036854775807', '-9223372036854775808']
# attributes that are text for the explainer only, not read by any computation
SKIP = {'metadata', 'sharding', 'replica_groups', 'source_target_pairs', 'entry_computation_layout',
        'parent_frame_id', 'file_location_id', 'channel_id', 'frontend_attributes'}


def mutants(text):
    lines = text.split('\n')
    for li, line in enumerate(lines):
        m = re.search(r'\)\s*,\s*(.*)$', line)  # the attributes follow the operand list
        if not m or line.lstrip().startswith('HloModule'):
            continue
        start = m.start(1)
        for am in re.finditer(r'([a-z_]+)=(\{[^}]*\}|[^,\s]+)', line[start:]):
            if am.group(1) in SKIP:
                continue
            base = start + am.start(2)
            for nm in re.finditer(r'-?\d+', am.group(2)):
                for v in VALUES:
                    if v == nm.group(0):
                        continue
                    a, b = base + nm.start(), base + nm.end()
                    out = list(lines)
                    out[li] = line[:a] + v + line[b:]
                    yield '%s:%d %s %s->%s' % ('', li + 1, am.group(1), nm.group(0), v), '\n'.join(out)


def main():
    args = sys.argv[1:]
    if not args:
        print(__doc__)
        return 2
    fx = args.pop(0)
    every, compile_ = 1, False
    files = []
    while args:
        a = args.pop(0)
        if a == '--every':
            every = int(args.pop(0))
        elif a == '--compile':
            compile_ = True
        else:
            files.append(a)
    files = files or ['tests/hlo/data/all_ops.hlo']
    cmds = 'run --backend interp; step all; kernels --source; run --backend interp'
    if compile_:
        cmds += '; run --backend cpu --check'
    tmp = tempfile.mkdtemp(prefix='fxmut')
    env = dict(os.environ, NO_COLOR='1', FXPLAIN_HISTORY='/dev/null', FXPLAIN_CACHE_DIR=os.path.join(tmp, 'cache'))
    ran = bad = 0
    for f in files:
        for n, (what, text) in enumerate(mutants(open(f).read())):
            if n % every:
                continue
            path = os.path.join(tmp, 'm.hlo')
            with open(path, 'w') as o:
                o.write(text)
            ran += 1
            try:
                r = subprocess.run([fx, '--keep-going', path, '-e', cmds], capture_output=True, text=True, timeout=60, env=env)
                out, rc = r.stdout + r.stderr, r.returncode
            except subprocess.TimeoutExpired:
                out, rc = 'timed out after 60 s', -1
            if rc not in (0, 1) or 'Sanitizer' in out or 'runtime error:' in out:
                bad += 1
                print('FAIL %s%s (exit %d): %s' % (f, what, rc, out[-800:]))
    print('%d mutants, %d failed' % (ran, bad))
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())

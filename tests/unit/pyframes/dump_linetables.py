"""Dumps the line tables of real code objects and the line CPython gives
each instruction, for tests/unit/test_analyzer_pyframes.c.  Run by any
CPython 3.10+: `python3 dump_linetables.py OUT`.  Not a test itself; the
committed pylines_3XX.txt files were made with it by pyenv's 3.10.13,
3.11.7, 3.12.1 and 3.13.0.

Format, one code object per two lines:
  code VERSION FIRSTLINENO LINETABLE_HEX QUALNAME
  lines L0 L1 ...      (the line of each code unit, 0 when none)
"""
import sys

SOURCE = '''
import os

def simple(a, b):
    c = a + b
    return c * 2

def loops(n):
    total = 0
    for i in range(n):
        if i % 3 == 0:
            total += i
        elif i % 5 == 0:
            total -= 1
        else:
            continue
    while total > 100:
        total //= 2
    return total

def handler(x):
    try:
        y = 1 / x
    except ZeroDivisionError as e:
        y = 0
    finally:
        x = None
    return y

class Model:
    def forward(self, batch):
        out = [self.linear_layer(v)
               for v in batch
               if v is not None]
        return sum(out,
                   0)

    def linear_layer(self, v):
        w = 3




        b = 7
        return v * w + b

def far_lines():
    a = 1
''' + '\n' * 300 + '''
    b = 2
''' + '\n' * 70000 + '''
    return a + b

def gen():
    yield 1
    yield from range(3)
    lam = lambda q: (q +
                     1)
    return lam

async def coro(x):
    return await x
'''


def walk(code, out):
    out.append(code)
    for c in code.co_consts:
        if hasattr(c, 'co_code'):
            walk(c, out)


def lines_of(code):
    n = len(code.co_code) // 2
    if hasattr(code, 'co_positions'):
        lines = [(p[0] or 0) for p in code.co_positions()]
        assert len(lines) == n, (len(lines), n)
        return lines
    lines = [0] * n
    for start, end, line in code.co_lines():
        for k in range(start // 2, min(end // 2, n)):
            lines[k] = line or 0
    return lines


def main():
    out = open(sys.argv[1], 'w')
    codes = []
    walk(compile(SOURCE, 'model.py', 'exec'), codes)
    ver = sys.version_info.major * 100 + sys.version_info.minor
    for code in codes:
        table = code.co_linetable if ver >= 310 else code.co_lnotab
        qual = getattr(code, 'co_qualname', code.co_name)
        out.write('code %d %d %s %s\n' % (ver, code.co_firstlineno,
                                          table.hex() or '-', qual))
        out.write('lines %s\n' % ' '.join(str(x) for x in lines_of(code)))


main()

#!/usr/bin/env python3
"""cudaMalloc + cudaFree pairs called from Python DEPTH frames deep through
ctypes, as a training script's allocator calls are: the load for measuring
what the Python frame walk adds to each probed call.  Prints ns per pair.

usage: py_callbench.py LIBCUDART PAIRS [DEPTH]   (default depth 20)"""
import ctypes
import sys
import time


def main():
    lib = ctypes.CDLL(sys.argv[1])
    pairs = int(sys.argv[2])
    depth = int(sys.argv[3]) if len(sys.argv) > 3 else 20
    p = ctypes.c_void_p()
    ref = ctypes.byref(p)
    size = ctypes.c_size_t(4096)

    def loop():
        t0 = time.perf_counter()
        for _ in range(pairs):
            lib.cudaMalloc(ref, size)
            lib.cudaFree(p)
        return time.perf_counter() - t0

    def nest(n):
        return nest(n - 1) if n > 0 else loop()

    dt = nest(depth)
    print("py_callbench: %.1f ns per pair" % (dt * 1e9 / pairs))


if __name__ == "__main__":
    main()

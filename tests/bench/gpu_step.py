#!/usr/bin/env python3
"""A real PyTorch training loop on a CUDA GPU, for scripts/gpu-check: a
4-layer MLP trained with Adam on batches copied from pageable host memory
(as a DataLoader without pin_memory does) and from pinned memory, a
synchronize per step, and a checkpoint written with torch.save every 5
steps.  Prints what it ran on; exits 3 when there is no CUDA device.

GPU_STEP_DEVICE=cpu runs a narrower model on the CPU, to try
scripts/gpu-check on a machine without a GPU.

usage: gpu_step.py [STEPS]   (default 20)"""
import os
import sys
import tempfile
import time

import torch


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    on_cpu = os.environ.get("GPU_STEP_DEVICE") == "cpu"
    if not on_cpu and not torch.cuda.is_available():
        print("gpu_step: no CUDA device (torch %s, built for CUDA %s)" %
              (torch.__version__, torch.version.cuda))
        sys.exit(3)
    dev = torch.device("cpu" if on_cpu else "cuda")
    sync = (lambda: None) if on_cpu else torch.cuda.synchronize
    torch.manual_seed(0)
    w = 256 if on_cpu else 4096  # a CPU trial only checks the pipeline
    model = torch.nn.Sequential(torch.nn.Linear(w, w), torch.nn.ReLU(),
                                torch.nn.Linear(w, w), torch.nn.ReLU(),
                                torch.nn.Linear(w, w), torch.nn.ReLU(),
                                torch.nn.Linear(w, 1000)).to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=1e-4)
    pageable = torch.randn(512, w)
    pinned = torch.randn(512, w)
    if not on_cpu:
        pinned = pinned.pin_memory()
    labels = torch.randint(0, 1000, (512,))
    ckpt = os.path.join(tempfile.mkdtemp(prefix="gpu_step-"), "ckpt.pt")
    t0 = time.perf_counter()
    for step in range(steps):
        x = (pageable if step % 2 else pinned).to(dev, non_blocking=step % 2 == 0)
        y = labels.to(dev)
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        sync()
        if step % 5 == 4:
            torch.save(model.state_dict(), ckpt)
    dt = time.perf_counter() - t0
    print("gpu_step: %s, torch %s, CUDA %s: %d steps in %.3f s, loss %.4f, peak %d bytes" %
          ("cpu" if on_cpu else torch.cuda.get_device_name(0), torch.__version__,
           torch.version.cuda, steps, dt, loss.item(),
           0 if on_cpu else torch.cuda.max_memory_allocated()))


if __name__ == "__main__":
    main()

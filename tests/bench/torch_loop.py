"""A small PyTorch training loop for tests/bench/bench_sample_bytes.py: a
2-layer MLP trained with SGD for the number of steps given on the command
line, on one CPU thread, with fixed seeds so runs do the same work.  With
--time (tests/bench/bench_torch_step.py) it also prints the median time of
a step after the first five."""
import sys
import time

import torch


def main():
    steps = int(sys.argv[1])
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = torch.nn.Sequential(torch.nn.Linear(512, 512), torch.nn.ReLU(),
                                torch.nn.Linear(512, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(256, 512)
    y = torch.randint(0, 10, (256,))
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)
    print(f"loss {loss.item():.4f}")
    if "--time" in sys.argv[2:] and len(times) > 5:
        rest = sorted(times[5:])
        print(f"step_ms_median {1000 * rest[len(rest) // 2]:.3f}")


if __name__ == "__main__":
    main()

# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The libpreempt authors
"""tests/python/torch_loop.py FILE: runs the canonical PyTorch loop of FILE
(the python block after "<!-- example:torch-loop -->": the README's, the
guide's) as it is printed, in the current directory, with the names it
leaves to the trainer: a dataset (960 samples, 60 batches an epoch), a
model with dropout (its forward appends a line to steps.log and takes
10 ms, so that a test can preempt it mid-epoch), an optimizer with
momentum and a scheduler, in a process group of one (gloo). At the end it
prints the parameters' digest; preempted, the loop itself exits with the
restart code."""
import hashlib
import os
import re
import sys
import time

import torch
import torch.distributed as dist
from torch.utils.data import DistributedSampler, TensorDataset

text = open(sys.argv[1]).read()
m = re.search(r"<!-- example:torch-loop -->\n```python\n(.*?)```\n", text, re.S)
if not m:
    sys.exit("torch_loop.py: %s has no torch-loop example" % sys.argv[1])
store = os.path.abspath("pg.store")
if os.path.exists(store):
    os.unlink(store)
dist.init_process_group("gloo", init_method="file://" + store, rank=0, world_size=1)
torch.manual_seed(0)
g = torch.Generator().manual_seed(1)
X = torch.randn(960, 4, generator=g)
Y = X @ torch.tensor([[1.0], [2.0], [3.0], [4.0]]) + 0.1 * torch.randn(960, 1, generator=g)


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 1)
        self.drop = torch.nn.Dropout(0.1)

    def forward(self, x):
        with open("steps.log", "a") as f:
            f.write("step\n")
        time.sleep(0.01)  # the step's work: 10 ms a step, so that a test can preempt it mid-epoch
        return self.lin(self.drop(x))


net = Net()
opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
env = {"dataset": TensorDataset(X, Y), "net": net, "opt": opt, "sched": sched,
       "DistributedSampler": DistributedSampler}
exec(compile(m.group(1), sys.argv[1] + " (torch-loop)", "exec"), env)
print("done: epochs %d, digest %s" % (env["loader"].epoch, hashlib.sha256(
    b"".join(p.detach().numpy().tobytes() for p in net.parameters())).hexdigest()))

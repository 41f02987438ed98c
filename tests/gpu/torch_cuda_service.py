"""A PyTorch service on the GPU for the GPU check (gpu_check.sh): `keep` keeps each request's output
in a list (a leak of tensors), `reserve` only grows the caching allocator's reserve (batches grow,
everything is freed), `burst` holds a 2 GiB batch for half a second halfway (the device peak).
Writes torch's own figures at the end to the file named by argv[2]."""
import json
import sys
import time

import torch

outputs = []


def remember_output(tensor):
    outputs.append(tensor)  # the bug in `keep`: never dropped


def hold_large_batch():
    batch = torch.empty(2 << 30, dtype=torch.uint8, device="cuda")
    batch.fill_(1)
    torch.cuda.synchronize()
    time.sleep(0.5)


def serve(mode):
    model = torch.nn.Linear(1024, 1024).cuda()
    for request in range(30):
        batch = 64 * (request + 1) if mode == "reserve" else 64
        with torch.no_grad():
            output = model(torch.randn(batch, 1024, device="cuda"))
        if mode == "keep":
            remember_output(output)
        if mode == "burst" and request == 15:
            hold_large_batch()
        torch.cuda.synchronize()
        time.sleep(0.1)


serve(sys.argv[1])
with open(sys.argv[2], "w") as figures:
    json.dump({"memory_allocated": torch.cuda.memory_allocated(), "memory_reserved": torch.cuda.memory_reserved(),
               "max_memory_allocated": torch.cuda.max_memory_allocated(),
               "max_memory_reserved": torch.cuda.max_memory_reserved(), "kept": len(outputs)}, figures)

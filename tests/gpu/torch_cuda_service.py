"""A PyTorch service on the GPU for the GPU check (gpu_check.sh): `keep` keeps each request's output
in a list (a leak of tensors), `reserve` only grows the caching allocator's reserve (batches grow,
everything is freed). Writes torch's own figures at the end to the file named by argv[2]."""
import json
import sys
import time

import torch

outputs = []


def remember_output(tensor):
    outputs.append(tensor)  # the bug in `keep`: never dropped


def serve(mode):
    model = torch.nn.Linear(1024, 1024).cuda()
    for request in range(30):
        batch = 64 * (request + 1) if mode == "reserve" else 64
        with torch.no_grad():
            output = model(torch.randn(batch, 1024, device="cuda"))
        if mode == "keep":
            remember_output(output)
        torch.cuda.synchronize()
        time.sleep(0.1)


serve(sys.argv[1])
with open(sys.argv[2], "w") as figures:
    json.dump({"memory_allocated": torch.cuda.memory_allocated(), "memory_reserved": torch.cuda.memory_reserved(),
               "kept": len(outputs)}, figures)

# A PyTorch inference loop for bench/compare_tools.py: a small MLP run forward on batches of 32
# without gradients, as a Python service serves requests (python3-torch, CPU).
import sys

import torch

passes = int(sys.argv[1]) if len(sys.argv) > 1 else 300
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 512), torch.nn.ReLU(),
                            torch.nn.Linear(512, 10))
model.eval()
total = 0.0
with torch.no_grad():
    for _ in range(passes):
        batch = torch.randn(32, 256)
        total += float(model(batch).sum())
print(round(total, 3))

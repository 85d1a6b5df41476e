#!/usr/bin/env python3
"""Export a tiny torch model to ONNX for tests/models/build_models.py.

    python3 tests/models/torch_tiny.py OUT_DIR    -> OUT_DIR/model.onnx, OUT_DIR/x.npy

Runs under whichever interpreter has torch (Debian's python3-torch is not in the venv); the
reference outputs are computed afterwards with onnxruntime by build_models.py.
"""
import inspect
import os
import sys

import numpy as np
import torch


class Tiny(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(1, 4, 3, padding=1)
        self.fc1 = torch.nn.Linear(4 * 8 * 8, 24)
        self.fc2 = torch.nn.Linear(24, 5)

    def forward(self, x):
        h = torch.relu(self.conv(x))
        h = torch.flatten(h, 1)
        h = torch.tanh(self.fc1(h))
        return torch.softmax(self.fc2(h), dim=-1)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    model = Tiny().eval()
    x = torch.randn(3, 1, 8, 8)
    kwargs = dict(input_names=["x"], output_names=["y"], opset_version=17)
    if "dynamo" in inspect.signature(torch.onnx.export).parameters:
        kwargs["dynamo"] = False  # the TorchScript exporter needs no onnxscript
    torch.onnx.export(model, (x,), os.path.join(out, "model.onnx"), **kwargs)
    np.save(os.path.join(out, "x.npy"), x.numpy())


if __name__ == "__main__":
    main()

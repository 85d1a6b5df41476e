#!/usr/bin/env python3
"""Export real architectures with torch.onnx, as PyTorch users do, for tests/models/build_models.py.

    python3 tests/models/torch_export.py NAME OUT_DIR   -> OUT_DIR/model.onnx, OUT_DIR/x.npy

NAME: tiny (conv + linears + softmax), resnet18 and mobilenet_v2 (torchvision, random weights,
eval mode: BatchNormalization, residual adds, depthwise convolutions, global pooling), bert
(a BERT-style encoder: embeddings, two attention + erf-GELU layers with LayerNorm),
gpt (a GPT-style decoder block: causal mask built with triu/masked_fill, tanh GELU, tied
shapes through Shape/Gather/Reshape arithmetic). Runs under whichever interpreter has torch
(Debian's python3-torch is not in the venv); reference outputs come from onnxruntime afterwards.
"""
import contextlib
import inspect
import math
import os
import sys

import numpy as np
import torch
import torch.nn as nn


class Tiny(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3, padding=1)
        self.fc1 = nn.Linear(4 * 8 * 8, 24)
        self.fc2 = nn.Linear(24, 5)

    def forward(self, x):
        h = torch.relu(self.conv(x))
        h = torch.flatten(h, 1)
        h = torch.tanh(self.fc1(h))
        return torch.softmax(self.fc2(h), dim=-1)


class EncoderLayer(nn.Module):
    """BERT's layer written out (torch's own TransformerEncoderLayer exports a fused op in eval)."""

    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.fc, self.out = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x):
        b, t, d = x.shape
        split = lambda h: h.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        att = torch.softmax(split(self.q(x)) @ split(self.k(x)).transpose(-2, -1) / math.sqrt(d // self.heads), dim=-1)
        x = self.ln1(x + self.o((att @ split(self.v(x))).transpose(1, 2).reshape(b, t, d)))
        return self.ln2(x + self.out(nn.functional.gelu(self.fc(x))))


class Bert(nn.Module):
    def __init__(self, vocab=100, d=64, heads=4, layers=2, seq=16):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(seq, d)
        self.norm = nn.LayerNorm(d)
        self.layers = nn.ModuleList(EncoderLayer(d, heads) for _ in range(layers))
        self.head = nn.Linear(d, 2)

    def forward(self, ids):
        pos = torch.arange(ids.shape[1]).unsqueeze(0)
        h = self.norm(self.tok(ids) + self.pos(pos))
        for layer in self.layers:
            h = layer(h)
        return self.head(h[:, 0])


class GptBlock(nn.Module):
    def __init__(self, d=64, heads=4):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.fc, self.out = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q = q.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        k = k.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        v = v.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(d // self.heads)
        mask = torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)
        att = torch.softmax(att.masked_fill(mask, float("-inf")), dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, t, d)
        x = x + self.proj(y)
        return x + self.out(nn.functional.gelu(self.fc(self.ln2(x)), approximate="tanh"))


def build(name):
    if name == "tiny":
        return Tiny(), torch.randn(3, 1, 8, 8)
    if name in ("resnet18", "mobilenet_v2"):
        import torchvision
        model = getattr(torchvision.models, name)(num_classes=10)
        return model, torch.randn(1, 3, 64, 64)
    if name == "bert":
        return Bert(), torch.randint(0, 100, (2, 16))
    if name == "gpt":
        return GptBlock(), torch.randn(2, 12, 64)
    if name == "encoder":
        # torch's stock layer, as users export it: its Shape -> Gather -> Reshape reads x's shape only
        layer = nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=128, batch_first=True)
        layer.train(False)
        return layer, torch.randn(2, 10, 64)
    raise SystemExit(f"unknown model {name}")


def main():
    name, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    model, x = build(name)
    model.eval()
    kwargs = dict(input_names=["x"], output_names=["y"], opset_version=14 if name == "encoder" else 17)
    if "dynamo" in inspect.signature(torch.onnx.export).parameters:
        kwargs["dynamo"] = False  # the TorchScript exporter needs no onnxscript
    # With gradients off, torch's TransformerEncoderLayer takes its fused fast path, which has no
    # ONNX export; with them on it exports op by op, as users' models are.
    with torch.no_grad() if name != "encoder" else contextlib.nullcontext():
        torch.onnx.export(model, (x,), os.path.join(out, "model.onnx"), **kwargs)
    np.save(os.path.join(out, "x.npy"), x.numpy())


if __name__ == "__main__":
    main()

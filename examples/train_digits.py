#!/usr/bin/env python3
"""Train the bundled example model: an MLP classifying 8x8 handwritten digits.

How the committed files were made, exactly:

    scripts/venv.sh                               # onnx 1.22.0, onnxruntime 1.31.1,
                                                  # numpy 2.4.6, scikit-learn 1.9.1
    .venv/bin/python examples/train_digits.py     # writes the four files below

Data: scikit-learn's bundled digits set (sklearn.datasets.load_digits: 1797 images, 8x8 pixels
valued 0..16, 10 classes), pixels divided by 16 so they lie in [0, 1]; split with
train_test_split(test_size=0.25, random_state=0, stratify=labels) into 1347 training and 450
held-out images.

Model: sklearn MLPClassifier(hidden_layer_sizes=(32,), activation="relu", solver="adam",
max_iter=500, random_state=0), i.e. 64 -> 32 (ReLU) -> 10. Exported by hand with onnx.helper
(opset 17) as Gemm -> Relu -> Gemm -> Softmax, input "x" float32 [N, 64] with symbolic batch
dim "N", output "probs" float32 [N, 10].

Outputs:
    examples/digits_mlp.onnx          the model
    examples/digits_test.npy          float32 [450, 64]: the held-out images, pixels / 16
    examples/digits_test_labels.npy   int64 [450]: their labels
    examples/digits_expected.txt      onnxruntime's accuracy on them, in the format
                                      build/embed prints: `accuracy: A (K/N)`
"""
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from sklearn.neural_network import MLPClassifier

HERE = os.path.dirname(os.path.abspath(__file__))


def export(clf):
    w1, w2 = (w.astype(np.float32) for w in clf.coefs_)        # [64,32], [32,10]
    b1, b2 = (b.astype(np.float32) for b in clf.intercepts_)
    inits = [numpy_helper.from_array(a, n) for a, n in
             ((w1, "fc1.weight"), (b1, "fc1.bias"), (w2, "fc2.weight"), (b2, "fc2.bias"))]
    nodes = [
        helper.make_node("Gemm", ["x", "fc1.weight", "fc1.bias"], ["fc1"], name="fc1"),
        helper.make_node("Relu", ["fc1"], ["relu1"], name="relu1"),
        helper.make_node("Gemm", ["relu1", "fc2.weight", "fc2.bias"], ["fc2"], name="fc2"),
        helper.make_node("Softmax", ["fc2"], ["probs"], name="softmax", axis=1),
    ]
    graph = helper.make_graph(
        nodes, "digits_mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 64])],
        [helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["N", 10])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              producer_name="smelt examples/train_digits.py")
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    return model


def main():
    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)
    y = digits.target.astype(np.int64)
    x_train, x_test, y_train, y_test = train_test_split(
        x, y, test_size=0.25, random_state=0, stratify=y)
    clf = MLPClassifier(hidden_layer_sizes=(32,), activation="relu", solver="adam",
                        max_iter=500, random_state=0)
    clf.fit(x_train, y_train)

    model = export(clf)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    probs = sess.run(None, {"x": x_test})[0]
    pred = probs.argmax(axis=1)
    if not np.array_equal(pred, clf.predict(x_test)):
        print("train_digits: onnxruntime and scikit-learn disagree; export is wrong",
              file=sys.stderr)
        return 1
    correct = int((pred == y_test).sum())
    line = f"accuracy: {correct / len(y_test):.3f} ({correct}/{len(y_test)})"

    onnx.save(model, os.path.join(HERE, "digits_mlp.onnx"))
    np.save(os.path.join(HERE, "digits_test.npy"), np.ascontiguousarray(x_test))
    np.save(os.path.join(HERE, "digits_test_labels.npy"), np.ascontiguousarray(y_test))
    with open(os.path.join(HERE, "digits_expected.txt"), "w") as f:
        f.write(line + "\n")
    print(f"train: {len(y_train)} images, held out: {len(y_test)}")
    print(f"onnxruntime {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

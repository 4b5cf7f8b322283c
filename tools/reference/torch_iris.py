"""PyTorch reference for the Iris MLP benchmarks of `bench`.

Trains the same network as ``mlp/*/data:iris`` (4 -> 10 ReLU -> 3, softmax cross-entropy, plain
SGD lr 0.01, full batch of 120 training rows, features min-max scaled on the training rows) the
way a framework user would: eager PyTorch, one optimizer step per epoch, on the GPU and on the CPU,
with the loss read back every epoch (``loss.item()``, readback:1) or never (readback:0). Writes
Google Benchmark JSON with rows named ``mlp/<gpu|cpu>/torch_eager/data:iris/batch:120/hidden:10/
readback:R`` and the counter ``t_epoch``, so the report tool can put it beside the suite's paths.

Usage: python3 tools/reference/torch_iris.py --data data/iris.csv --out torch-iris.json
"""

from __future__ import annotations

import csv
import sys
import time
from typing import Any

from benchmark_json import benchmark_row, write_benchmark_file
from reference_options import EPOCHS, ReferenceParser


def load_training_rows(path: str, torch: Any) -> tuple[Any, Any]:
    """First 80% of each class (a fixed stratified split), min-max scaled on those rows."""
    with open(path, newline="", encoding="utf-8") as file:
        rows = list(csv.reader(file))[1:]
    by_class: dict[int, list[list[float]]] = {}
    for row in rows:
        by_class.setdefault(int(row[-1]), []).append([float(value) for value in row[:-1]])
    features, labels = [], []
    for label, class_rows in sorted(by_class.items()):
        kept = class_rows[: len(class_rows) * 4 // 5]
        features += kept
        labels += [label] * len(kept)
    x = torch.tensor(features)
    x = (x - x.min(0).values) / (x.max(0).values - x.min(0).values)
    return x, torch.tensor(labels)


def seconds_per_epoch(torch: Any, device: str, x: Any, y: Any, epochs: int, readback: int) -> float:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 10), torch.nn.ReLU(), torch.nn.Linear(10, 3)).to(
        device
    )
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_function = torch.nn.CrossEntropyLoss()
    x, y = x.to(device), y.to(device)

    def epoch(index: int) -> None:
        optimizer.zero_grad()
        loss = loss_function(model(x), y)
        loss.backward()
        optimizer.step()
        if readback and index % readback == 0:
            loss.item()  # a device-to-host copy and a synchronisation

    for index in range(50):  # warm-up: kernel loading, allocator, autograd graph caches
        epoch(index)
    if device == "cuda":
        torch.cuda.synchronize()
    start = time.perf_counter()
    for index in range(epochs):
        epoch(index)
    if device == "cuda":
        torch.cuda.synchronize()
    return (time.perf_counter() - start) / epochs


def main() -> int:
    parser = ReferenceParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="data/iris.csv")
    parser.add_argument("--out", required=True)
    parser.add_argument("--epochs", type=EPOCHS, default=2000)
    arguments = parser.parse_args()
    try:
        import torch
    except ImportError:
        print("torch_iris: PyTorch is not installed; nothing to compare", file=sys.stderr)
        return 2
    x, y = load_training_rows(arguments.data, torch)
    devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    rows = []
    for device in devices:
        for readback in (1, 0):
            seconds = seconds_per_epoch(torch, device, x, y, arguments.epochs, readback)
            backend = "gpu" if device == "cuda" else "cpu"
            name = f"mlp/{backend}/torch_eager/data:iris/batch:120/hidden:10/readback:{readback}"
            counters = {"batch": 120, "hidden": 10, "readback": readback}
            counters.update({"epochs": arguments.epochs, "t_epoch": seconds})
            label = f"workload=mlp backend={backend} variant=torch_eager data=iris input=resident"
            rows.append(benchmark_row(name, seconds * arguments.epochs, 1, label, counters))
            print(f"{name}: {seconds * 1e6:.1f} us per epoch")
    context = {
        "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none",
        "torch_version": torch.__version__,
        "torch_threads": str(torch.get_num_threads()),
    }
    write_benchmark_file(arguments.out, context, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())

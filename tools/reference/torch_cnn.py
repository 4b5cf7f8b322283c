"""PyTorch reference for the CNN benchmarks of `bench`.

Trains the same network as the suite's CNN paths (kernels/cnn/cnn_spec.hpp: the PyTorch tutorial's
CIFAR-10 CNN, Conv2d(3, 32, 5, padding=2) -> MaxPool2d(2) -> Conv2d(32, 32, 5, padding=2) ->
MaxPool2d(2) -> Conv2d(32, 64, 5, padding=2) -> MaxPool2d(2) -> Flatten -> Linear(1024, 64) ->
Linear(64, 10), no activations unless --relu puts one after each convolution) with plain SGD at
lr 0.01 and CrossEntropyLoss, the way a framework user would: eager PyTorch, one optimizer step
per batch, the loss read back every step (``loss.item()``, readback:1). On the CPU with
``torch.set_num_threads(T)`` for 1 thread and for all cores (``--threads`` names others), and on
CUDA when it is available; at batches 1, 16, 64 and 256, and 1024 on CUDA. The inter-op pool is set
to T as well (``torch.set_num_interop_threads``), so PyTorch uses no more cores than the suite's
``threads:T`` row; PyTorch accepts that only once, before its first parallel work, so with several
counts it is set to the largest.

Data: synthetic (uniform random images in [0, 1] and random labels 0..9, 8 batches' worth,
seeded; the time of a step does not depend on the values) or CIFAR-10's binary files from
--cifar10-dir (default $GPUBENCH_CIFAR10_DIR): the first images of data_batch_1.bin, ... scaled
to [0, 1] like ToTensor(). The data are resident on the device; step s trains on batch s mod 8.

Writes Google Benchmark JSON with rows named
``cnn/<cpu|gpu>/torch_eager/data:D/batch:B/readback:1[/relu:1][/threads:T]`` (one iteration =
all timed steps) and the counters t_step (seconds per step), images_per_s, final_loss, flop (of the
iteration, counted like the suite's cnn_step_flop), batch, readback, steps and torch_threads, so
the report tool can put it beside the suite's paths.

Usage: python3 tools/reference/torch_cnn.py --out torch-cnn.json [--cpu-batches 1,16,64,256]
       [--threads 1] [--cifar10-dir DIR] [--relu]
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

from benchmark_json import benchmark_row, write_benchmark_file
from reference_options import BATCHES, SECONDS, THREADS, ReferenceParser

IMAGE_SHAPE = (3, 32, 32)
CLASSES = 10
LEARNING_RATE = 0.01
CIFAR10_RECORD_BYTES = 1 + 3 * 32 * 32
CIFAR10_TRAIN_FILES = [f"data_batch_{i}.bin" for i in range(1, 6)]
DATA_BATCHES = 8  # batches in the resident training set; step s trains on batch s mod 8
CPU_BATCHES = "1,16,64,256"
CUDA_BATCHES = "1,16,64,256,1024"
# (in_channels, out_channels, input size) of the three convolutions and (in, out) of the linears.
CONVOLUTIONS = ((3, 32, 32), (32, 32, 16), (32, 64, 8))
LINEARS = ((64 * 4 * 4, 64), (64, CLASSES))


def step_flop(batch: int) -> float:
    """The suite's cnn_step_flop: 2 flop per multiply-add of the convolutions and linears,
    forward, weight gradient, and input gradient for every layer but conv1."""
    flop = 0.0
    for index, (inputs, outputs, size) in enumerate(CONVOLUTIONS):
        product = 2.0 * batch * outputs * inputs * 25 * size * size
        flop += 2.0 * product + (product if index > 0 else 0.0)
    for inputs, outputs in LINEARS:
        flop += 3.0 * 2.0 * batch * inputs * outputs
    return flop


def make_network(torch: Any, relu: bool) -> Any:
    layers: list[Any] = []
    for inputs, outputs, _ in CONVOLUTIONS:
        layers.append(torch.nn.Conv2d(inputs, outputs, 5, padding=2))
        if relu:
            layers.append(torch.nn.ReLU())
        layers.append(torch.nn.MaxPool2d(2))
    layers.append(torch.nn.Flatten())
    layers += [torch.nn.Linear(inputs, outputs) for inputs, outputs in LINEARS]
    return torch.nn.Sequential(*layers)


def read_cifar10(directory: Path, rows: int, torch: Any) -> tuple[Any, Any]:
    """The first `rows` training images (NCHW float in [0, 1]) and labels of CIFAR-10's binary
    version, reading data_batch_1.bin, data_batch_2.bin, ... as far as needed."""
    import numpy

    images, labels, have = [], [], 0
    for name in CIFAR10_TRAIN_FILES:
        if have >= rows:
            break
        path = directory / name
        if not path.is_file():
            raise SystemExit(f"torch_cnn: cannot open CIFAR-10 file '{path}'")
        size = path.stat().st_size
        if size == 0 or size % CIFAR10_RECORD_BYTES != 0:
            raise SystemExit(
                f"torch_cnn: CIFAR-10 file '{path}' is {size} bytes, expected a positive multiple"
                f" of {CIFAR10_RECORD_BYTES}"
            )
        records = numpy.fromfile(path, dtype=numpy.uint8).reshape(-1, CIFAR10_RECORD_BYTES)
        records = records[: rows - have]
        bad = numpy.flatnonzero(records[:, 0] >= CLASSES)
        if bad.size:
            raise SystemExit(
                f"torch_cnn: CIFAR-10 file '{path}': record {bad[0]} has label"
                f" {records[bad[0], 0]}, above 9"
            )
        labels.append(torch.from_numpy(records[:, 0].astype(numpy.int64)))
        # Division in float32, like ToTensor(), so the values are the suite's bit for bit.
        pixels = torch.from_numpy(records[:, 1:].copy()).float().div(255)
        images.append(pixels.reshape(-1, *IMAGE_SHAPE))
        have += len(records)
    if have < rows:
        raise SystemExit(
            f"torch_cnn: {rows} images asked for, the files in '{directory}' hold {have}"
        )
    return torch.cat(images), torch.cat(labels)


def training_data(torch: Any, cifar10: Path | None, batch: int) -> tuple[Any, Any]:
    rows = batch * DATA_BATCHES
    if cifar10 is not None:
        rows = min(rows, 50000 // batch * batch)
        return read_cifar10(cifar10, rows, torch)
    generator = torch.Generator().manual_seed(2024)
    images = torch.rand(rows, *IMAGE_SHAPE, generator=generator)
    labels = torch.randint(0, CLASSES, (rows,), generator=generator)
    return images, labels


def time_training(
    torch: Any,
    device: str,
    images: Any,
    labels: Any,
    batch: int,
    relu: bool,
    seconds: float,
) -> tuple[float, int, float]:
    """Seconds per step, the number of timed steps and the last step's loss."""
    torch.manual_seed(0)
    model = make_network(torch, relu).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=LEARNING_RATE)
    loss_function = torch.nn.CrossEntropyLoss()
    images, labels = images.to(device), labels.to(device)
    batches = len(images) // batch

    def step(index: int) -> float:
        first = (index % batches) * batch
        optimizer.zero_grad()
        loss = loss_function(model(images[first : first + batch]), labels[first : first + batch])
        loss.backward()
        optimizer.step()
        return loss.item()  # readback:1, a device-to-host copy and a synchronisation on CUDA

    # Warm-up (oneDNN primitive creation, cuDNN heuristics, the allocator), which also sizes the
    # timed run to about `seconds`.
    warm_up_steps = 5
    start = time.perf_counter()
    for index in range(warm_up_steps):
        step(index)
    estimate = (time.perf_counter() - start) / warm_up_steps
    steps = max(5, min(1000, round(seconds / max(estimate, 1e-6))))
    loss = 0.0
    start = time.perf_counter()
    for index in range(steps):
        loss = step(index)
    return (time.perf_counter() - start) / steps, steps, loss


def main() -> int:
    parser = ReferenceParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="JSON file to write")
    parser.add_argument("--cpu-batches", type=BATCHES, default=BATCHES(CPU_BATCHES))
    parser.add_argument("--cuda-batches", type=BATCHES, default=BATCHES(CUDA_BATCHES))
    parser.add_argument(
        "--threads",
        type=THREADS,
        default=None,
        help="comma-separated CPU thread counts (default: 1 and all cores)",
    )
    parser.add_argument(
        "--cifar10-dir",
        default=os.environ.get("GPUBENCH_CIFAR10_DIR") or None,
        help="folder of CIFAR-10's binary files (default: $GPUBENCH_CIFAR10_DIR; else synthetic)",
    )
    parser.add_argument("--relu", action="store_true", help="a ReLU after each convolution")
    parser.add_argument("--seconds", type=SECONDS, default=2.0, help="timed seconds per row, about")
    parser.add_argument("--no-cuda", action="store_true", help="the CPU rows only")
    parser.add_argument(
        "--allow-tf32",
        action="store_true",
        help="keep PyTorch's default TF32 convolutions on CUDA (default: fp32, like the suite)",
    )
    arguments = parser.parse_args()
    try:
        import torch
    except ImportError:
        print("torch_cnn: PyTorch is not installed; nothing to compare", file=sys.stderr)
        return 2

    cifar10 = Path(arguments.cifar10_dir) if arguments.cifar10_dir else None
    data = "cifar10" if cifar10 is not None else "synthetic"
    all_cores = os.cpu_count() or 1
    threads = arguments.threads or sorted({1, all_cores})
    torch.backends.cudnn.allow_tf32 = arguments.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = arguments.allow_tf32
    runs: list[tuple[str, int | None, list[int]]] = [
        ("cpu", count, arguments.cpu_batches) for count in threads
    ]
    if torch.cuda.is_available() and not arguments.no_cuda:
        runs.append(("cuda", None, arguments.cuda_batches))

    rows = []
    default_threads = torch.get_num_threads()
    cpu_counts = [count for _, count, _ in runs if count is not None]
    if cpu_counts:
        torch.set_num_interop_threads(max(cpu_counts))
    for device, thread_count, batches in runs:
        torch.set_num_threads(thread_count if thread_count is not None else default_threads)
        for batch in batches:
            images, labels = training_data(torch, cifar10, batch)
            seconds, steps, loss = time_training(
                torch, device, images, labels, batch, arguments.relu, arguments.seconds
            )
            backend = "gpu" if device == "cuda" else "cpu"
            name = f"cnn/{backend}/torch_eager/data:{data}/batch:{batch}/readback:1"
            if arguments.relu:
                name += "/relu:1"
            counters: dict[str, float] = {"batch": batch, "readback": 1, "steps": steps}
            if thread_count is not None:
                name += f"/threads:{thread_count}"
                counters["torch_threads"] = thread_count
            flop = step_flop(batch) * steps
            counters.update(
                {
                    "t_step": seconds,
                    "images_per_s": batch / seconds,
                    "final_loss": loss,
                    "flop": flop,
                    "FLOP/s": flop / (seconds * steps),
                }
            )
            label = f"workload=cnn backend={backend} variant=torch_eager data={data} input=resident"
            rows.append(benchmark_row(name, seconds * steps, 1, label, counters))
            print(f"{name}: {seconds * 1e3:.2f} ms per step, {batch / seconds:.0f} images/s")
    context = {
        "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none",
        "torch_version": torch.__version__,
        "torch_threads_default": str(default_threads),
        "torch_interop_threads": str(torch.get_num_interop_threads()),
        "mkldnn": str(torch.backends.mkldnn.is_available()),
        "cudnn_allow_tf32": str(torch.backends.cudnn.allow_tf32),
        "num_cpus": str(all_cores),
    }
    write_benchmark_file(arguments.out, context, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())

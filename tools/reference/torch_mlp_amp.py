"""PyTorch reference for the mixed-precision MLP benchmarks of `bench`.

Trains the suite's MLP (kernels/mlp/mlp_spec.hpp: inputs -> hidden layers with ReLU -> classes,
softmax cross-entropy averaged over the batch, plain SGD at lr 0.01) the way a framework user
would, eager PyTorch with one optimizer step per iteration and the loss never read back in the
timed loop (readback:0), in three precisions:
- fp32;
- bf16: ``torch.autocast(dtype=torch.bfloat16)``, no loss scaling (as PyTorch recommends for bf16);
- fp16: ``torch.autocast(dtype=torch.float16)`` with ``GradScaler`` (dynamic loss scaling).
The weights stay fp32 (autocast casts them for each product); TF32 is off, as in the suite.

Cases (``--cases``, comma-separated): ``iris`` (the 120 training rows of data/iris.csv, 4-10-3,
full batch, 20000 epochs: the first 80% of each class, min-max scaled, like torch_iris.py) and
``synthetic:B:H`` (B rows of harness/dataset.hpp's Gaussian clusters, 64 features and 10 classes,
generated with the same recipe but PyTorch's random numbers; hidden H as bench writes it, "512" or
"4096x2"; full batch, 20 epochs per run). Default: iris, synthetic:4096:4096x2,
synthetic:256:4096x2, synthetic:256:64, synthetic:4096:512, synthetic:4096:4096 and
synthetic:65536:4096.

Per case and precision, from the same initial weights (torch.manual_seed(1); PyTorch's own
initialisation, the distribution the suite uses, not its numbers):
1. one training run of the case's epochs, untimed, reading GradScaler's scale after every fp16
   step: final_loss (the last step's loss), and for fp16 loss_scale (the scale at the end) and
   skipped_steps (steps whose scaled gradients overflowed, so GradScaler skipped the update and
   lowered the scale). It is also the warm-up (kernel loading, the allocator, autograd caches);
2. a short host-clock estimate of a step, which sizes the timed part to about ``--seconds``;
3. the timed part: training runs of the case's epochs back to back, continuing from there, timed
   with CUDA events after a synchronisation (the host clock around synchronised runs on the CPU).
t_wall is the seconds of one run, t_epoch of one epoch (one step).

Writes Google Benchmark JSON (tools/reference/benchmark_json.py) with rows named
``mlp/gpu/torch_eager/data:D/batch:B/hidden:H/readback:0[/precision:bf16|fp16]`` (fp32 rows
without the precision segment, like the suite's), labelled ``workload=mlp backend=gpu
variant=torch_eager data=D precision=P input=resident``, with the counters t_epoch, t_wall,
samples_per_s, final_loss, flop (of one run, counted like the suite's mlp_step_flop), FLOP/s,
batch, hidden, hidden_layers, readback, epochs, and loss_scale and skipped_steps on fp16 rows. A
precision this machine cannot run is a row skipped with "not supported on this machine: ...". The
context names the GPU, CPU model, logical CPU count and host name the way bench does, so the
report merges this file with the suite's sweep of the same machine and compares them case by case.

``--device cpu`` runs the same on the CPU (rows ``mlp/cpu/torch_eager/...``) to check the script
without a GPU; CPU autocast has bf16, and fp16 where PyTorch has a CPU GradScaler (2.3 and later).

Usage: python3 tools/reference/torch_mlp_amp.py --out torch-mlp-amp.json [--device cuda|cpu]
       [--cases iris,synthetic:4096:4096x2] [--precisions fp32,bf16,fp16] [--seconds 1]
Exit status: 0 rows written, 2 no PyTorch, no CUDA device (with --device cuda) or bad arguments.
"""

from __future__ import annotations

import os
import socket
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from benchmark_json import benchmark_row, skipped_row, write_benchmark_file
from reference_options import EPOCHS, SECONDS, ReferenceParser
from torch_iris import load_training_rows

REPO = Path(__file__).resolve().parents[2]
LEARNING_RATE = 0.01  # kMlpLearningRate
INITIAL_WEIGHT_SEED = 1  # kMlpInitialWeightSeed (PyTorch's generator, so other numbers)
SYNTHETIC_FEATURES = 64  # kSyntheticFeatures
SYNTHETIC_CLASSES = 10  # kSyntheticClasses
SYNTHETIC_SEED = 7  # kSyntheticSeed
SYNTHETIC_SPREAD = 0.5  # standard deviation of each feature around its class centre
IRIS_EPOCHS = 20000
SYNTHETIC_EPOCHS = 20
PRECISIONS = ("fp32", "bf16", "fp16")
DEFAULT_CASES = (
    "iris,synthetic:4096:4096x2,synthetic:256:4096x2,synthetic:256:64,synthetic:4096:512,"
    "synthetic:4096:4096,synthetic:65536:4096"
)
# Steps timed on the host clock to size the timed part (after the untimed run has warmed up).
ESTIMATE_STEPS = 20
MAX_RUNS = 10000


class NotSupported(Exception):
    """A precision this machine's PyTorch or device cannot run: the row is skipped."""


@dataclass
class Case:
    data: str  # "iris" or "synthetic"
    batch: int
    hidden: list[int]
    epochs: int

    @property
    def hidden_text(self) -> str:
        """Hidden layers as bench names them: "512", or "4096x2" for two layers of 4096."""
        if len(set(self.hidden)) == 1 and len(self.hidden) > 1:
            return f"{self.hidden[0]}x{len(self.hidden)}"
        return "-".join(str(h) for h in self.hidden)


def parse_case(text: str, iris_epochs: int, synthetic_epochs: int) -> Case:
    """ "iris" or "synthetic:B:H" (H "512" or "4096x2")."""
    if text == "iris":
        return Case("iris", 120, [10], iris_epochs)
    parts = text.split(":")
    if len(parts) != 3 or parts[0] != "synthetic":
        raise ValueError(f"unknown case {text!r} (expected iris or synthetic:BATCH:HIDDEN)")
    width, _, layers = parts[2].partition("x")
    try:
        batch, hidden = int(parts[1]), [int(width)] * (int(layers) if layers else 1)
    except ValueError:
        raise ValueError(f"case {text!r}: batch and hidden must be numbers") from None
    if batch < 1 or min(hidden) < 1:
        raise ValueError(f"case {text!r}: batch and widths must be positive")
    return Case("synthetic", batch, hidden, synthetic_epochs)


def step_flop(inputs: int, hidden: list[int], classes: int, batch: int) -> float:
    """The suite's mlp_step_flop: the layer products only, 2 flop per multiply-add; forward and
    weight gradient for every layer, input gradient for every layer but the first."""
    widths = [inputs, *hidden, classes]
    flop = 0.0
    for layer, (fan_in, fan_out) in enumerate(zip(widths, widths[1:])):
        product = 2.0 * batch * fan_in * fan_out
        flop += 2.0 * product + (product if layer > 0 else 0.0)
    return flop


def synthetic_data(torch: Any, rows: int) -> tuple[Any, Any]:
    """harness/dataset.hpp's make_gaussian_clusters recipe: class centres uniform in [-1, 1] per
    feature, samples centre + N(0, 0.5^2) per feature, labels row % classes."""
    generator = torch.Generator().manual_seed(SYNTHETIC_SEED)
    centres = torch.rand(SYNTHETIC_CLASSES, SYNTHETIC_FEATURES, generator=generator) * 2 - 1
    labels = torch.arange(rows) % SYNTHETIC_CLASSES
    noise = torch.randn(rows, SYNTHETIC_FEATURES, generator=generator) * SYNTHETIC_SPREAD
    return centres[labels] + noise, labels


def case_data(torch: Any, case: Case, iris_csv: str) -> tuple[Any, Any, int]:
    """(inputs, labels, classes) of a case, on the host."""
    if case.data == "iris":
        x, y = load_training_rows(iris_csv, torch)
        return x, y, int(y.max()) + 1
    x, y = synthetic_data(torch, case.batch)
    return x, y, SYNTHETIC_CLASSES


def make_network(torch: Any, inputs: int, hidden: list[int], classes: int) -> Any:
    torch.manual_seed(INITIAL_WEIGHT_SEED)
    layers: list[Any] = []
    for fan_in, fan_out in zip([inputs, *hidden], hidden):
        layers += [torch.nn.Linear(fan_in, fan_out), torch.nn.ReLU()]
    layers.append(torch.nn.Linear(hidden[-1], classes))
    return torch.nn.Sequential(*layers)


def make_scaler(torch: Any, device: str) -> Any:
    """GradScaler for fp16: torch.amp.GradScaler(device) where it exists (PyTorch 2.3+, CUDA and
    CPU), else the CUDA-only torch.cuda.amp.GradScaler."""
    amp = getattr(torch, "amp", None)
    if amp is not None and hasattr(amp, "GradScaler"):
        return amp.GradScaler(device)
    if device == "cuda":
        return torch.cuda.amp.GradScaler()
    raise NotSupported(
        f"fp16 autocast needs a CPU GradScaler, which PyTorch {torch.__version__} lacks (2.3+)"
    )


def check_supported(torch: Any, device: str, precision: str) -> None:
    if device == "cuda" and precision == "bf16" and not torch.cuda.is_bf16_supported():
        raise NotSupported(f"{torch.cuda.get_device_name(0)} has no bf16 arithmetic")


class Trainer:
    """One network, its optimiser and, for fp16, its GradScaler, on resident data."""

    def __init__(
        self,
        torch: Any,
        device: str,
        precision: str,
        x: Any,
        y: Any,
        hidden: list[int],
        classes: int,
    ) -> None:
        self.torch = torch
        self.device = device
        self.x, self.y = x.to(device), y.to(device)
        self.model = make_network(torch, x.shape[1], hidden, classes).to(device)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=LEARNING_RATE)
        self.loss_function = torch.nn.CrossEntropyLoss()
        self.autocast_dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(precision)
        self.scaler = make_scaler(torch, device) if precision == "fp16" else None

    def step(self) -> Any:
        """One SGD step; returns the loss tensor (never read here: no synchronisation)."""
        self.optimizer.zero_grad(set_to_none=True)
        if self.autocast_dtype is None:
            loss = self.loss_function(self.model(self.x), self.y)
            loss.backward()
            self.optimizer.step()
            return loss
        with self.torch.autocast(device_type=self.device, dtype=self.autocast_dtype):
            loss = self.loss_function(self.model(self.x), self.y)
        if self.scaler is None:
            loss.backward()
            self.optimizer.step()
        else:
            self.scaler.scale(loss).backward()
            self.scaler.step(self.optimizer)  # skipped when the gradients hold an inf or NaN
            self.scaler.update()
        return loss

    def synchronize(self) -> None:
        if self.device == "cuda":
            self.torch.cuda.synchronize()


@dataclass
class RunResult:
    final_loss: float
    loss_scale: float | None
    skipped_steps: int | None


def counted_run(trainer: Trainer, steps: int) -> RunResult:
    """An untimed training run of `steps` steps. GradScaler lowers its scale exactly when it
    skips a step, so reading the scale after each fp16 step counts the skipped ones."""
    loss = None
    skipped = 0
    for _ in range(steps):
        before = trainer.scaler.get_scale() if trainer.scaler is not None else None
        loss = trainer.step()
        if trainer.scaler is not None and trainer.scaler.get_scale() < before:
            skipped += 1
    scale = trainer.scaler.get_scale() if trainer.scaler is not None else None
    return RunResult(
        final_loss=float(loss.item()) if loss is not None else float("nan"),
        loss_scale=scale,
        skipped_steps=skipped if trainer.scaler is not None else None,
    )


def seconds_of(trainer: Trainer, work: Callable[[], None]) -> float:
    """Seconds `work` takes: CUDA events on the GPU (recorded after a synchronisation), the host
    clock around the synchronised work on the CPU."""
    torch = trainer.torch
    trainer.synchronize()
    if trainer.device == "cuda":
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        work()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / 1e3
    begin = time.perf_counter()
    work()
    return time.perf_counter() - begin


def timed_runs(trainer: Trainer, epochs: int, seconds: float) -> tuple[float, int]:
    """(seconds per training run of `epochs` steps, runs timed)."""

    def steps(count: int) -> Callable[[], None]:
        def work() -> None:
            for _ in range(count):
                trainer.step()

        return work

    per_step = seconds_of(trainer, steps(ESTIMATE_STEPS)) / ESTIMATE_STEPS
    runs = max(1, min(MAX_RUNS, round(seconds / max(per_step * epochs, 1e-9))))
    return seconds_of(trainer, steps(runs * epochs)) / runs, runs


def row_name(backend: str, case: Case, precision: str) -> str:
    name = (
        f"mlp/{backend}/torch_eager/data:{case.data}/batch:{case.batch}/"
        f"hidden:{case.hidden_text}/readback:0"
    )
    return name if precision == "fp32" else f"{name}/precision:{precision}"


def measure(
    torch: Any, device: str, case: Case, precision: str, iris_csv: str, seconds: float
) -> dict[str, Any]:
    """One row: the counted run, then the timed runs, of one case in one precision."""
    backend = "gpu" if device == "cuda" else "cpu"
    name = row_name(backend, case, precision)
    label = (
        f"workload=mlp backend={backend} variant=torch_eager data={case.data} "
        f"precision={precision} input=resident"
    )
    try:
        check_supported(torch, device, precision)
        x, y, classes = case_data(torch, case, iris_csv)
        trainer = Trainer(torch, device, precision, x, y, case.hidden, classes)
    except NotSupported as reason:
        print(f"{name}: skipped, {reason}", file=sys.stderr)
        return skipped_row(name, label, f"not supported on this machine: {reason}")
    result = counted_run(trainer, case.epochs)
    seconds_per_run, runs = timed_runs(trainer, case.epochs, seconds)
    t_epoch = seconds_per_run / case.epochs
    flop = step_flop(x.shape[1], case.hidden, classes, case.batch) * case.epochs
    counters: dict[str, float] = {
        "batch": case.batch,
        "hidden": case.hidden[0],
        "hidden_layers": len(case.hidden),
        "readback": 0,
        "epochs": case.epochs,
        "t_epoch": t_epoch,
        "t_wall": seconds_per_run,
        "samples_per_s": case.batch / t_epoch,
        "flop": flop,
        "FLOP/s": flop / seconds_per_run,
        "final_loss": result.final_loss,
    }
    if result.loss_scale is not None and result.skipped_steps is not None:
        counters.update({"loss_scale": result.loss_scale, "skipped_steps": result.skipped_steps})
    if device == "cpu":
        counters["torch_threads"] = torch.get_num_threads()
    print(f"{name}: {t_epoch * 1e6:.1f} us per epoch, final loss {result.final_loss:.4g}")
    return benchmark_row(name, seconds_per_run, runs, label, counters)


def machine_context(torch: Any) -> dict[str, str]:
    """The keys bench's context identifies a machine by (gpu, cpu_model read as bench reads
    /proc/cpuinfo, cpu_logical_cpus, host_name), and PyTorch's versions."""
    cpu_model = "unknown"
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as file:
            for line in file:
                key, sep, value = line.partition(":")
                if sep and key.strip() == "model name":
                    cpu_model = value.strip()
                    break
    except OSError:
        pass
    return {
        "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none",
        "cpu_model": cpu_model,
        "cpu_logical_cpus": str(os.cpu_count() or 1),
        "host_name": socket.gethostname(),
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "torch_version": torch.__version__,
        "torch_cuda_version": str(torch.version.cuda),
        "torch_threads_default": str(torch.get_num_threads()),
        "torch_allow_tf32": str(torch.backends.cuda.matmul.allow_tf32),
    }


def main() -> int:
    parser = ReferenceParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="JSON file to write")
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    parser.add_argument("--cases", default=DEFAULT_CASES, help="iris and synthetic:BATCH:HIDDEN")
    parser.add_argument("--precisions", default=",".join(PRECISIONS))
    parser.add_argument("--seconds", type=SECONDS, default=1.0, help="timed seconds per row, about")
    parser.add_argument("--iris-epochs", type=EPOCHS, default=IRIS_EPOCHS)
    parser.add_argument("--synthetic-epochs", type=EPOCHS, default=SYNTHETIC_EPOCHS)
    parser.add_argument("--data", default=str(REPO / "data" / "iris.csv"), help="iris.csv")
    arguments = parser.parse_args()
    try:
        cases = [
            parse_case(text, arguments.iris_epochs, arguments.synthetic_epochs)
            for text in arguments.cases.split(",")
        ]
    except ValueError as problem:
        parser.error(str(problem))
    precisions = arguments.precisions.split(",")
    unknown = sorted(set(precisions) - set(PRECISIONS))
    if unknown:
        parser.error(
            f"unknown precision {', '.join(unknown)} (choose from {', '.join(PRECISIONS)})"
        )
    try:
        import torch
    except ImportError:
        print("torch_mlp_amp: PyTorch is not installed; nothing to compare", file=sys.stderr)
        return 2
    if arguments.device == "cuda" and not torch.cuda.is_available():
        print(
            f"torch_mlp_amp: PyTorch {torch.__version__} sees no CUDA device; nothing to compare "
            "(--device cpu checks the script on the CPU)",
            file=sys.stderr,
        )
        return 2
    # The suite's products are true fp32; PyTorch would otherwise be free to use TF32.
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    rows = [
        measure(torch, arguments.device, case, precision, arguments.data, arguments.seconds)
        for case in cases
        for precision in precisions
    ]
    write_benchmark_file(arguments.out, machine_context(torch), rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Benchmarks for exercise 6, sync: what a device-to-host sync per batch costs.

One training epoch of the book's CNN, timed with pytest-benchmark:

* on a fixed in-memory set of batches (no data loading to blur the picture),
  for each device (`cpu`, and `cuda` when there is one; never the simulated
  accelerator, whose timings mean nothing) and each loop style: the book's
  loop, which calls `.item()` on every batch (`per-batch sync`), and the
  target's `sync.train_epoch`, which syncs once per epoch (`one sync`);
* end to end through the real JPEG pipeline (the book's training transform on
  a synthetic CelebA), with `num_workers` and `pin_memory` settings.

Each timed epoch ends with `torch.cuda.synchronize()` on CUDA, so no queued,
unfinished GPU work escapes the clock. Run them with
`pytest solutions --benchmark-only` (or `exercises`, or a path), or `kata bench`
for a table and a chart. Plain `pytest` skips them; `pytest --slow` runs each
once, untimed, so they never rot.
"""

import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader

from kata.celeba import CelebA
from kata.checks.book import book_cnn, book_epoch, book_eval_transform, book_train_transform, smile_of

BATCH = 32
DISTINCT_BATCHES = 20                     # the in-memory set: 640 images, cycled on fast devices
EPOCH_BATCHES = {"cpu": 20, "cuda": 200}  # an epoch long enough to time, short enough on a 2-core CPU
ROUNDS = {"cpu": 3, "cuda": 10}


def cuda_param():
    return pytest.param("cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device"))


DEVICES = ["cpu", cuda_param()]


def synchronize(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


class Batches:
    """A fixed list of host batches, cycled to `n` per epoch; looks like a DataLoader."""

    def __init__(self, batches, n):
        self.batches, self.n = batches, n
        self.dataset = range(n * BATCH)

    def __len__(self):
        return self.n

    def __iter__(self):
        for i in range(self.n):
            yield self.batches[i % len(self.batches)]


@pytest.fixture(scope="session")
def bench_root(tmp_path_factory):
    from kata.data.synth import generate

    root = tmp_path_factory.mktemp("bench_celeba")
    generate(root, n_train=DISTINCT_BATCHES * BATCH, n_valid=1, n_test=1, workers=1, progress=False)
    return root


@pytest.fixture(scope="session")
def host_batches(bench_root):
    """The in-memory set: real synthetic faces through the book's eval transform."""
    ds = CelebA(bench_root, split="train", transform=book_eval_transform(), target_transform=smile_of)
    dl = DataLoader(ds, batch_size=BATCH)
    return [(x.contiguous(), y) for x, y in dl]


def time_epochs(benchmark, run_epoch, device, images):
    """Time `run_epoch()` (one epoch), synchronising the device at the end of each."""
    def epoch():
        result = run_epoch()
        synchronize(device)
        return result

    benchmark.extra_info.update(device=device.type, images=images)
    if not benchmark.disabled:  # (disabled: the smoke pass of `pytest --slow`, one untimed call)
        epoch()  # warm-up: cuDNN autotuning, allocator, first-touch
    return benchmark.pedantic(epoch, rounds=ROUNDS[device.type], iterations=1)


@pytest.mark.parametrize("style", ["per-batch sync", "one sync"])
@pytest.mark.parametrize("device_name", DEVICES)
def test_epoch_in_memory(benchmark, kata_target, host_batches, device_name, style):
    sync = kata_target.module("sync")   # the module itself: a benchmark times its code, not its records
    device = torch.device(device_name)
    torch.manual_seed(1)
    model = book_cnn().to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.001)
    loss_fn = nn.BCELoss()
    batches = host_batches
    if device.type == "cuda":
        batches = [(x.pin_memory(), y.pin_memory()) for x, y in host_batches]
    dl = Batches(batches, EPOCH_BATCHES[device.type])
    if style == "per-batch sync":  # the book's loop: .item() on every batch
        def run_epoch():
            model.train()
            return book_epoch(model, dl, optimizer, loss_fn, device=device)
    else:
        def run_epoch():
            return sync.train_epoch(model, dl, loss_fn, optimizer, device)
    benchmark.extra_info.update(style=style, kind="in-memory")
    loss, accuracy = time_epochs(benchmark, run_epoch, device, len(dl) * BATCH)
    assert isinstance(loss, float) and 0.0 <= accuracy <= 1.0


@pytest.mark.parametrize("pin_memory", [False, True], ids=["pageable", "pinned"])
@pytest.mark.parametrize("num_workers", [0, 2], ids=lambda n: f"workers={n}")
def test_epoch_through_the_jpeg_pipeline(benchmark, kata_target, bench_root, num_workers, pin_memory):
    sync = kata_target.module("sync")
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if pin_memory and device.type != "cuda":
        pytest.skip("pin_memory only speeds up copies to a CUDA device; there is none here")
    ds = CelebA(bench_root, split="train", transform=book_train_transform(), target_transform=smile_of)
    dl = DataLoader(ds, batch_size=BATCH, shuffle=True, num_workers=num_workers, pin_memory=pin_memory,
                    persistent_workers=num_workers > 0)
    torch.manual_seed(1)
    model = book_cnn().to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.001)
    benchmark.extra_info.update(style="one sync", kind="jpeg pipeline", num_workers=num_workers,
                                pin_memory=pin_memory)
    loss, accuracy = time_epochs(benchmark, lambda: sync.train_epoch(model, dl, nn.BCELoss(), optimizer, device),
                                 device, len(ds))
    assert isinstance(loss, float) and 0.0 <= accuracy <= 1.0

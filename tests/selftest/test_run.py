"""`kata run` (kata/asgpu/): any PyTorch script as if this machine had a GPU.

The fast tests hold the CUDA machine the script sees (in this process, put back after), the sync
report and the command line; the slow ones run the corpus (tests/corpus/README.md) as a learner
would, `kata run --quick`, each in a process of its own, and hold `kata run`'s cost on a script that
uses no GPU to a ratio of plain `python`'s.
"""

import json
import os
import re
import resource
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from kata import sim
from kata.checks import lessons
from kata.commands import build_parser
from kata.i18n import _
from kata.project import locate

ROOT = locate().root
CORPUS = ROOT / "tests" / "corpus"


def in_corpus(name: str):
    """Skip, saying so, where the corpus file ``name`` is not in this checkout (its README says where it comes from)."""
    return pytest.mark.skipif(not (CORPUS / name).is_file(), reason=f"tests/corpus/{name} is not in this checkout "
                              "(tests/corpus/README.md says where it comes from)")
SEED = CORPUS / "seed_note.py"
# The seed's crash, as a GPU says it.
NUMPY_ON_CUDA = "TypeError: can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() to copy the tensor"


@pytest.fixture
def gpu():
    ok, why = sim.support()
    if not ok:
        pytest.skip(why)
    from kata.asgpu import _gpu

    _gpu.install()
    try:
        yield
    finally:
        _gpu.uninstall()


def test_the_script_sees_one_cuda_gpu(gpu, tmp_path):
    assert torch.cuda.is_available() and torch.cuda.device_count() == 1 and torch.cuda.current_device() == 0
    assert "Simulated" in torch.cuda.get_device_name(0)
    assert torch.accelerator.current_accelerator() == torch.device("cuda") and torch.accelerator.is_available()
    assert str(torch.ones(1, device=torch.accelerator.current_accelerator()).device) == "cuda:0"
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = nn.Linear(3, 1).to(device)
    x = torch.randn(4, 3).cuda()
    y = torch.zeros(4, 1, device="cuda:0")
    assert str(x.device) == "cuda:0" and x.is_cuda and next(model.parameters()).device.type == device.type
    assert str(nn.Linear(3, 1).cuda().weight.device) == "cuda:0"
    assert str(torch.ones(2).to("cuda", non_blocking=True).device) == "cuda:0"
    loss = ((model(x) - y) ** 2).mean()
    loss.backward()
    for optimizer in (torch.optim.AdamW, torch.optim.RMSprop, lambda p: torch.optim.Adam(p, foreach=True),
                      lambda p: torch.optim.Adam(p, fused=True)):   # each asks if a CUDA graph is being captured
        optimizer(model.parameters()).step()
    assert isinstance(loss.item(), float) and "device='cuda:0'" in repr(loss)
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    model(x).sum().item()
    end.record()
    end.synchronize()
    assert 0 <= start.elapsed_time(end) < 60_000 and end.query()
    with pytest.raises(RuntimeError, match="enable_timing=True"):
        torch.cuda.Event().elapsed_time(end)
    torch.manual_seed(1)
    torch.cuda.manual_seed_all(1)
    torch.backends.cudnn.benchmark = True
    torch.save(model.state_dict(), tmp_path / "m.pt")
    assert str(torch.load(tmp_path / "m.pt", map_location="cuda")["weight"].device) == "cuda:0"
    assert torch.load(tmp_path / "m.pt", map_location="cpu")["weight"].device.type == "cpu"
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.randn(4, 3)), batch_size=2,
                                         pin_memory=True)
    assert [len(b[0]) for b in loader] == [2, 2]


def test_older_scripts_idioms_run_as_on_one_gpu(gpu):
    """What older tutorials write: the legacy tensor types, torch.cuda.device(0), nn.DataParallel on one GPU, a
    generator on the GPU, the device's properties (its name, and the host's memory and cores, which are the
    simulated GPU's)."""
    Tensor = torch.cuda.FloatTensor
    ones = Tensor(2, 1).fill_(1.0)
    assert str(ones.device) == "cuda:0" and isinstance(ones, torch.cuda.FloatTensor)
    assert not isinstance(torch.ones(2), torch.cuda.FloatTensor) and not isinstance(ones, torch.cuda.LongTensor)
    assert torch.ones(2).type(torch.cuda.LongTensor).type() == "torch.cuda.LongTensor"
    assert torch.ones(2).type("torch.cuda.HalfTensor").dtype == torch.float16
    with torch.cuda.device(0):
        model = nn.DataParallel(nn.Linear(3, 1)).cuda()
        assert str(model(torch.ones(4, 3, device="cuda")).device) == "cuda:0"
        assert str(model(input=torch.ones(4, 3)).device) == "cuda:0"   # a CPU batch goes to the GPU, as scatter does
    first = torch.randn(3, generator=torch.Generator(device="cuda").manual_seed(0), device="cuda")
    again = torch.Generator("cuda").manual_seed(0)
    assert str(first.device) == "cuda:0" and str(again.device) == "cuda:0" and isinstance(again, torch.Generator)
    assert torch.equal(torch.randn(3, generator=again, device="cuda").cpu(), first.cpu())
    props = torch.cuda.get_device_properties(0)
    assert "Simulated" in props.name and props.total_memory > 2**20 and props.multi_processor_count >= 1
    from kata.asgpu import NotSimulated

    with pytest.raises(NotSimulated, match="major is not simulated"):
        getattr(props, "major")  # noqa: B009 - the attribute read is what is tried
    with pytest.raises(NotSimulated, match="cuda:1"):
        torch.cuda.device(1)
    with torch.profiler.profile() as profiled:   # the CPU's kernels (CUDA's activity would need a GPU)
        model(torch.ones(4, 3, device="cuda"))
    assert profiled.key_averages()
    with pytest.raises(NotSimulated, match="ProfilerActivity.CUDA is not simulated"):
        torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA])


def test_recurrent_layers_and_newer_scripts_idioms_run_as_on_one_gpu(gpu, tmp_path):
    """RNNs (cuDNN is CUDA's: the simulated GPU runs PyTorch's own kernels), packed sequences, the default device and
    tensor type, the default stream as a context, a map_location function, scripting a model on the GPU."""
    torch.manual_seed(0)
    for layer in (nn.LSTM, nn.GRU):
        on_cpu = layer(2, 3, num_layers=2, batch_first=True, bidirectional=True)
        on_gpu = layer(2, 3, num_layers=2, batch_first=True, bidirectional=True)
        on_gpu.load_state_dict(on_cpu.state_dict())
        on_gpu.cuda()
        x = torch.randn(2, 4, 2)
        packed = nn.utils.rnn.pack_padded_sequence(x.cuda(), torch.tensor([4, 2]), batch_first=True)
        assert packed.batch_sizes.device.type == "cpu" and str(packed.data.device) == "cuda:0"
        out, lengths = nn.utils.rnn.pad_packed_sequence(on_gpu(packed)[0], batch_first=True)
        want, _ = nn.utils.rnn.pad_packed_sequence(on_cpu(nn.utils.rnn.pack_padded_sequence(
            x, torch.tensor([4, 2]), batch_first=True))[0], batch_first=True)
        assert lengths.tolist() == [4, 2] and torch.allclose(out.cpu(), want, atol=1e-6)
        assert torch.allclose(on_gpu(x.cuda())[0].cpu(), on_cpu(x)[0], atol=1e-6)
    assert torch.backends.cudnn.is_available() and torch.backends.cudnn.version() is None
    assert not torch.backends.cudnn.is_acceptable(torch.ones(1, device="cuda"))
    torch.set_default_device("cuda")
    try:
        assert torch.get_default_device() == torch.device("cuda:0") and str(torch.ones(1).device) == "cuda:0"
    finally:
        torch.set_default_device(None)
    with pytest.warns(UserWarning, match="deprecated"):
        torch.set_default_tensor_type(torch.cuda.DoubleTensor)
    try:
        made = torch.zeros(2)
        assert str(made.device) == "cuda:0" and made.dtype == torch.float64
    finally:
        torch.set_default_tensor_type("torch.FloatTensor")
    assert torch.zeros(2).device.type == "cpu" and torch.zeros(2).dtype == torch.float32
    with torch.cuda.stream(torch.cuda.current_stream()):
        assert str(torch.ones(1).cuda(0, True).device) == "cuda:0"   # .cuda(device, non_blocking)
    assert torch.cuda.initial_seed() == torch.initial_seed()
    torch.save(nn.Linear(2, 1).cuda().state_dict(), tmp_path / "m.pt")
    loaded = torch.load(tmp_path / "m.pt", map_location=lambda storage, location: storage.cuda())
    assert str(loaded["weight"].device) == "cuda:0"
    props = torch.cuda.get_device_properties(0)
    assert not hasattr(props, "major") and hasattr(props, "name")
    scripted = torch.jit.script(nn.Linear(2, 1).cuda())
    assert str(scripted(torch.ones(1, 2, device="cuda")).device) == "cuda:0"
    from kata.asgpu import NotSimulated

    with pytest.raises(NotSimulated, match="TorchScript"):
        torch.jit.script(nn.Linear(2, 1)).cuda()
    torch.jit.save(torch.jit.script(nn.Linear(2, 1)), tmp_path / "scripted.pt")
    with pytest.raises(NotSimulated, match=re.escape("torch.jit.load(map_location='cuda') is not simulated")):
        torch.jit.load(tmp_path / "scripted.pt", map_location="cuda")
    assert torch.jit.load(tmp_path / "scripted.pt", map_location="cpu")(torch.ones(1, 2)).device.type == "cpu"


def test_pretrained_weights_are_not_downloaded_and_the_line_names_the_cache(tmp_path, monkeypatch):
    from kata.asgpu._data import DownloadRefused, refuse_hub_downloads

    monkeypatch.setattr(torch.hub, "download_url_to_file", torch.hub.download_url_to_file)
    refuse_hub_downloads()
    with pytest.raises(DownloadRefused, match=re.escape(str(tmp_path / "w-1234.pth"))):
        torch.hub.load_state_dict_from_url("https://example.invalid/w-1234.pth", model_dir=str(tmp_path))


def test_errors_say_cuda_and_what_is_not_simulated(gpu):
    x = torch.ones(2, device="cuda")
    with pytest.raises(TypeError, match=re.escape("can't convert cuda:0 device type tensor to numpy")):
        np.asarray(x)
    with pytest.raises(RuntimeError, match="cuda:0 and cpu"):
        nn.Linear(2, 1).cuda()(torch.ones(1, 2))
    from kata.asgpu import NotSimulated

    for call in (torch.cuda.memory_allocated, torch.cuda.Stream, torch.accelerator.memory_allocated,
                 lambda: torch.zeros(1, device="cuda:1")):
        with pytest.raises(NotSimulated, match="is not simulated"):
            call()


def test_mixed_precision_runs_with_cudas_autocast_rules(gpu):
    """torch.autocast('cuda') and GradScaler, in each of their spellings: CUDA's dtypes (kata.sim's autocast), CUDA's
    refusal of BCELoss in a region, the scaler's one sync per step, and CPU code left as it was."""
    model = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 1)).cuda()
    x, y = torch.randn(8, 4, device="cuda"), torch.rand(8, 1, device="cuda")
    for region in (lambda: torch.autocast("cuda"), lambda: torch.autocast(device_type="cuda", dtype=torch.float16),
                   lambda: torch.amp.autocast("cuda"), lambda: torch.cuda.amp.autocast()):
        with region():
            out = model(x)
            assert out.dtype == torch.float16 and torch.is_autocast_enabled() and torch.is_autocast_enabled("cuda")
            assert torch.get_autocast_dtype("cuda") == torch.float16 and str(out.device) == "cuda:0"
            assert torch.softmax(out, 0).dtype == torch.float32 and out.sum().dtype == torch.float32
            assert nn.Linear(4, 1)(torch.randn(2, 4)).dtype == torch.float32   # the CPU's own autocast is off
            with pytest.raises(RuntimeError, match="unsafe to autocast"):
                nn.BCELoss()(torch.sigmoid(out), y)
    assert not torch.is_autocast_enabled() and model(x).dtype == torch.float32
    with torch.autocast("cuda", dtype=torch.bfloat16):
        assert model(x).dtype == torch.bfloat16
    for scaler in (torch.amp.GradScaler("cuda"), torch.amp.GradScaler(), torch.cuda.amp.GradScaler(init_scale=256.0)):
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        with torch.autocast("cuda"):
            loss = nn.functional.binary_cross_entropy_with_logits(model(x), y)
        scaler.scale(loss).backward()
        assert model[0].weight.grad.dtype == torch.float32
        with sim.count_syncs() as syncs:
            scaler.step(optimizer)
            scaler.update()
        assert syncs.by_kind == {"item": 1}, syncs.events   # GradScaler.step reads found_inf: the host waits
        assert scaler.get_scale() in (65536.0, 256.0)


def test_what_is_not_simulated_stops_with_one_line_and_the_scripts_line(tmp_path):
    from kata.asgpu import NotSimulated
    from kata.asgpu._report import explain

    script = tmp_path / "s.py"
    script.write_text("stats()\n")

    def stats():
        raise NotSimulated("torch.cuda.memory_allocated", "memory")

    with pytest.raises(NotSimulated) as info:
        exec(compile(script.read_text(), str(script), "exec"), {"stats": stats})
    lines = explain(info.value, script, str).splitlines()
    assert lines[0] == f"kata run: {info.value}" and "torch.cuda.memory_allocated" in lines[0]
    assert len(lines) == 2 and "s.py:1" in lines[1] and "stats()" in lines[1]


def test_the_sync_debug_mode_warns_or_raises_at_each_sync_as_on_cuda(gpu):
    """torch.cuda.set_sync_debug_mode, which scripts use to find their syncs: each sync warns at its line, or raises."""
    import warnings

    x = torch.ones(3, device="cuda")
    try:
        torch.cuda.set_sync_debug_mode("warn")
        with pytest.warns(UserWarning, match="^called a synchronizing CUDA operation$") as caught:
            line = sys._getframe().f_lineno + 1
            x.sum().item()
        assert [(w.filename, w.lineno) for w in caught] == [(__file__, line)]
        with warnings.catch_warnings(record=True) as quiet:
            warnings.simplefilter("always")
            x.sum().to("cuda")   # no sync, no warning
        assert not quiet
        torch.cuda.set_sync_debug_mode(2)
        assert torch.cuda.get_sync_debug_mode() == 2
        with pytest.raises(RuntimeError, match="^called a synchronizing CUDA operation$"):
            float(x.sum())
        with pytest.raises(RuntimeError, match="invalid value of debug_mode"):
            torch.cuda.set_sync_debug_mode("loud")
    finally:
        torch.cuda.set_sync_debug_mode("default")
    assert torch.cuda.get_sync_debug_mode() == 0


def test_a_warning_from_pytorchs_cpp_is_said_at_the_scripts_line(gpu):
    import warnings

    from kata.asgpu import _gpu

    seen = []
    assert warnings.showwarning.__qualname__ == "said_at_the_caller.<locals>.show"
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.showwarning = _gpu.said_at_the_caller(lambda *shown: seen.append(shown))
        line = sys._getframe().f_lineno + 1
        torch.tensor([np.ones(2), np.ones(2)], device="cuda")   # "... from a list of numpy.ndarrays is extremely slow"
    assert [(filename, lineno) for _message, _kind, filename, lineno, *_ in seen] == [(__file__, line)], seen


def test_a_file_torch_load_refuses_gets_the_kata_s_lesson_on_what_it_holds(tmp_path):
    """Scripts written before PyTorch 2.6 torch.load what weights_only=True, now the default, refuses."""
    from kata.asgpu._report import lesson_for

    for held, kind in ((nn.Linear(1, 1), "model"), ({"mean": np.float64(0.5)}, "numpy")):
        torch.save(held, tmp_path / "saved.pt")
        with pytest.raises(Exception) as info:   # noqa: PT011 - pickle's UnpicklingError, whatever torch wraps it in
            torch.load(tmp_path / "saved.pt")
        assert lesson_for(info.value, tmp_path) == _(lessons.CKPT_UNREADABLE[kind])


def test_the_cuda_machine_is_put_back():
    ok, why = sim.support()
    if not ok:
        pytest.skip(why)
    from kata.asgpu import _gpu

    def patched():
        return (torch.cuda.is_available, torch.cuda.memory_allocated, torch.compile, torch.autocast,
                torch.cuda.FloatTensor, torch.Generator, torch.get_default_device, torch.set_default_tensor_type,
                torch.backends.cudnn.version, torch.backends.cudnn.is_acceptable, torch.UntypedStorage.cuda,
                torch.jit.RecursiveScriptModule._apply, torch.jit.load)

    before = patched()
    _gpu.install()
    assert torch.cuda.is_available()
    _gpu.uninstall()
    assert patched() == before
    assert torch._C._is_torch_function_mode_enabled() is False


def test_the_report_names_each_line_and_its_count_per_pass(tmp_path):
    from kata.asgpu._loops import Passes
    from kata.asgpu._report import BY_EVERY_LINE, SYNC_HEADER_ONCE, sync_report

    script = tmp_path / "train.py"
    script.write_text("for x, y in dl:\n    total += loss.item()\nprint(acc)\n")
    item, printed, loop = f"{script}:2", f"{script}:3", f"{script}:1"
    syncs = sim.Syncs()
    passes = Passes()
    for _epoch in range(2):
        span = passes.start(loop, len(syncs.events))
        for _batch in range(250):
            syncs.by_kind["item"] += 1
            syncs.events.append(("item", item))
        passes.end(span, len(syncs.events))
    syncs.by_kind["repr"] += 1
    syncs.events.append(("repr", printed))
    report = sync_report(syncs, passes, tmp_path)
    assert "501" in report
    assert re.search(r"train\.py:2  `\.item\(\)` 500 times, 250 per pass over the DataLoader at train\.py:1 "
                     r"\(2 passes\)  \| total \+= loss\.item\(\)", report), report
    assert "train.py:3" in report and "print(acc)" in report
    assert _("  A sync per batch keeps a GPU waiting") in report
    one = sim.Syncs()
    one.by_kind["repr"] += 1
    one.events.append(("repr", printed))
    lines = sync_report(one, Passes(), tmp_path).splitlines()
    assert lines[0] == _(SYNC_HEADER_ONCE) and lines[2] == _(BY_EVERY_LINE), lines   # not "1 times", "1 of 1"
    span = passes.start(loop, len(one.events))
    one.by_kind["item"] += 1
    one.events.append(("item", item))
    passes.end(span, len(one.events))
    assert re.search(r"train\.py:2  `\.item\(\)` once, in the loop over the DataLoader at train\.py:1  \| total",
                     sync_report(one, passes, tmp_path)), "a sync the loop made once"
    # a line two loops run (a model's forward, in training and in evaluation), and once outside them
    shared, evaluation, both, two_loops = f"{script}:3", f"{script}:4", sim.Syncs(), Passes()
    for loop_at, passes_of, per in ((loop, 2, 2), (evaluation, 1, 3)):
        for _pass in range(passes_of):
            span = two_loops.start(loop_at, len(both.events))
            both.events.extend([("item", shared)] * per)
            two_loops.end(span, len(both.events))
    both.events.append(("item", shared))
    both.by_kind["item"] = len(both.events)
    report = sync_report(both, two_loops, tmp_path)
    assert re.search(r"train\.py:3  `\.item\(\)` 8 times, 2 per pass over the DataLoader at train\.py:1 \(2 passes\), "
                     r"3 in the one pass over the DataLoader at train\.py:4, 1 outside those loops  \| print\(acc\)$",
                     report, re.M), report


def test_kata_run_from_python_runs_the_script_in_a_process_of_its_own(tmp_path, capsys):
    import kata

    script = tmp_path / "plain.py"
    script.write_text("import sys\nprint('torch' in sys.modules, sys.argv[1:])\nsys.exit(3)\n")
    env = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = str(ROOT)
    try:
        assert kata.run(script, "a", "--b") == 3
    finally:
        os.environ.pop("PYTHONPATH") if env is None else os.environ.__setitem__("PYTHONPATH", env)
    assert capsys.readouterr().out.strip() == "False ['a', '--b']"


def test_the_command_passes_the_scripts_own_arguments_on():
    args = build_parser().parse_args(["run", "--quick", "2", "train.py", "--epochs", "3", "--quick", "9"])
    assert (args.quick, args.path, args.args) == (2, "train.py", ["--epochs", "3", "--quick", "9"])


# Where the corpus runs: the simulated GPU, or (KATA_RUN_DEVICE=cuda, as `kata doctor --full` asks on a machine with
# one) the machine's own, where the same verdicts must hold.
DEVICE = os.environ.get("KATA_RUN_DEVICE", "sim")


def _kata_run(*args, cwd, timeout=600, verdict=None):
    """`kata run ARGS` in a process of its own, on DEVICE; with ``verdict`` (a path), its verdict written there."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
           "KATA_LANG": "en"}
    env.pop("PYTEST_ADDOPTS", None)
    more = ["--device", DEVICE, *(["--json", verdict] if verdict else [])]
    return subprocess.run([sys.executable, "-m", "kata", "run", *more, *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)


def _verdict(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA: --device cuda runs there")
def test_device_cuda_without_a_gpu_says_so(tmp_path, capsys):
    from kata.asgpu import Options, run_script
    from kata.asgpu._runner import NO_CUDA

    (tmp_path / "s.py").write_text("import torch\n")
    assert run_script(tmp_path / "s.py", options=Options(device="cuda", stream=sys.stdout)) == 2
    assert capsys.readouterr().out.strip() == _(NO_CUDA)


def test_a_script_without_torch_never_imports_it(tmp_path):
    script = tmp_path / "plain.py"
    script.write_text("import sys\nprint('torch' in sys.modules, sys.argv[1:])\nsys.exit(3)\n")
    proc = _kata_run(script, "a", "--b", cwd=tmp_path)
    assert proc.returncode == 3, proc.stderr
    assert proc.stdout.strip() == "False ['a', '--b']"


@pytest.fixture(scope="module")
def celeba(tmp_path_factory):
    from kata.data.synth import generate

    root = tmp_path_factory.mktemp("celeba")
    generate(root, n_train=64, n_valid=32, n_test=32, seed=0, workers=1, progress=False)
    return root


@pytest.mark.slow
@pytest.mark.corpus
def test_the_seeds_script_crashes_as_on_a_gpu_with_the_lesson(tmp_path, celeba):
    proc = _kata_run("--quick", "2", "--celeba", celeba, "--out", tmp_path / "figures", SEED, cwd=tmp_path,
                     verdict=tmp_path / "verdict.json")
    out, found = proc.stderr, _verdict(tmp_path / "verdict.json")
    assert proc.returncode == found["status"] == 1, out
    assert found["at"] == "seed_note.py:164" and found["error"].startswith(NUMPY_ON_CUDA[:60]), found
    assert NUMPY_ON_CUDA in out and "simgpu" not in out
    assert "kata run: the script failed at seed_note.py:164: ax2.plot(x_arr, accuracy_hist_train" in out
    assert _(lessons.NUMPY_LESSONS["device"]) in out
    assert (tmp_path / "figures" / "seed_note-figure1.png").is_file(), "the live plot's figure is saved"
    # The sync report names the per-batch .item() lines (training's, validation's), per pass over their loader.
    assert {"seed_note.py:128", "seed_note.py:146"} <= set(found["per_batch"]), found
    if DEVICE == "sim":   # the simulator names each sync's kind (CUDA's debug mode says "a sync")
        assert re.search(r"seed_note\.py:128  `\.item\(\)` 2 times, in the one pass over the DataLoader at "
                         r"seed_note\.py:120", out), out


@pytest.mark.slow
@pytest.mark.corpus
def test_the_seeds_script_fixed_runs_to_the_end(tmp_path, celeba):
    fixed = tmp_path / "seed_note.py"
    text = SEED.read_text(encoding="utf-8")
    assert text.count("accuracy_tmp += is_correct.sum()\n") == 2
    text = text.replace("accuracy_tmp += is_correct.sum()\n", "accuracy_tmp += is_correct.sum().item()\n")
    fixed.write_text(text.replace("num_epochs = 30", "num_epochs = 2"), encoding="utf-8")
    proc = _kata_run("--quick", "1", "--celeba", celeba, "--out", tmp_path / "figures", fixed, cwd=tmp_path,
                     verdict=tmp_path / "verdict.json")
    found = _verdict(tmp_path / "verdict.json")
    assert proc.returncode == found["status"] == 0 and found["error"] is None, proc.stderr
    assert proc.stdout.count("에포크") == 2 and "per pass over the DataLoader" in proc.stderr


@pytest.mark.slow
@pytest.mark.corpus
def test_a_cpu_batch_into_a_gpu_model_says_so(tmp_path):
    script = tmp_path / "mixed.py"
    script.write_text("import torch\nfrom torch import nn\ndevice = 'cuda' if torch.cuda.is_available() else 'cpu'\n"
                      "model = nn.Linear(4, 1).to(device)\nx_batch = torch.randn(8, 4)\nx_batch.to(device)\n"
                      "pred = model(x_batch)\n")
    proc = _kata_run(script, cwd=tmp_path, verdict=tmp_path / "verdict.json")
    found = _verdict(tmp_path / "verdict.json")
    assert proc.returncode == found["status"] == 1 and found["at"] == "mixed.py:7", found
    assert "Expected all tensors to be on the same device" in found["error"] and "cuda:0" in found["error"], found
    assert "mixed.py:7: pred = model(x_batch)" in proc.stderr
    assert _(lessons.BATCH_NOT_MOVED) in proc.stderr and "simgpu" not in proc.stderr


@pytest.mark.slow
@pytest.mark.corpus
@in_corpus("ch14_part2.py")
def test_the_books_chapter_14_runs_as_on_a_gpu(tmp_path, celeba, monkeypatch):
    (tmp_path / "ch14" / "models").mkdir(parents=True)
    (tmp_path / "python_environment_check.py").write_text("def check_packages(d):\n    pass\n")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))   # its python_environment_check, ahead of the kata
    proc = _kata_run("--quick", "1", "--celeba", celeba, "--out", tmp_path / "figures", CORPUS / "ch14_part2.py",
                     cwd=tmp_path / "ch14", timeout=900, verdict=tmp_path / "verdict.json")
    assert proc.returncode == _verdict(tmp_path / "verdict.json")["status"] == 0, proc.stderr
    assert "Test accuracy" in proc.stdout and "loss.item()*y_batch.size(0)" in proc.stderr


def _notebook(path: Path, *sources: str) -> Path:
    cell = {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None}
    path.write_text(json.dumps({"cells": [{**cell, "source": source} for source in sources] + [
        {"cell_type": "markdown", "metadata": {}, "source": "# not code"}], "metadata": {}, "nbformat": 4,
        "nbformat_minor": 5}), encoding="utf-8")
    return path


def test_a_notebooks_code_cells_are_named_and_ipython_lines_blanked(tmp_path):
    from kata.asgpu._notebook import cells

    found = cells(_notebook(tmp_path / "nb.ipynb", "%matplotlib inline\nx = 1", ["!pip list\n", "y = x + 1\ny"]))
    assert [(Path(name).name, source) for name, source, _ in found] == [
        ("nb.ipynb[cell 1]", "\nx = 1"), ("nb.ipynb[cell 2]", "\ny = x + 1\ny")]


def test_a_notebooks_cell_magics_write_run_or_are_left_out(tmp_path, monkeypatch, capsys):
    """%%writefile writes its cell (a later cell imports it), %%time's cell is Python and runs, %%bash's is not;
    get_ipython() answers, and tqdm.notebook's bars are the terminal's."""
    import tqdm

    from kata.asgpu._notebook import execute

    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "tqdm.notebook", raising=False)   # put back after
    monkeypatch.delattr(tqdm, "notebook", raising=False)
    path = _notebook(tmp_path / "nb.ipynb", "%%writefile helper.py\ndef twice(x):\n    return 2 * x\n",
                     "%%writefile -a helper.py\nTHREE = 3\n", "%%bash\necho hi > from_bash.txt\nexit 1",
                     "%%time\nimport helper\nvalue = helper.twice(helper.THREE)\nvalue",
                     "from tqdm.notebook import tqdm\nget_ipython().run_line_magic('matplotlib', 'inline')\n"
                     "steps = [i for i in tqdm(range(3), disable=True)]", "%%capture\n1 / 0")
    with pytest.raises(ZeroDivisionError) as info:
        execute(path)
    assert (tmp_path / "helper.py").read_text() == "def twice(x):\n    return 2 * x\nTHREE = 3\n"
    assert not (tmp_path / "from_bash.txt").exists()
    assert capsys.readouterr().out == "Writing helper.py\nAppending to helper.py\n6\n"
    assert info.traceback[-1].frame.code.path.endswith("nb.ipynb[cell 6]") and info.traceback[-1].lineno == 1


@pytest.mark.slow
@pytest.mark.corpus
def test_the_seeds_code_as_a_notebook_names_the_cell_and_line(tmp_path, celeba):
    text = SEED.read_text(encoding="utf-8")
    first, rest = text.split("\n\n\n", 1)  # the imports, then the rest of the script
    notebook = _notebook(tmp_path / "seed.ipynb", "%matplotlib inline\n" + first, rest)
    proc = _kata_run("--quick", "2", "--celeba", celeba, "--out", tmp_path / "figures", notebook, cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    line = rest.splitlines().index("        ax2.plot(x_arr, accuracy_hist_train, '-o', label='Train acc.')") + 1
    assert f"kata run: the script failed at seed.ipynb[cell 2]:{line}: ax2.plot(" in proc.stderr, proc.stderr
    assert NUMPY_ON_CUDA in proc.stderr and _(lessons.NUMPY_LESSONS["device"]) in proc.stderr
    assert "seed.ipynb[cell 2]:" in proc.stderr.split("by line", 1)[1]


@pytest.mark.slow
@pytest.mark.corpus
@in_corpus("ch14_part2.ipynb")
def test_the_books_chapter_14_notebook_runs_as_on_a_gpu(tmp_path, celeba):
    (tmp_path / "ch14" / "models").mkdir(parents=True)
    (tmp_path / "python_environment_check.py").write_text("def check_packages(d):\n    pass\n")
    proc = _kata_run("--quick", "1", "--celeba", celeba, "--out", tmp_path / "figures", CORPUS / "ch14_part2.ipynb",
                     cwd=tmp_path / "ch14")
    assert proc.returncode == 0, proc.stderr
    assert "Test accuracy" in proc.stdout
    assert re.search(r"ch14_part2\.ipynb\[cell \d+\]:\d+  (`\.item\(\)`|a sync) \d+ times", proc.stderr), proc.stderr


@pytest.mark.slow
def test_a_projects_own_tests_run_as_on_a_gpu_with_as_gpu(tmp_path):
    (tmp_path / "test_model.py").write_text(
        "import numpy as np\nimport torch\nfrom torch import nn\n\n\ndef test_cuda():\n"
        "    assert torch.cuda.is_available() and torch.ones(1, device='cuda').device.type == 'cuda'\n\n\n"
        "def test_plot():\n    model = nn.Linear(2, 1).cuda()\n    correct = 0\n    for _ in range(3):\n"
        "        correct += (model(torch.randn(4, 2).cuda()) > 0).sum()\n"
        "        model(torch.ones(1, 2).cuda()).item()\n"
        "    np.asarray([correct])\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "KATA_LANG": "en"}
    env.pop("PYTEST_ADDOPTS", None)
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--as-gpu", "test_model.py"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    out = proc.stdout
    assert proc.returncode == 1 and "1 failed, 1 passed" in out, out
    assert "can't convert cuda:0 device type tensor to numpy" in out and _(lessons.NUMPY_LESSONS["device"]) in out
    assert "test_model.py:15  `.item()` 3 times" in out, out


def _fake_mnist(root: Path, n_train=256, n_test=128) -> None:
    """MNIST's raw files (idx format) with random digits: what torchvision's MNIST reads without a download."""
    import struct

    raw = root / "MNIST" / "raw"
    raw.mkdir(parents=True)
    rng = np.random.default_rng(0)
    for prefix, n in (("train", n_train), ("t10k", n_test)):
        images = rng.integers(0, 256, size=(n, 28, 28), dtype=np.uint8)
        (raw / f"{prefix}-images-idx3-ubyte").write_bytes(struct.pack(">IIII", 0x803, n, 28, 28) + images.tobytes())
        labels = rng.integers(0, 10, size=n, dtype=np.uint8)
        (raw / f"{prefix}-labels-idx1-ubyte").write_bytes(struct.pack(">II", 0x801, n) + labels.tobytes())


@pytest.mark.slow
@pytest.mark.corpus
@in_corpus("mnist_main.py")
def test_pytorch_examples_mnist_runs_with_its_own_arguments(tmp_path):
    _fake_mnist(tmp_path / "data")
    (tmp_path / "mnist").mkdir()
    proc = _kata_run("--quick", "2", CORPUS / "mnist_main.py", "--epochs", "2", "--test-batch-size", "64",
                     cwd=tmp_path / "mnist")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("Test set: Average loss") == 2
    assert re.search(r"mnist_main\.py:\d+  (`\.item\(\)`|a sync) 4 times, 2 per pass over the DataLoader", proc.stderr)


CPU_ONLY = """\
import torch
from torch import nn
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x, y = torch.randn(256, 32), torch.randn(256, 1)
for step in range(60):
    for i in range(0, 256, 32):
        opt.zero_grad()
        loss = ((model(x[i:i + 32]) - y[i:i + 32]) ** 2).mean()
        loss.backward()
        opt.step()
print(round(loss.item(), 4))
"""


def _cpu_seconds(command, cwd) -> tuple[float, str]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"})
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert proc.returncode == 0, proc.stderr
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), proc.stdout


@pytest.mark.slow
def test_a_script_without_gpu_use_costs_at_most_1_3x_plain_python(tmp_path):
    script = tmp_path / "cpu_only.py"
    script.write_text(CPU_ONLY)
    plain, kata = [], []
    for _round in range(2):
        seconds, out_plain = _cpu_seconds([sys.executable, str(script)], tmp_path)
        plain.append(seconds)
        seconds, out_kata = _cpu_seconds([sys.executable, "-m", "kata", "run", str(script)], tmp_path)
        kata.append(seconds)
        assert out_plain == out_kata, "the same numbers, with or without kata run"
    ratio = min(kata) / min(plain)
    print(f"kata run / python, CPU seconds: {min(kata):.2f} / {min(plain):.2f} = {ratio:.2f}")
    assert ratio <= 1.3, f"kata run took {ratio:.2f}x plain python's CPU time on a script without GPU use"

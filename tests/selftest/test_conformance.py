"""The conformance table (kata/conformance/table.toml) holds on the simulated accelerator.

Every row is CUDA's behaviour, with where it is written down. On the simulator each row
must hold, or be one the table marks as impossible to simulate, and then the simulator
must refuse loudly, as the mark says: never a silent difference. The same table runs on
real CUDA and MPS through `kata doctor`.
"""

import re

import pytest

from kata import sim
from kata.conformance import runner

ROWS = runner.load()
CATEGORIES = {  # the issue's list (#18), each with at least this many rows; and #35's autocast
    "device mixing": 8, "0-d CPU tensors": 5, "in-place ops": 5, "indexing": 5, "factories": 6,
    "Tensor.to and .cpu()": 6, "Module.to": 5, "optimizers": 4, "torch.save and torch.load": 6,
    "state_dict and load_state_dict": 3, "pinned memory": 3, "non_blocking copies": 3,
    "NumPy and matplotlib": 5, "item, tolist, float, format": 6, "syncs": 15, "autocast": 6,
}
SOURCE = re.compile(r"https://(docs\.)?pytorch\.org/|https://github\.com/pytorch/pytorch/|"
                    r"(aten|c10|torch|test)/[\w/]+\.(cpp|cu|h|py)\b")


@pytest.fixture(scope="module")
def outcomes():
    ok, why = sim.support()
    if not ok:
        pytest.skip(why)
    sim.install()
    return {o.id: o for o in runner.run("sim", ROWS)}


def test_the_table_covers_each_category_with_cudas_behaviour_and_its_source():
    assert len(ROWS) >= 60
    counts = {category: sum(r.category == category for r in ROWS) for category in CATEGORIES}
    assert {c for c, n in counts.items() if n < CATEGORIES[c]} == set(), counts
    assert {r.category for r in ROWS} == set(CATEGORIES), "a row of a category the table does not list"
    for row in ROWS:
        assert row.behaviour and row.cuda, row.id
        assert SOURCE.search(row.source), f"{row.id}: its source names no PyTorch page or source file: {row.source}"
        if row.simulator:
            assert row.simulator.get("raises") and row.simulator.get("match") and row.simulator.get("why"), row.id


@pytest.mark.parametrize("row", ROWS, ids=[r.id for r in ROWS])
def test_each_behaviour_holds_on_the_simulator_or_is_refused_as_marked(outcomes, row):
    outcome = outcomes[row.id]
    want = "refused" if row.simulator else "holds"
    assert outcome.status == want, (
        f"{row.id}: {row.behaviour}\n  CUDA: {row.cuda} ({row.source})\n  the simulator {outcome.got}")


def test_the_summary_says_how_many_behaviours_are_as_on_cuda(outcomes):
    marked = sum(bool(r.simulator) for r in ROWS)
    assert runner.summary(list(outcomes.values())) == (
        f"{len(ROWS) - marked}/{len(ROWS)} behaviours as on CUDA; {marked} refused loudly by the simulator, "
        f"as the table marks them")


SYNTHETIC = [  # the runner itself: rows that hold, differ, and can't be tried
    runner.Behaviour("value-holds", "t", "b", "c", "s", code="torch.ones(2, device=dev).tolist()",
                     expect={"value": [1.0, 1.0]}),
    runner.Behaviour("value-differs", "t", "b", "c", "s", code="torch.ones(2, device=dev).device.type",
                     expect={"value": "cuda"}),
    runner.Behaviour("raises-holds", "t", "b", "c", "s", code="torch.ones(2, device=dev) + torch.ones(2)",
                     expect={"raises": "RuntimeError", "match": "found at least two devices, {device} and cpu"}),
    runner.Behaviour("raises-but-runs", "t", "b", "c", "s", code="torch.ones(2, device=dev) * 2",
                     expect={"raises": "RuntimeError"}),
    runner.Behaviour("syncs-counted", "t", "b", "c", "s", setup="t = torch.ones(2, device=dev)",
                     code="t.sum().item()", expect={"syncs": 1}),
    runner.Behaviour("syncs-differs", "t", "b", "c", "s", setup="t = torch.ones(2, device=dev)",
                     code="t.tolist(), t.cpu()", expect={"syncs": False}),
    runner.Behaviour("marked-refuses", "t", "b", "c", "s", code="torch.ones(2, device=dev).numpy()",
                     expect={"value": [1.0]}, simulator={"raises": "TypeError", "match": "can't convert", "why": "w"}),
    runner.Behaviour("marked-but-silent", "t", "b", "c", "s", code="1", expect={"value": 2},
                     simulator={"raises": "RuntimeError", "match": "x", "why": "w"}),
]


def test_the_runner_tells_holds_differs_and_refused_apart(outcomes):
    got = {o.id: (o.status, o.got) for o in runner.run("sim", SYNTHETIC)}
    assert {name: status for name, (status, _) in got.items()} == {
        "value-holds": "holds", "value-differs": "differs", "raises-holds": "holds", "raises-but-runs": "differs",
        "syncs-counted": "holds", "syncs-differs": "differs", "marked-refuses": "refused",
        "marked-but-silent": "differs"}
    assert got["value-differs"][1] == "gave 'simgpu'" and got["syncs-differs"][1] == "2 syncs"
    assert got["raises-but-runs"][1].startswith("gave tensor([2., 2.], device='simgpu:0')")


def test_a_table_row_needs_exactly_one_expectation(tmp_path):
    path = tmp_path / "table.toml"
    path.write_text('[[behaviour]]\nid = "x"\ncategory = "c"\nbehaviour = "b"\ncuda = "c"\nsource = "s"\n'
                    'code = "1"\nvalue = 1\nsyncs = true\n')
    with pytest.raises(ValueError, match="behaviour 'x' needs exactly one of value, raises, syncs"):
        runner.load(path)

"""The audit (kata/audit): what a grade rests on besides a check's own verdict.

Each check names the facets its verdict implies (`@pytest.mark.audit(...)`); a
check that passes in a submission's sandbox earns its points only when each of
those facets agrees with the reference (kata/grading/scoring.py). So:

- every check of the exercises carries a mark, and every facet it names exists
  (for each of its parameters);
- the reference agrees with itself under any seed, and its records are data;
- correct code agrees on every facet; untouched stubs on none (a forged verdict
  on a stub earns nothing);
- what the code declares is read as it declared it: a wrong learning rate (or dropout rate) under a library
  patched to compute the book's numbers disagrees, and the book's settings spelled any other way agree;
- honest code never loses a point to the audit: for each variant
  (tests/selftest/variants/) and each known mistake (tests/selftest/known_wrong.toml,
  in test_known_wrong.py's own runs), every check that passes on it has all its
  facets agreeing; only the checks naming a facet it disagrees on can break that,
  so only those run, through pytest itself, in process (tests/selftest/conftest.py);
- what comes back from a sandbox is read as data, and nothing in it can make
  the judge raise.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

# Imported before the inner pytest runs (see test_known_wrong.py).
import hypothesis
import matplotlib.pyplot
import numpy
import PIL.Image
import pytest
import torch
import torchvision.transforms
from hypothesis import given, settings
from hypothesis import strategies as st

from kata import audit, curriculum, records
from kata.audit import Context, Draw, judge, records_here
from kata.audit._draws import nest
from kata.project import locate
from kata.records.wire import diff, typed

pytest_plugins = ["pytester"]
PRELOADED = (hypothesis, matplotlib.pyplot, numpy, PIL.Image, torch, torchvision.transforms)

PROJECT = locate()
EVERY = curriculum.names()
# The exercises the audit still grades: those whose checks read records are checked on the answers themselves.
NAMES = [ex for ex in EVERY if not PROJECT.records_of(ex).is_file()]
VARIANTS = Path(__file__).with_name("variants")


@pytest.fixture(scope="session")
def context(audit_context) -> Context:
    return audit_context


@pytest.fixture(scope="session")
def reference(audit_reference) -> dict[str, dict]:
    return audit_reference


def records_of(folder: Path, exercise: str, context: Context) -> dict:
    return records_here(folder, exercise, context)


def disagreeing(exercise: str, folder: Path, context: Context, reference) -> dict[str, str]:
    verdicts = judge(exercise, records_of(folder, exercise, context), reference[exercise])
    return {f: v for f, v in verdicts.items() if v is not None}


# --- the marks -----------------------------------------------------------------------------


def test_every_check_names_facets_the_audit_has(pytester, facet_marks):
    marks = facet_marks()
    pytester.inline_run("--collect-only", "--target", str(PROJECT.solutions),
                        *[str(PROJECT.checks_of(n)) for n in NAMES], "-p", "no:cacheprovider", "-q", plugins=[marks])
    assert len(marks.marks) > 10, f"collected only {len(marks.marks)} checks"
    unmarked = [n for n, m in marks.marks.items() if m is None]
    assert not unmarked, ("every check names what of the audit its verdict implies, @pytest.mark.audit(...) "
                          f"(kata/audit/__init__.py says how): these have no mark: {unmarked}")
    known = {f for ex in NAMES for f in audit.facets(ex)}
    unknown = sorted({f"{n}: {f}" for n, m in marks.marks.items() for f in m["facets"] if f not in known})
    assert not unknown, f"these checks name facets that kata/audit does not have: {unknown}"
    assert all(m["facets"] for m in marks.marks.values()), "a mark names no facet: every check rests on one at least"


# --- the reference, correct code, stubs ------------------------------------------------------


def test_the_reference_agrees_with_itself_and_its_records_are_data(context, reference):
    for exercise in NAMES:
        again = records_of(PROJECT.solutions, exercise, context)
        json.loads(json.dumps(again))
        errors = {name: r["error"] for name, r in reference[exercise].items() if "error" in r}
        assert not errors, f"the reference's records of {exercise} failed here: {errors}"
        assert all(v is None for v in judge(exercise, again, reference[exercise]).values()), exercise


@pytest.mark.parametrize("variant", ["independent", "styled", "modern"])
def test_correct_code_agrees_on_every_facet(variant, context, reference):
    for exercise in NAMES:
        found = disagreeing(exercise, VARIANTS / variant, context, reference)
        assert not found, f"{variant}/{exercise}.py, correct code, disagrees with the reference: {found}"


def test_untouched_stubs_agree_on_no_facet_but_what_they_need_not_declare(context, reference, every_check):
    """A stub agrees on no fact (a forged verdict would earn it), but a source fact that holds code only to what it
    must not declare (no loss module but the book's: a loss written as a function builds none); and every check
    names a fact the stub disagrees on, so a forged verdict on it earns nothing."""
    allowed = {"training.loss", "training.device.loss"}
    disagreeing = set()
    for exercise in NAMES:
        verdicts = judge(exercise, records_of(PROJECT.exercises, exercise, context), reference[exercise])
        agreeing = [f for f, v in verdicts.items() if v is None and f not in allowed]
        assert not agreeing, f"the untouched stub of {exercise} agrees on {agreeing}: a forged verdict would earn them"
        disagreeing |= {f for f, v in verdicts.items() if v is not None}
    earning = [n for n, mark in every_check.marks.items() if mark and not set(mark["facets"]) & disagreeing]
    assert not earning, f"a forged verdict on the stubs would earn these checks: {earning}"


def test_another_seed_draws_other_inputs(context, reference):
    other = Context(**{**vars(context), "seed": context.seed + 1})
    changed = [ex for ex in NAMES if records_of(PROJECT.solutions, ex, other) != reference[ex]]
    assert len(changed) == len(NAMES), f"with another seed these exercises' records stayed the same: " \
                                       f"{sorted(set(NAMES) - set(changed))}"


# --- the wire: data only, and a judge that never raises ----------------------------------------


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32))
def test_a_described_value_survives_json_and_agrees_with_itself(seed):
    obj = nest(Draw(seed, "wire"))
    node = json.loads(json.dumps(typed(obj)))
    assert diff(node, typed(obj)) is None
    assert diff(typed(obj, values=False), typed(obj, values=False)) is None


def test_a_changed_value_kind_or_container_is_found():
    t = torch.arange(1.0, 7.0).reshape(2, 3)
    assert diff(typed(t + 1e-3), typed(t)) is not None
    assert diff(typed(t + 1e-9), typed(t), rel=1e-6) is None
    assert diff(typed(t.double()), typed(t)) is not None
    assert diff(typed([1.0]), typed((1.0,))) is not None
    assert diff(typed(numpy.float64(1.5)), typed(1.5)) is not None
    assert diff(typed(torch.tensor(1.0, requires_grad=True)), typed(torch.tensor(1.0))) is not None
    assert diff(typed({"a": 1}), typed({"b": 1})) is not None


JSON = st.recursive(st.none() | st.booleans() | st.floats(allow_nan=True) | st.integers() | st.text(max_size=8),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4),
                    max_leaves=20)


@settings(max_examples=80, deadline=None)
@given(records=st.dictionaries(st.sampled_from(["pick_device", "host_copy", "to_python.nests", "x"]),
                               st.fixed_dictionaries({"data": JSON}) | st.fixed_dictionaries({"error": JSON}) | JSON))
def test_malformed_records_disagree_and_never_raise(records, reference):
    exercise = next(ex for ex in NAMES if audit.facets(ex))
    verdicts = judge(exercise, records, reference[exercise])
    assert all(v is not None for v in verdicts.values())


# --- what each fact rests on -------------------------------------------------------------------------------


def test_every_fact_says_what_it_rests_on_and_every_work_fact_needs_this_hand_ins_inputs(context, reference):
    """A fact resting on the work must be one a hand-in can't know without computing it on its own inputs: the
    reference's own records, drawn from other hand-in seeds, disagree on it (for one seed at least)."""
    others = []
    for seed in (context.seed + 1, context.seed + 2):
        other = Context(**{**vars(context), "seed": seed, "reference": True})
        others.append({ex: records_of(PROJECT.solutions, ex, other) for ex in NAMES})
    constant = []
    for exercise in NAMES:
        for name, facet in audit.facets(exercise).items():
            assert facet.rests in audit.RESTS, name
            if facet.rests == audit.WORK and all(judge(exercise, o[exercise], reference[exercise])[name] is None
                                                 for o in others):
                constant.append(name)
    assert not constant, (f"these facts rest on the work, yet another hand-in's records agree on them: {constant}; "
                          "draw their inputs from the record's Draw, or say what they rest on (kata.audit.PROCESS)")


def test_the_trust_model_lists_exactly_what_rests_on_the_process(every_check):
    """docs/teaching.md (and its Korean page) lists every fact that rests on the graded process, by name, between
    its markers, and every check whose points rest on what only the process observed."""
    every = {name: f.rests for ex in NAMES for name, f in audit.facets(ex).items()}
    every |= {f"{ex}.{name}": rec.rests for ex in EVERY for name, rec in records.load(PROJECT.records_of(ex)).items()}
    process = {name for name, rests in every.items() if set(rests if isinstance(rests, tuple) else [rests])
               & set(audit.PROCESS)}
    observed = {nodeid.split("::")[-1].split("[")[0] for nodeid, mark in every_check.marks.items()
                if mark and mark.get("observed")}
    for page in (PROJECT.root / "docs" / "teaching.md", PROJECT.root / "docs" / "ko" / "teaching.md"):
        text = page.read_text(encoding="utf-8")
        listed = text.split("<!-- resting on the process -->")[1].split("<!-- end -->")[0]
        named = set(re.findall(r"`([^`]+)`", listed)) & set(every)
        checks = set(re.findall(r"`(test_\w+)`", listed))
        assert named == process, (f"{page.name}: listed but not resting on the process: {sorted(named - process)}; "
                                  f"resting on it but not listed: {sorted(process - named)}")
        assert checks == observed, (f"{page.name}: checks listed: {sorted(checks - observed)} too many, "
                                    f"{sorted(observed - checks)} missing")


# --- honest code never loses a point to the audit ------------------------------------------------


@pytest.mark.parametrize("variant", sorted(p.name for p in VARIANTS.iterdir() if p.is_dir()))
def test_a_variant_keeps_every_point_its_checks_give(variant, pytester, facet_marks, every_check,
                                                    disagreeing_facets, points_lost):
    for exercise in NAMES:
        folder = VARIANTS / variant
        if not (folder / f"{exercise}.py").is_file():
            continue
        disagreeing = disagreeing_facets(folder, exercise)
        at_stake = every_check.at_stake(exercise, disagreeing)
        if not at_stake:      # every check it passes keeps its points: none names a facet it disagrees on
            continue
        marks = facet_marks()
        pytester.inline_run("--target", str(folder), str(PROJECT.checks_of(exercise)), "-k",
                            " or ".join(sorted(at_stake)), "-p", "no:cacheprovider", "-q", plugins=[marks])
        lost = points_lost(folder, exercise, disagreeing, marks)
        assert not lost, (f"variants/{variant}: honest code would lose these checks' points to the audit (each "
                          f"passed, but a facet it names disagrees):\n  " + "\n  ".join(lost))


# Each known mistake keeps every point its checks give: test_known_wrong.py, under --slow, where the
# mistake's one run takes all of its exercise's checks.


def test_the_records_are_quick_enough_for_a_class(context, tmp_path):
    """The records add to each submission's time: they stay under a few seconds for correct code."""
    import time

    start = time.process_time()
    for exercise in NAMES:
        (tmp_path / exercise).mkdir()
        records_of(PROJECT.solutions, exercise, Context(**{**vars(context), "tmp": tmp_path / exercise}))
    spent = time.process_time() - start
    assert spent < 12, f"the records of the reference took {spent:.1f} s of CPU"

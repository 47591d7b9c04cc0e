"""Checks for exercise 8, distributed: the book's epoch on two processes, and figures of the whole dataset.

Each check reads the answers of a record (records/distributed.py): the learner's functions run on two real ranks,
forked processes in a gloo process group over loopback. The loaders must split the data between the ranks (the
training set reshuffled each epoch, every validation image counted once); run_epoch's figures must be the whole
dataset's, the one-process figures on the same weights (5 validation images on 2 ranks: 3 and 2, so a padded
sampler or a mean of the ranks' means shows); a checkpoint is written once, without DDP's `module.` prefix.

PYTEST_DONT_REWRITE: each assert carries its own message, and only that is shown.
"""

from collections import Counter

import pytest
import torch
from torch import nn

from kata.checks.messages import describe, fail_if
from kata.i18n import N_, _, say
from kata.records.doubles import tiny_data, tiny_model

pytestmark = pytest.mark.usefixtures("forks")   # the ranks fork from a laptop (tests/conftest.py)

HUNG = N_("every rank must run every collective, in the same order: a rank that skips one (validation on rank 0 "
          "only, a reduction behind `if rank == 0`) leaves the others waiting for ever, or its next collective "
          "pairs with theirs and gloo ends a process\n  {error}")


def sizes_of(distributed):
    """(training images, validation images, batch size) of each size the loaders were asked, with each rank's
    answer."""
    (case,) = ranks_of(distributed, "shards")
    return [(*size, ranks) for size, ranks in zip(case.args[0], case.answer)]


def ranks_of(distributed, name):
    """The answers of record ``name``'s cases, each a list with one answer per rank; a hang said as its lesson."""
    cases = distributed.cases(name)
    for case in cases:
        said = f"{type(case.raised).__name__}: {case.raised}" if case.raised is not None else ""
        if "RankHung" in said or "RankEnded" in said:   # ranks out of step: one waits, or gloo ended one
            fail_if(say(HUNG, error=str(case.raised)))
    return cases


# --- the loaders ----------------------------------------------------------


def test_training_shards_hold_every_image_once_per_epoch(distributed):
    for n_train, _n_valid, _batch, ranks in sizes_of(distributed):
        for epoch in (0, 1):
            seen = sorted(i for rank in ranks for i in rank["train"][epoch])
            assert seen == list(range(n_train)), say(
                "train_dl must give each rank its own share of the training set, the shares together the whole "
                "set once: a DistributedSampler(train, num_replicas=world_size, rank=rank)\n  with {n} training "
                "images on 2 ranks, the ranks read {seen} in epoch {epoch}", n=n_train, seen=seen, epoch=epoch)


def test_training_shards_are_shuffled_and_change_with_the_epoch(distributed):
    for _n_train, _n_valid, _batch, ranks in sizes_of(distributed):
        orders = [rank["train"] for rank in ranks]
        assert any(one[0] != sorted(one[0]) for one in orders), say(
            "train_dl must shuffle (DistributedSampler's shuffle=True, its default): each rank read its share in "
            "order\n  rank 0 read {order}", order=orders[0][0])
        assert any(one[0] != one[1] for one in orders), say(
            "a new epoch number given to train_dl's sampler (sampler.set_epoch) must give a new order: its "
            "sampler must be a DistributedSampler, shuffling by seed and epoch\n  rank 0 read {order} in epochs 0 "
            "and 1", order=orders[0][0])


PADDED = N_("valid_dl must give every validation image to exactly one rank: a DistributedSampler pads the shares "
            "to equal lengths by repeating images when len(valid) does not divide by world_size, so those images "
            "are counted twice and the figures change with the number of processes; give rank r the images r, "
            "r + world_size, ... (a Subset)\n  with {n} validation images on 2 ranks, the ranks read {seen}")
LEFT_OUT = N_("valid_dl must give every validation image to exactly one rank: images {missing} reached no rank, so "
              "they are never validated and the figures change with the number of processes (a DistributedSampler "
              "with drop_last=True drops the last len(valid) % world_size images); give rank r the images r, "
              "r + world_size, ... (a Subset)\n  with {n} validation images on 2 ranks, the ranks read {seen}")


def test_validation_shards_hold_every_image_exactly_once(distributed):
    for _n_train, n_valid, _batch, ranks in sizes_of(distributed):
        seen = Counter(i for rank in ranks for i in rank["valid"])
        repeated = any(count > 1 for count in seen.values())
        missing = sorted(set(range(n_valid)) - set(seen))
        assert seen == Counter(range(n_valid)), (
            say(PADDED, n=n_valid, seen=sorted(seen.elements())) if repeated or not missing
            else say(LEFT_OUT, n=n_valid, seen=sorted(seen.elements()), missing=missing))


def test_loaders_batch_by_batch_size(distributed):
    for _n_train, _n_valid, batch, ranks in sizes_of(distributed):
        for rank, one in enumerate(ranks):
            sizes = one["train_batches"] + one["valid_batches"]
            assert sizes and max(sizes) <= batch and one["train_batches"][0] == batch, say(
                "both loaders must batch by batch_size\n  with batch_size={batch}, rank {rank} gave batches of "
                "{sizes}", batch=batch, rank=rank, sizes=sizes)


# --- run_epoch ------------------------------------------------------------

def epochs_of(distributed, name="on_the_cpu"):
    (case,) = ranks_of(distributed, name)
    return case.args[0], case.answer


def test_run_epoch_returns_four_python_floats_on_every_rank(distributed):
    _seed, ranks = epochs_of(distributed)
    for rank, epochs in enumerate(ranks):
        for epoch, one in enumerate(epochs):
            result = one["result"]
            assert isinstance(result, (tuple, list)) and len(result) == 4 and all(
                type(v) is float for v in result), say(
                "run_epoch must return four Python floats (train_loss, valid_loss, train_acc, valid_acc): bring "
                "the reduced sums to the host once (.tolist()) and divide\n  rank {rank}, epoch {epoch} returned "
                "{value}", rank=rank, epoch=epoch, value=describe(result))


def same(a, b) -> bool:
    return all(abs(x - y) <= 1e-5 for x, y in zip(a, b))


SAME = N_("run_epoch must return the same figures on every rank, the whole dataset's: each rank saw only its own "
          "images, so add up the sums and counts across the ranks (dist.all_reduce) before dividing\n  epoch "
          "{epoch}: rank 0 returned {zero}, rank 1 returned {one}")


def differ(ranks, epoch) -> str | None:
    """The lesson when the ranks returned different figures in ``epoch`` (each its own, or no reduction), else None:
    the one cause of every figure check it breaks."""
    got = [[float(v) for v in epochs[epoch]["result"]] for epochs in ranks]
    return None if same(got[0], got[1]) else say(SAME, epoch=epoch, zero=got[0], one=got[1])


def test_every_rank_returns_the_same_figures(distributed):
    _seed, ranks = epochs_of(distributed)
    for epoch in (0, 1):
        fail_if(differ(ranks, epoch))


def mean_of(calls) -> tuple[float, float, int]:
    """(loss, accuracy, samples) of the loss function's calls, as the book's loop adds them up."""
    loss = correct = n = 0.0
    for call in calls:
        pred, target = call["pred"], call["target"]
        loss += nn.functional.binary_cross_entropy(pred, target).item() * len(target)
        correct += ((pred >= 0.5).float() == target).sum().item()
        n += len(target)
    return loss / max(n, 1), correct / max(n, 1), int(n)


WHOLE = N_("run_epoch's {which} figures must be the whole dataset's: sums of every sample's loss and correct "
           "prediction and the count of samples, each added up across the ranks, then divided{cause}\n  it returned "
           "loss {loss} and accuracy {accuracy}; the whole {which} set gives {want_loss} and {want_accuracy}")
MEANS = N_(" (never the mean of the ranks' means: with 3 images on one rank and 2 on the other they differ)")


def cause(got, ranks_calls) -> str:
    per_rank = [mean_of(calls) for calls in ranks_calls]
    if same(got, [sum(r[i] for r in per_rank) / len(per_rank) for i in (0, 1)]):
        return _(MEANS)
    return ""


def whole(ranks, training: bool, want_of) -> None:
    """Each rank's training (or validation) figures in each epoch are ``want_of(epoch, calls)``: (loss, accuracy),
    ``calls`` each rank's calls of the loss function in that phase."""
    at = (0, 2) if training else (1, 3)
    for epoch in (0, 1):
        fail_if(differ(ranks, epoch))   # each rank's own figures: said once, as the check above says it
        calls = [[c for c in epochs[epoch]["calls"] if bool(c["grad"]) is training] for epochs in ranks]
        want = want_of(epoch, calls)
        for epochs in ranks:
            got = tuple(float(epochs[epoch]["result"][i]) for i in at)
            assert same(got, want), say(WHOLE, which=_("training") if training else _("validation"),
                                        cause=cause(got, calls), loss=got[0], accuracy=got[1], want_loss=want[0],
                                        want_accuracy=want[1])


def test_training_figures_are_the_whole_datasets(distributed):
    _seed, ranks = epochs_of(distributed)
    whole(ranks, True, lambda epoch, calls: mean_of([c for rank in calls for c in rank])[:2])


def test_validation_figures_are_the_one_process_figures(distributed):
    seed, ranks = epochs_of(distributed)
    x, y = tiny_data(5, seed + 2)

    def one_process(epoch, _calls):   # the model of that epoch on all 5 images at once
        model = tiny_model(0)
        with torch.no_grad():
            for p, w in zip(model.parameters(), ranks[0][epoch]["after"]):
                p.copy_(w)
            pred = model(x)[:, 0]
        return (nn.functional.binary_cross_entropy(pred, y.float()).item(),
                ((pred >= 0.5).float() == y).float().mean().item())

    whole(ranks, False, one_process)


def test_run_epoch_tells_the_sampler_the_epoch(distributed):
    _seed, ranks = epochs_of(distributed)
    for rank, epochs in enumerate(ranks):
        told = [one["epochs"] for one in epochs]
        assert told[0][-1:] == [0] and told[1][-1:] == [1], say(
            "run_epoch must call train_dl.sampler.set_epoch(epoch) first: a DistributedSampler shuffles by its seed "
            "plus the epoch it was given, so without it every epoch has the same order\n  rank {rank}'s sampler "
            "was given {told} in epochs 0 and 1", rank=rank, told=told)


@pytest.mark.cuda
def test_run_epoch_syncs_at_most_once_per_epoch(distributed, accelerator):
    _seed, ranks = epochs_of(distributed, "on_accelerator")
    for rank, epochs in enumerate(ranks):
        for epoch, one in enumerate(epochs):
            syncs = one["syncs"]
            assert syncs["total"] <= 1, say(
                "run_epoch may make the host wait for the device at most once per epoch (as sync.train_epoch): keep "
                "the six sums on the device, all_reduce them together, bring them over with one .tolist()\n  rank "
                "{rank}, epoch {epoch}: {total} syncs ({kinds}), the first at {first}", rank=rank, epoch=epoch,
                total=syncs["total"], kinds=syncs["by_kind"], first=syncs["events"][:1])


# --- the checkpoint -------------------------------------------------------


def saved(distributed):
    (case,) = ranks_of(distributed, "checkpoint")
    return case.answer


def test_checkpoint_is_written_once_by_rank_0(distributed):
    found = saved(distributed)
    saves = [len(rank["saves"]) for rank in found["ranks"]]
    assert saves == [1, 0], say(
        "save_checkpoint must write the file once, on rank 0 alone (if dist.get_rank() == 0): the ranks hold the "
        "same weights, and two processes writing one file at once can leave it torn\n  torch.save was called "
        "{saves} times on ranks 0 and 1", saves=saves)


def test_save_checkpoint_returns_once_the_file_is_written(distributed):
    found = saved(distributed)
    assert all(rank["there"] for rank in found["ranks"]), _(
        "save_checkpoint must return on every rank only once the file is written: after rank 0's torch.save, "
        "every rank calls dist.barrier(); rank 1 returned while rank 0 was still writing, and found no file")


def file_problem(found) -> str | None:
    """Why the file is not the dict of a plain model's state that save_checkpoint writes, or None."""
    file = found["file"]
    if not (isinstance(file, dict) and {"model", "epoch", "history"} <= set(file)):
        return say("save_checkpoint must write a dict {{'model': state_dict, 'epoch': epoch, 'history': history}}\n"
                   "  the file holds {value}", value=describe(file))
    keys = sorted(file["model"]) if isinstance(file["model"], dict) else []
    if any(k.startswith("module.") for k in keys):
        return say("the file must hold the model's own state_dict, not its DistributedDataParallel wrapper's (whose "
                   "keys all start with 'module.', which a plain model refuses): save model.module.state_dict()\n"
                   "  its keys are {keys}", keys=keys)
    return None


def test_checkpoint_holds_the_plain_models_state(distributed):
    found = saved(distributed)
    fail_if(file_problem(found))
    file = found["file"]
    model = tiny_model(0)
    model.load_state_dict(file["model"])
    assert all(torch.equal(a, b) for a, b in zip(model.parameters(), found["weights"])), _(
        "the file's weights must be the model's as it was saved")
    assert file["epoch"] == 3 and type(file["epoch"]) is int, say(
        "the file's epoch must be the Python int given\n  it holds {value}", value=describe(file["epoch"]))


LOADS = N_("load_checkpoint must load the file's weights into the model itself (a DistributedDataParallel's "
           "model.module), on any rank and in one process without a process group, and return (epoch, history)")


def test_load_checkpoint_fills_wrapped_and_plain_models(distributed):
    found = saved(distributed)
    fail_if(file_problem(found))
    for who, one in [*((say("rank {rank}", rank=r), one) for r, one in enumerate(found["loading"])),
                     (_("one plain process"), found["plain"])]:
        if "error" in one:
            fail_if(say("{lesson}\n  in {who}, it raised {kind}: {text}", lesson=_(LOADS), who=who,
                        kind=one["error"]["kind"], text=one["error"]["text"]))
        assert one["same"], say("{lesson}\n  in {who}, the model's weights differ from those saved", lesson=_(LOADS),
                                who=who)
        returned = one["returned"]
        assert isinstance(returned, (tuple, list)) and len(returned) == 2 and returned[0] == 3 and [
            list(h) for h in returned[1]] == [list(h) for h in found["file"]["history"]], say(
            "{lesson}\n  in {who}, it returned {value}", lesson=_(LOADS), who=who, value=describe(returned))

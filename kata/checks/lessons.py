"""The learner-facing sentences shared by the checks and `kata train`: one home per cause.

Every text here is a whole sentence (or a few), a template with named
placeholders filled by :func:`say`, never a sentence built from fragments: so
each can be translated as it stands: each is marked with ``N_`` (kata.i18n) and
:func:`say` translates it (gettext, the English text as the message id).

The first line of a check's message names the cause and the lesson, the same
words wherever that cause shows up (a run folds failures whose first lines
match, numbers aside); the specifics (which entry, which line of the learner's
file) follow on the lines after it. No torch here: `kata train` reads these
without importing it.
"""

from __future__ import annotations

from kata.i18n import N_, say  # say: a template, translated, then filled in

__all__ = ["ACCURACY_ALL_ONE", "ACCURACY_ALL_ZERO", "ACCURACY_AT_ONE_HALF", "ACCURACY_DIVIDED_BY_BATCHES",
           "ACCURACY_DIVIDED_BY_FULL_BATCHES", "ACCURACY_MEAN_OF_SHARES", "ACCURACY_NOT_A_SHARE",
           "ACCURACY_OUT_OF_RANGE", "ACCURACY_UNEXPLAINED", "ANOTHER_MODEL", "BACKWARD_COUNT",
           "BACKWARD_WITHOUT_GRAPH", "BATCH_NOT_MOVED", "CKPT_EPOCH_NOT_AN_INT", "CKPT_HISTORY_ENTRY",
           "CKPT_HISTORY_NOT_FLOATS", "CKPT_HISTORY_REFUSED", "CKPT_HISTORY_VALUES",
           "CKPT_MODEL_STATE_DIFFERS", "CKPT_MOVED_BEFORE_SAVING", "CKPT_MOVED_THE_MODEL", "CKPT_NO_EPOCH",
           "CKPT_NO_FILE", "CKPT_NO_HISTORY", "CKPT_NO_MODEL_STATE", "CKPT_NO_OPTIMIZER_STATE",
           "CKPT_OPTIMIZER_STATE_DIFFERS", "CKPT_OTHER_EPOCH", "CKPT_PROTOCOL", "CKPT_REFUSED_AS", "CKPT_UNREADABLE",
           "ELSEWHERE_FAILED", "ELSEWHERE_MAP_LOCATION_NONE", "ELSEWHERE_NEEDS_MAP_LOCATION", "ELSEWHERE_PLAIN",
           "ENTRY_AT", "ENTRY_AT_ALSO", "ENTRY_HELD", "ENTRY_LESSONS", "GRADIENTS_PILE_UP", "GRAPH_KEPT",
           "HISTORIES_DIFFER", "LABEL_NOT_A_TENSOR", "LABEL_WRONG_DTYPE", "LEARNING_RATE", "LOAD_DEVICE_NONE",
           "LOAD_MODEL_STATE", "LOAD_MOVES_THE_MODEL", "LOAD_OPTIMIZER_STATE", "LOAD_REPLACED_PARAMETERS",
           "LOAD_RETURNS_EPOCH", "LOAD_RETURNS_HISTORY", "LOSS_DIVIDED_BY_BATCHES", "LOSS_DIVIDED_BY_FULL_BATCHES",
           "LOSS_FUNCTION", "LOSS_FUNCTION_BATCH", "LOSS_GOT_INTEGER_LABELS", "LOSS_GOT_OTHER_SHAPES",
           "LOSS_IS_A_MEAN_OVER_BATCHES", "LOSS_IS_FOR_LOGITS", "LOSS_IS_L1", "LOSS_IS_MSE",
           "LOSS_NOT_A_MEAN_OVER_SAMPLES", "LOSS_NOT_WEIGHTED", "LOSS_OF_THE_LAST_BATCH", "LOSS_SUMMED_BATCH",
           "LOSS_SUMMED_OVER_THE_BATCH", "LOSS_UNEXPLAINED",
           "MIXED_DEVICES", "MIXED_DEVICES_FRAME", "NEVER_ZEROED", "NEW_OPTIMIZER", "NEXT_STEP_FAILED", "NOT_REFUSED",
           "NO_STEP", "NO_TRAINING_BATCH", "NO_VALIDATION", "NUMPY_LESSONS", "OPTIMIZER_CLASS",
           "OPTIMIZER_STATE_LEFT_BEHIND", "PYTORCH_ERROR_AT", "REFUSED_OTHERWISE", "RESUMED", "RESUME_DIFFERS",
           "RESUME_DONE", "RESUME_NEEDS_LOAD", "RESUME_NOTHING", "RUNS_CODE", "STEP_BEFORE_BACKWARD", "STEP_COUNT",
           "SUMS_CARRIED_OVER", "TRAINING_DIFFERS", "TRAIN_CRASH", "TRAIN_CRASH_FLOAT", "TRAIN_CRASH_FLOATS",
           "TRAIN_NOTE", "TRAIN_NOTE_SIM", "TRAIN_NO_CHECKPOINT", "VALUE_IS", "WHERE_IN_A_LIBRARY",
           "ZEROED_BEFORE_STEP", "say"]


# --- what a history may hold: four lists of Python floats ----------------------
#
# Each kind of wrong entry (kata.checks.messages.entry_kind) has its own true reason.

ENTRY_LESSONS = {
    "device tensor": N_(
        "A tensor on the accelerator where a Python float belongs: the seed's crash. matplotlib turns what "
        "it plots into NumPy arrays, and NumPy can't read device memory (\"can't convert cuda:0 device type "
        "tensor to numpy\"). `0 + is_correct.sum()` stays a tensor on the device, and `.float()` changes "
        "only its dtype: sum `is_correct.sum().item()` (a Python float on the host), or keep the sums on the "
        "device and convert them once per epoch."),
    "grad tensor": N_(
        "A tensor that requires grad where a Python float belongs (a loss kept as a tensor: `loss * n` "
        "instead of `loss.item() * n`): NumPy refuses it (\"Can't call numpy() on Tensor that requires "
        "grad\"), and each one keeps its autograd graph alive, so memory grows with every epoch. Sum "
        "`loss.item() * y_batch.size(0)`: a Python float."),
    "cpu tensor": N_(
        "A CPU tensor where a Python float belongs (what `is_correct.sum()` gives on the CPU, and the book's "
        "GitHub version's `is_correct.sum().cpu()` on any device): it plots, but the histories and scores "
        "are Python floats by the contract, values any caller can print, compare, save as JSON and plot (and "
        "on a GPU the same code without .cpu() is the seed's crash). Sum `is_correct.sum().item()`: .item() "
        "gives the Python number."),
    "numpy scalar": N_(
        "A NumPy scalar where a Python float belongs (np.float64 even passes isinstance(x, float), but it is "
        "another type): convert with float(x) or x.item()."),
    "other": N_(
        "A value that is not a Python float where one belongs: each is a mean loss or a share of correct "
        "predictions, a division that gives a float."),
}

# Where the first such entry is (and which lists hold entries of its kind).
ENTRY_AT = N_("  {name}[{index}] is {value}")
ENTRY_AT_ALSO = N_("  {name}[{index}] is {value}; entries of this kind are in {lists}")
VALUE_IS = N_("  {name} is {value}")

# What `kata train` calls each kind, in a list of them.
ENTRY_HELD = {"device tensor": N_("device tensors"), "grad tensor": N_("tensors that require grad"),
              "cpu tensor": N_("CPU tensors"), "numpy scalar": N_("NumPy scalars"),
              "other": N_("values that are not floats")}


# --- NumPy (through matplotlib) refusing a tensor ----------------------------------

NUMPY_LESSONS = {
    "device": N_(
        "NumPy can't read a tensor on the accelerator: the seed's crash. matplotlib (and np.asarray, and "
        ".numpy()) turn values into NumPy arrays in host memory, and a device tensor is not there. Convert each "
        "value to a Python float first with .item() or float(t) (both copy it to the host); .float() only "
        "changes the dtype and keeps the device."),
    "grad": N_(
        "NumPy refuses a tensor that requires grad (\"Can't call numpy() on Tensor that requires grad\"): "
        "matplotlib turns what it plots into NumPy arrays. Convert each value to a Python float first with "
        ".item() or float(t) (or .detach() it)."),
}


# --- PyTorch's errors in the learner's code, explained ------------------------------

# The specifics under each: where it happened, and PyTorch's own words (what a learner searches for).
PYTORCH_ERROR_AT = N_("  {who} failed {where}\n  {error}")
WHERE_IN_A_LIBRARY = N_("in a library call")

MIXED_DEVICES = N_("Tensors on two devices met in one operation: PyTorch computes only where all of an operation's "
                    "tensors are. {advice}")
# A CPU batch fed to a model on the device (tests/test_training.py, `kata run`).
BATCH_NOT_MOVED = N_("a batch reached the model without being moved: `x_batch.to(device)` RETURNS the moved tensor and "
                     "leaves x_batch where it was, so write `x_batch = x_batch.to(device)`")
# Which of the learner's names were where, in the line that failed (from its frame).
MIXED_DEVICES_FRAME = N_("  in that line's function: {placed}")

LOSS_GOT_INTEGER_LABELS = N_(
    "nn.BCELoss() was given the labels as integers (CelebA's attributes are int64): it compares "
    "probabilities with float targets, so pass the labels as floats, y.float() (as the book does)")

LOSS_GOT_OTHER_SHAPES = N_(
    "nn.BCELoss() was given predictions and labels of different shapes: the model's output is (N, 1) and the "
    "labels are (N,), so predict with the first column of the output, which has shape (N,) for any N "
    "(.squeeze() also drops N when a batch holds one image)")


BACKWARD_WITHOUT_GRAPH = N_(
    "loss.backward() was called on a loss that has no autograd graph: it was computed under torch.no_grad() (or "
    "torch.inference_mode()), or from detached tensors. Backpropagate in training only, where the forward pass "
    "runs with gradients; evaluation measures without them and never calls backward")


# --- the label (data) ------------------------------------------------------------------

LABEL_NOT_A_TENSOR = N_(
    "the label must be the Smiling entry of the attribute tensor as it is, a 0-d tensor, as the book's "
    "target transform gives it (the DataLoader would batch Python numbers too, but the kata holds you to the "
    "book's label): index the tensor, don't convert it")

LABEL_WRONG_DTYPE = N_(
    "the label must keep the attribute tensor's dtype (int64, as CelebA gives it): the book indexes the tensor "
    "and converts nothing here; the training loop makes floats of the labels where the loss needs them "
    "(y.float())")


# --- `kata train`: what the histories held, after a run or at the seed's crash ------------

TRAIN_NOTE = N_("the histories held {held}, not Python floats:\n{lists}\n  {lesson}\n  `pytest {training}` checks it.")
# The extra line for CPU tensors: the simulated accelerator shows what they become on a GPU.
TRAIN_NOTE_SIM = N_("  `kata train --target {target} --device sim` shows what the same code does on a GPU.")

# `kata train`'s checkpoints (kata/commands/_checkpoints.py).
TRAIN_NO_CHECKPOINT = N_("  (no checkpoint.pt this run: {reason}; `kata train --resume` goes on from one)")
RESUME_NOTHING = N_("--resume {path}: there is no checkpoint there; `kata train` writes checkpoint.pt beside "
                     "history.json after every epoch")
RESUME_NEEDS_LOAD = N_("--resume reads the checkpoint with the target's load_checkpoint, and {reason}: write it, or "
                        "resume with --target solutions (a checkpoint the reference wrote)")
RESUME_DONE = N_("--resume {path}: that run already has its {done} epochs; ask for more to go on from there "
                  "(--epochs {more}, say)")
RESUMED = N_("  (going on from {path}: {done} epochs done, on to {epochs}; the shuffling is drawn afresh)")

TRAIN_CRASH = N_("the seed's crash: plotting the history as the book does (ax.plot(x_arr, hist[2], '-o')) failed "
                  "with\n  {error}\nThese histories hold {held}:\n{lists}\n{floats}Why, and the fix: {lesson}\n"
                  "`pytest {training}` checks it.")
TRAIN_CRASH_FLOAT = N_("({names} is a list of plain Python floats: it plots.)\n")
TRAIN_CRASH_FLOATS = N_("({names} are plain Python floats: they plot.)\n")


# --- the training loop (tests/test_training.py, tests/test_sync.py; kata.checks.loop) ----

NO_TRAINING_BATCH = N_("the model never ran on a training batch with gradients: every epoch runs it on each batch of "
                        "the training loader, in training mode, then computes the loss and backpropagates it")
NO_STEP = N_("optimizer.step() is never called, so the weights never change: per batch, the loss is backpropagated "
              "(loss.backward()) and then the optimizer steps\n"
              "  the loop ran {batches} training batches without a step")
ANOTHER_MODEL = N_(
    "the optimizer updates parameters that are not the model's: a copy of it (copy.deepcopy) or a model of your "
    "own was trained, and the caller's model was left as it was. Train the object you were given: "
    "Module.to moves it in place, so there is nothing to copy; build the optimizer over model.parameters() of "
    "that model, after moving it")
OPTIMIZER_CLASS = N_("the optimizer is torch.optim.{found}; the book trains with torch.optim.Adam over the model's "
                      "parameters, learning rate 0.001")
LEARNING_RATE = N_("Adam's learning rate is {lr}; the book's is 0.001 (lr=0.001)")
NEW_OPTIMIZER = N_("the training made a new optimizer more than once, so Adam's running averages of the gradients "
                    "start again from zero each time: make the optimizer once, before the epochs\n"
                    "  the loop stepped {optimizers} different optimizers")
LOSS_FUNCTION = N_(
    "the loss is not nn.BCELoss() of the model's probabilities (the first column of its output) against the "
    "labels as floats: another loss function, or the output changed before the loss (a second sigmoid, a loss "
    "made for logits)")
# What the loss is instead, when the check can tell (from one batch, or from the epoch's mean).
LOSS_FUNCTION_BATCH = N_("  for a training batch the loss backpropagated is {got}; nn.BCELoss() of the model's output "
                          "gives {want}")
LOSS_SUMMED_OVER_THE_BATCH = N_(
    "the loss backpropagated is the sum of the batch's per-sample losses, not their mean (nn.BCELoss(reduction="
    "'sum'), or the mean times the batch size): its gradients are the batch size times the book's, so the steps "
    "differ from the book's (and a smaller last batch weighs less than the others). Backpropagate nn.BCELoss() as "
    "it is (reduction='mean', the default); multiply by the batch size only in the running sum, loss.item() * n")
LOSS_SUMMED_BATCH = N_("  for a training batch of {n} samples the loss backpropagated is {got:.6f}, {n} times "
                       "nn.BCELoss()'s mean of {want:.6f}")
LOSS_IS_FOR_LOGITS = N_(
    "  {name} = {got:.6f} is what nn.BCEWithLogitsLoss() gives for these probabilities, the same as nn.BCELoss() "
    "after a second sigmoid (the model ends with its own Sigmoid, so its output is already a probability); "
    "nn.BCELoss() of the model's output gives {want:.6f}")
LOSS_IS_MSE = N_("  {name} = {got:.6f} is nn.MSELoss() of the probabilities; nn.BCELoss() gives {want:.6f}")
LOSS_IS_L1 = N_("  {name} = {got:.6f} is nn.L1Loss() of the probabilities; nn.BCELoss() gives {want:.6f}")
LOSS_UNEXPLAINED = N_(
    "the loss is not nn.BCELoss() of the model's probabilities averaged over the samples, and the check can't "
    "tell why: the loss function, what it is given, or the averaging\n"
    "  {name} = {got:.6f}; nn.BCELoss() of the model's probabilities, averaged over the {samples} samples, "
    "is {want:.6f}")
NEVER_ZEROED = N_(
    "the gradients are never zeroed, so each batch's gradients add to all the earlier ones' (backward "
    "accumulates into each parameter's .grad): per batch, backward, step, then optimizer.zero_grad()\n"
    "  {batches} training batches, no zero_grad")
GRADIENTS_PILE_UP = N_(
    "the gradients of several batches add up before a step (backward accumulates into each parameter's .grad "
    "until it is zeroed): zero them once per batch, after the step (or before the forward pass)")
ZEROED_BEFORE_STEP = N_(
    "the gradients are zeroed between loss.backward() and optimizer.step(), so the step finds none to apply and "
    "the weights never change: per batch, backward, step, then zero_grad (or zero_grad first, before the forward "
    "pass)")
STEP_BEFORE_BACKWARD = N_(
    "optimizer.step() runs before loss.backward() in a batch, so it applies no gradient (or an earlier "
    "batch's): step applies the gradients backward computes, so per batch it comes after backward")
BACKWARD_COUNT = N_("loss.backward() runs once per training batch, on that batch's loss\n"
                     "  it ran {backwards} times for {batches} training batches")
STEP_COUNT = N_("optimizer.step() runs once per training batch\n  it ran {steps} times for {batches} training batches")
TRAINING_DIFFERS = N_(
    "the histories or the trained weights differ from the book's algorithm, and the loop's steps don't say why "
    "(the check saw the book's order: forward, BCELoss, backward, Adam's step, zero_grad)\n"
    "  yours: {got}\n  book:  {want}")

GRAPH_KEPT = N_(
    "a running sum keeps the autograd graph of every batch alive: a loss was added to it as it is, with its "
    "graph, so the sum requires grad and holds on to each batch's graph, which nothing will use again (memory "
    "grows with every batch). Add the loss without its graph, loss.detach() * n (still on the device: no sync)\n"
    "  when {function} returned, `{name}` held the graphs of {graphs} batches")
LOSS_NOT_A_MEAN_OVER_SAMPLES = N_(
    "the loss of an epoch is the mean over samples: each batch's loss times its number of samples, summed, "
    "divided by the number of samples (len(dl.dataset)), so a small last batch counts as little as it should")
LOSS_IS_A_MEAN_OVER_BATCHES = N_("  {name} = {got:.6f} is the mean over the {batches} batches; the mean over the "
                                  "{samples} samples is {want:.6f}")
LOSS_DIVIDED_BY_BATCHES = N_("  {name} = {got:.6f} is the sum over samples divided by the {batches} batches, not "
                              "by the {samples} samples; the mean over samples is {want:.6f}")
LOSS_DIVIDED_BY_FULL_BATCHES = N_(
    "  {name} = {got:.6f} is the sum over samples divided by {padded}, len(dl) * batch_size ({batches} batches of "
    "{batch}), not by the {samples} samples, len(dl.dataset): the last batch holds fewer; the mean over samples "
    "is {want:.6f}")
LOSS_OF_THE_LAST_BATCH = N_(
    "  {name} = {got:.6f} is the loss of the epoch's last batch alone ({last} samples): after the loop, `loss` "
    "holds the last batch's; sum each batch's loss.item() * n in the loop and divide by the {samples} samples, "
    "which gives {want:.6f}")
LOSS_NOT_WEIGHTED = N_("  {name} = {got:.6f} adds up the batch losses without multiplying each by its batch size; the "
                        "mean over samples is {want:.6f}")
SUMS_CARRIED_OVER = N_("  {name} = {got:.6f} counts the earlier epochs' batches too: the running sums start again at 0 "
                        "every epoch; this epoch's value is {want:.6f}")
ACCURACY_NOT_A_SHARE = N_(
    "the accuracy of an epoch is the share of samples predicted right: the number of predictions "
    "(probability >= 0.5) that match the label, over all its batches, divided by the number of samples "
    "(len(dl.dataset))")
ACCURACY_DIVIDED_BY_BATCHES = N_("  {name} = {got:.6f} is the number right divided by the {batches} batches, not by "
                                  "the {samples} samples; the share is {want:.6f}")
ACCURACY_DIVIDED_BY_FULL_BATCHES = N_(
    "  {name} = {got:.6f} is the {correct} right divided by {padded}, len(dl) * batch_size ({batches} batches of "
    "{batch}), not by the {samples} samples, len(dl.dataset): the last batch holds fewer; the share is {want:.6f}")
ACCURACY_MEAN_OF_SHARES = N_("  {name} = {got:.6f} is the mean of the batches' shares; over all {samples} samples the "
                              "share is {want:.6f}")
ACCURACY_ALL_ONE = N_("  {name} = {got:.6f} is the share of labels that are 1, as if every prediction were 1; the "
                       "model's probabilities predict {correct} of the {samples} samples right, a share of {want:.6f}")
ACCURACY_ALL_ZERO = N_("  {name} = {got:.6f} is the share of labels that are 0, as if every prediction were 0; the "
                        "model's probabilities predict {correct} of the {samples} samples right, a share of {want:.6f}")
ACCURACY_UNEXPLAINED = N_(
    "the accuracy is not the share of samples the model's probabilities predict right (probability >= 0.5 "
    "matching the label), and the check can't tell why: the prediction, the comparison, the count or the "
    "division\n  {name} = {got:.6f}; {correct} of the {samples} samples were predicted right, a share of {want:.6f}")
ACCURACY_OUT_OF_RANGE = N_("  {name} = {got} with {samples} samples in batches of {batch}: a share is between 0 and 1")
NO_VALIDATION = N_("the validation entries come from the model run on valid_dl's batches after each epoch's training "
                    "(evaluate(model, valid_dl, ...)); the model never ran on a batch of valid_dl")
HISTORIES_DIFFER = N_(
    "the trained weights are the book's, but the histories differ from what the book's loop records, and the "
    "check can't tell why from the batches the model saw\n  yours: {got}\n  book:  {want}")
ACCURACY_AT_ONE_HALF = N_(
    "a probability of exactly 0.5 counts as a prediction of 1 (smiling): the book predicts `pred >= 0.5`. "
    "pred.round() rounds 0.5 down to 0 (to the even number), and pred > 0.5 leaves it out\n"
    "  with a model that says 0.5 for every image, {who} gave an accuracy of {got}; {share} is the share of labels "
    "that are 1")


# --- the checkpoint (tests/test_checkpoint.py; kata.checks.checkpoints) ---------------------------

# A file torch.load(path, weights_only=True) refuses, by what it holds (the refused global's kind).
CKPT_UNREADABLE = {
    "model": N_(
        "the checkpoint holds a whole model object (torch.save(model), or the model itself in the dict), and "
        "torch.load with weights_only=True, its default since PyTorch 2.6, refuses it: unpickling an object runs "
        "code, and ties the file to your class. Save the model's state instead, model.state_dict(): its tensors "
        "by name, which any copy of the model loads"),
    "optimizer": N_(
        "the checkpoint holds a whole optimizer object, and torch.load with weights_only=True, its default since "
        "PyTorch 2.6, refuses it: unpickling an object runs code. Save the optimizer's state instead, "
        "optimizer.state_dict(): Adam's running averages and step counts, and its settings"),
    "numpy": N_(
        "the checkpoint holds NumPy values (a history entry or the epoch as np.float64, say), and torch.load with "
        "weights_only=True refuses them: only tensors, numbers, strings, lists, tuples and dicts load safely. "
        "Turn each into a Python number, float(v) or int(v), before saving"),
    "method": N_(
        "the checkpoint holds a method where its result belongs (model.state_dict without the call, say: pickle "
        "writes a method as getattr(model, 'state_dict')), and torch.load with weights_only=True refuses it; even "
        "loaded, it would hold no tensors. Call it: model.state_dict(), optimizer.state_dict()"),
    "version": N_(
        "the checkpoint holds torch.__version__ as it is, an object of torch's TorchVersion class, and torch.load "
        "with weights_only=True refuses it: only tensors, numbers, strings, lists, tuples and dicts load safely. "
        "Save str(torch.__version__), or leave it out"),
    "class": N_(
        "the checkpoint holds an object of a class of its own ({name}: a named tuple, a dataclass, ...), and "
        "torch.load with weights_only=True refuses it: only tensors, numbers, strings, lists, tuples and dicts "
        "load safely. Save plain containers (the history's four lists as a list of lists, say)"),
}
CKPT_PROTOCOL = N_(
    "the checkpoint was written with a pickle protocol that torch.load with weights_only=True can't read "
    "(pickle_protocol=4 or 5, pickle.HIGHEST_PROTOCOL: its framing is the operand {operand} it refused): leave "
    "pickle_protocol out, and torch.save writes the protocol it reads")
# Under each: what torch.load said.
CKPT_REFUSED_AS = N_("  torch.load({path}, weights_only=True) refuses it: {gist}")
CKPT_NO_FILE = N_("save_checkpoint(path, ...) writes the checkpoint at path, one file (torch.save)\n"
                  "  no file is at {path}")
CKPT_NO_MODEL_STATE = N_(
    "the checkpoint holds no model state: save model.state_dict(), the mapping from the model's parameter and "
    "buffer names ({keys}) to their tensors, as it is\n  the file holds {found}")
CKPT_MODEL_STATE_DIFFERS = N_(
    "the model state in the checkpoint is not the model's at the moment it was saved: save model.state_dict() "
    "as it is, in save_checkpoint\n  {key} in the file is {got}; the model's is {want}")
CKPT_NO_OPTIMIZER_STATE = N_(
    "the checkpoint holds no optimizer state: save optimizer.state_dict(), a dict of 'state' (Adam's running "
    "averages and step count, per parameter) and 'param_groups' (the learning rate and other settings); without "
    "it a resumed Adam starts again from zero\n  the file holds {found}")
CKPT_OPTIMIZER_STATE_DIFFERS = N_(
    "the optimizer state in the checkpoint is not the optimizer's at the moment it was saved: save "
    "optimizer.state_dict() as it is\n  {what}")
CKPT_EPOCH_NOT_AN_INT = N_(
    "the checkpoint holds the epoch as {kind}, not a Python int: an epoch is a count, and a tensor there comes "
    "back a tensor (on the device it was saved from). Save int(epoch)")
CKPT_OTHER_EPOCH = N_(
    "the checkpoint's epoch is not the one save_checkpoint was given: save the epoch as it was given, and let "
    "the caller decide what comes next (kata train gives the number of epochs done; load_checkpoint hands it "
    "back as it is)\n  {key} in the file is {value}; save_checkpoint was given {epoch}")
CKPT_NO_EPOCH = N_("the checkpoint holds no epoch: save the epoch it was given, {epoch}, as a Python int\n"
                    "  the file holds {found}")
CKPT_HISTORY_NOT_FLOATS = N_(
    "the checkpoint holds the histories' entries as other values than Python floats: save_checkpoint writes each "
    "entry as a float, whatever the history it is given holds (the seed's train gives 0-d device tensors): a tensor "
    "in the file drags its device and its autograd flag along, and comes back a tensor, and torch.load with "
    "weights_only=True refuses a NumPy value. Convert each entry: float(v), or v.item() for a tensor")
# Under it: the entry the file holds, or the refusal of a file saved from a history of NumPy scalars.
CKPT_HISTORY_ENTRY = N_("  {name}[{index}] in the file is {value} ({kind}); it was given {given}")
CKPT_HISTORY_REFUSED = N_("  saved from a history of {given}, the file holds NumPy values (saved from a history of "
                          "floats, it reads)")
CKPT_HISTORY_VALUES = N_(
    "the checkpoint holds other values than the history it was given: each entry is saved as the Python float it "
    "is, digit for digit (a float made through a float32 tensor, torch.tensor(v), loses digits: 0.6931 becomes "
    "0.6930999755859375). Convert a number with float(v), a tensor with v.item()\n"
    "  {name}[{index}] in the file is {got}; it was given {want}")
CKPT_NO_HISTORY = N_(
    "the checkpoint holds no list with the values of {name} ({values}): save the four histories as four lists "
    "of floats, in the order they were given\n  the file holds {found}")
CKPT_MOVED_THE_MODEL = N_(
    "save_checkpoint moved the model: saving must leave the model where it is, since the caller goes on training "
    "it there, with an optimizer whose state stayed on the device (its next step would mix devices). Save each "
    "state_dict as it is; where the tensors go is decided when the file is read (map_location)\n"
    "  before save_checkpoint the model was on {device}; after it, on {after}")
CKPT_MOVED_BEFORE_SAVING = N_(
    "save_checkpoint moved the state to the CPU before saving it: the checkpoint holds each state_dict as it is, "
    "on the device it lives on, and where the tensors go is decided when the file is read (map_location)\n"
    "  saved from {device}, the file holds {device_tensors} tensors tagged for a device; the model's and the "
    "optimizer's state_dicts hold {want}")

LOAD_RETURNS_EPOCH = N_("load_checkpoint returns (epoch, history): the epoch as it was saved, a Python int\n"
                         "  it returned {got} for a checkpoint saved at epoch {want}")
LOAD_RETURNS_HISTORY = N_(
    "load_checkpoint returns (epoch, history): the four histories as they were saved, lists of Python floats in "
    "the same order\n  it returned {got}\n  saved:      {want}")
LOAD_MODEL_STATE = N_(
    "load_checkpoint loads the saved state into the model it is given, in place: the caller's model is the one "
    "that resumes\n  after {call}, {key} is {got}; the saved {want}")
LOAD_OPTIMIZER_STATE = N_(
    "load_checkpoint loads the saved state into the optimizer it is given: without it Adam's running averages "
    "and step count start again from zero, and a resumed run takes other steps than one that never stopped\n"
    "  after {call}, {what}")
OPTIMIZER_STATE_LEFT_BEHIND = N_(
    "the optimizer's state is on {state} while its parameters are on {params}, so the next optimizer.step() mixes "
    "two devices: Optimizer.load_state_dict puts each state tensor where its parameter is at that moment, so the "
    "model moves first, then the optimizer's state is loaded\n  after {call}, {name} of parameter {index} is on "
    "{state}")
LOAD_REPLACED_PARAMETERS = N_(
    "load_checkpoint put new Parameter objects in the model in place of its own, so the optimizer the caller built "
    "on the model holds parameters the model no longer has: optimizer.step() updates those, the optimizer's state "
    "just loaded belongs to them, and the model stops learning. load_state_dict(state, assign=True) does this: the "
    "file's tensors themselves become the parameters (new objects, on map_location's device). Load with "
    "model.load_state_dict(state), which copies the values into the existing parameters: they keep their device "
    "and the optimizer's references\n  after {call}, the model's {names} are not the parameters the optimizer holds")
LOAD_MOVES_THE_MODEL = N_(
    "given a device, load_checkpoint moves the model there first, in place (Module.to moves the caller's model "
    "object), and maps the file's tensors there\n  after {call}, the model, which was on {before}, is on {after}")
LOAD_DEVICE_NONE = N_(
    "device=None means the model's own device (that of its first parameter): the file's tensors are mapped there "
    "and the model stays where it is\n  after {call}, a model on {before} is on {after}")
NEXT_STEP_FAILED = N_(
    "after load_checkpoint the next training step fails: the model and the optimizer's state must both be where "
    "the batches go, so that training continues\n  {call}, then a training step: {error}")
RESUME_DIFFERS = N_(
    "training resumed from the checkpoint takes other steps than training that never stopped, though the model's "
    "and the optimizer's states were loaded as they were saved: the check can't tell why\n"
    "  after {epochs} more epochs, {name} differs by {gap:.3g}")
RUNS_CODE = N_(
    "load_checkpoint ran code hidden in the file: torch.load with weights_only=False unpickles anything, and a "
    "pickle may call any function (this one wrote a file; another could empty your home folder). Read with "
    "weights_only=True, torch.load's default since PyTorch 2.6, and let its error through for a file that holds "
    "more than tensors and plain values\n  the file's pickled call (builtins.exec) wrote {marker}")
NOT_REFUSED = N_(
    "load_checkpoint opened a file that holds a pickled call (builtins.exec) without an error: a file that can't "
    "be read with weights_only=True is one not to open; let torch.load's pickle.UnpicklingError through\n"
    "  {call} returned {returned}")
REFUSED_OTHERWISE = N_(
    "load_checkpoint refuses a file that would run code with another error than torch.load's: weights_only=True "
    "raises pickle.UnpicklingError for it, and that error, unchanged, says what the file holds\n"
    "  {call} raised {error}")
ELSEWHERE_NEEDS_MAP_LOCATION = N_(
    "load_checkpoint can't open a file saved on a GPU on a machine without one: in a fresh process without an "
    "accelerator it stopped with PyTorch's own error\n  {error}\n  at {where}: {source}\n"
    "Why: torch.save writes each tensor with the device it lived on (cuda:0), and torch.load puts it back there "
    "unless it is told where, which a machine without that device can't do. Map the file's tensors to the "
    "model's device as they are read: torch.load(path, map_location=device, ...)")
ELSEWHERE_MAP_LOCATION_NONE = N_(
    "load_checkpoint can't open a file saved on a GPU on a machine without one: its torch.load was given "
    "map_location, but as None (load_checkpoint's device=None, passed on as it is), and None maps nothing\n"
    "  {error}\n  at {where}: {source}\n"
    "Why: device=None means the model's own device (that of its first parameter). Work that device out before "
    "reading the file, then map the tensors there: torch.load(path, map_location=that_device, ...)")
ELSEWHERE_FAILED = N_(
    "load_checkpoint failed on a machine without a GPU, opening a file saved on one (in a fresh process without "
    "an accelerator)\n  {call} failed at {where}: {source}\n  {error}")
ELSEWHERE_PLAIN = N_("  in a fresh process without an accelerator, {what}")

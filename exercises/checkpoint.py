"""Exercise 7 · checkpoint: a model saved on the GPU opens on a laptop, and training resumes.

A checkpoint is where a tensor lives, carried to disk. PyTorch writes each
tensor with the device it lived on, so a file saved during GPU training,
opened on a machine without a GPU, stops with PyTorch's "Attempting to
deserialize object on a CUDA device but torch.cuda.is_available() is False".
Then come the quieter mistakes: the optimizer's state left on the old device
after resuming (the next step fails), the whole model pickled instead of its
state, and a file from someone else opened in a way that lets it run any code.

Run `pytest exercises/checkpoint.py` to check just this file (its `cuda` checks
save on a real or simulated accelerator and open the file in a fresh process
that has none), and `kata hint checkpoint` when you are stuck.
"""

import torch


def save_checkpoint(path, model, optimizer, epoch, history):
    """Write one checkpoint file at `path`, with `torch.save`.

    Specification:
    - The file holds four things: the model's state (`Module.state_dict`)
      and the optimizer's (`Optimizer.state_dict`), each as it is, on
      whatever device it lives (nothing is moved before saving); `epoch` as a
      Python int; and the four histories as lists of Python floats.
    - `history` is what `training.train` returns or hands to `on_epoch`: four
      lists (loss_hist_train, loss_hist_valid, accuracy_hist_train,
      accuracy_hist_valid), kept in that order. Whatever its entries are
      (Python floats, 0-d tensors on any device, tensors that require grad,
      NumPy scalars), the file holds each one as a Python float.
    - Only what PyTorch's weights-only loading accepts goes into the file:
      tensors, dicts, lists, tuples, numbers and strings. No model or
      optimizer object, no class of your own, no NumPy value.
    - How the four things are arranged in the file is yours to choose:
      `load_checkpoint` is the one that reads it.

    Concept: what a checkpoint is made of, and where each of its tensors
    lives when it is written.
    """
    raise NotImplementedError(
        "`save_checkpoint` is not written yet: see its docstring, and `kata hint checkpoint save_checkpoint`")


def load_checkpoint(path, model, optimizer=None, device=None):
    """Restore `model` (and `optimizer`, when given) from the file at `path`;
    return `(epoch, history)`.

    Specification:
    - `device=None` means the model's own device: that of its first
      parameter (the CPU for a model without parameters). Given a device (a
      torch.device or a string), the model is moved there first, in place:
      the caller's model object is the one that moves.
    - The file's tensors are mapped to that device as they are read, so a
      file saved on a GPU opens on a machine that has none.
    - The file is read in PyTorch's weights-only mode: a file never runs
      code. A file that holds anything else (a pickled object or call) is
      refused with the error `torch.load` raises for it, unchanged.
    - The model's state is loaded into `model`, in place; when an optimizer
      is given, its state is loaded too, so that both live on that device
      and training continues: the next `optimizer.step()` works, with
      Adam's state beside the parameters it belongs to.
    - Returns the epoch as it was saved (a Python int) and the four
      histories, in the order `save_checkpoint` was given them, as lists of
      Python floats.

    Concept: where a tensor lives when it is read back, and what a file you
    did not write may do when you open it.
    """
    raise NotImplementedError(
        "`load_checkpoint` is not written yet: see its docstring, and `kata hint checkpoint load_checkpoint`")

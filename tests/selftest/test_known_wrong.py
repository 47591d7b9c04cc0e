"""Known-wrong implementations must fail the checks written against them.

Each mutant is the reference solution with one mistake a learner makes, made
by a text substitution. The named checks are called directly on it (with their
fixtures filled in) and must fail; the self-check (plain `pytest`) already
shows that the unmodified solutions pass them.
"""

import functools
import importlib.util
import inspect

import pytest

from kata.target import CHECKS_DIR, PROJECT_ROOT, Target

# (exercise, what the learner got wrong, [(old, new), ...], checks that must fail)
MUTANTS = [
    ("model", "no Sigmoid at the end",
     [("    model.add_module('sigmoid', nn.Sigmoid())\n", "")],
     ["test_layers_match_the_book_in_order", "test_output_is_one_probability_per_image"]),
    ("model", "Dropout(0.2)",
     [("nn.Dropout(p=0.5)", "nn.Dropout(p=0.2)")],
     ["test_layers_match_the_book_in_order"]),
    ("model", "kernel_size=5 in the last conv",
     [("out_channels=256, kernel_size=3, padding=1", "out_channels=256, kernel_size=5, padding=2")],
     ["test_layers_match_the_book_in_order", "test_parameter_count_is_the_books_388673"]),
    ("model", "MaxPool2d where the book has AvgPool2d(8)",
     [("nn.AvgPool2d(kernel_size=8)", "nn.MaxPool2d(kernel_size=8)")],
     ["test_layers_match_the_book_in_order"]),
    ("model", "the Linear layer built first (other initial weights)",
     [("    model = nn.Sequential()\n", "    fc = nn.Linear(256, 1)\n    model = nn.Sequential()\n"),
      ("model.add_module('fc', nn.Linear(256, 1))", "model.add_module('fc', fc)")],
     ["test_initial_weights_are_the_books_under_manual_seed_1"]),
    ("model", "moves itself to the CPU",
     [("    return model\n", "    return model.to('cpu')\n")],
     ["test_build_model_leaves_placement_to_the_caller"]),
    ("model", "one model cached at module level",
     [("def build_model() -> nn.Sequential:\n", "_cache = []\n\n\ndef build_model() -> nn.Sequential:\n"
                                                "    if _cache:\n        return _cache[0]\n"),
      ("    return model\n", "    _cache.append(model)\n    return model\n")],
     ["test_each_call_builds_a_new_model"]),

    ("training", "the seed's bug: correct predictions summed as a tensor",
     [("            correct_total += is_correct.sum().item()", "            correct_total += is_correct.sum()")],
     ["test_histories_are_four_lists_of_python_floats"]),
    ("training", "histories of NumPy floats",
     [("history.loss_hist_train.append(loss_total / len(train_dl.dataset))",
       "history.loss_hist_train.append(np.float64(loss_total / len(train_dl.dataset)))"),
      ("from collections import namedtuple\n", "from collections import namedtuple\n\nimport numpy as np\n")],
     ["test_histories_are_four_lists_of_python_floats"]),
    ("training", "loss averaged per batch",
     [("            loss_total += loss.item() * y_batch.size(0)\n", "            loss_total += loss.item()\n"),
      ("loss_total / len(train_dl.dataset)", "loss_total / len(train_dl)")],
     ["test_loss_and_accuracy_are_means_over_samples", "test_training_follows_the_books_algorithm_exactly"]),
    ("training", "accuracy divided by the number of batches",
     [("correct_total / len(train_dl.dataset)", "correct_total / len(train_dl)")],
     ["test_loss_and_accuracy_are_means_over_samples", "test_histories_hold_a_mean_loss_and_a_share_for_any_sizes"]),
    ("training", "validation in train mode",
     [("    model.eval()\n", "")],
     ["test_training_runs_in_train_mode_and_validation_in_eval_mode_without_grad",
      "test_evaluate_returns_the_books_measures_as_floats_without_training"]),
    ("training", "validation with gradients",
     [("    with torch.no_grad():\n", "    if True:\n")],
     ["test_training_runs_in_train_mode_and_validation_in_eval_mode_without_grad",
      "test_evaluate_returns_the_books_measures_as_floats_without_training"]),
    ("training", "model.train() never called again after validation",
     [("        model.train()\n", "")],
     ["test_training_runs_in_train_mode_and_validation_in_eval_mode_without_grad"]),
    ("training", "no zero_grad()",
     [("            optimizer.zero_grad()\n", "")],
     ["test_training_follows_the_books_algorithm_exactly"]),
    ("training", "no optimizer.step()",
     [("            optimizer.step()\n", "")],
     ["test_training_follows_the_books_algorithm_exactly", "test_the_callers_model_is_the_one_trained"]),
    ("training", "lr=0.01",
     [("lr=0.001", "lr=0.01")],
     ["test_training_follows_the_books_algorithm_exactly"]),
    ("training", "MSELoss",
     [("nn.BCELoss()", "nn.MSELoss()")],
     ["test_training_follows_the_books_algorithm_exactly", "test_loss_and_accuracy_are_means_over_samples"]),
    ("training", "the moved batch thrown away",
     [("            x_batch = x_batch.to(device)\n", "            x_batch.to(device)\n")],
     ["test_every_batch_is_moved_to_the_device"]),
    ("training", "the model never moved",
     [("    else:\n        model.to(device)\n", "")],
     ["test_the_model_is_moved_to_the_given_device_in_place"]),
    ("training", "a copy of the model trained",
     [("    loss_fn = nn.BCELoss()\n    optimizer", "    model = copy.deepcopy(model)\n    loss_fn = nn.BCELoss()\n    optimizer"),
      ("from collections import namedtuple\n", "import copy\nfrom collections import namedtuple\n")],
     ["test_the_callers_model_is_the_one_trained", "test_training_follows_the_books_algorithm_exactly",
      "test_last_validation_entry_equals_evaluate_of_the_final_model"]),
    ("training", "validation on the training set",
     [("evaluate(model, valid_dl, device)", "evaluate(model, train_dl, device)")],
     ["test_last_validation_entry_equals_evaluate_of_the_final_model"]),
    ("training", "on_epoch given 1-based epochs",
     [("on_epoch(epoch, history)", "on_epoch(epoch + 1, history)")],
     ["test_on_epoch_is_called_once_per_epoch_with_the_history_so_far"]),
    ("training", "on_epoch never called",
     [("            on_epoch(epoch, history)\n", "            pass\n")],
     ["test_on_epoch_is_called_once_per_epoch_with_the_history_so_far"]),
    ('plotting', "no conversion: the history's entries plotted as they are (the seed's code)",
     [('    loss_train, loss_valid, acc_train, acc_valid = ([_host(v) for v in h] for h in hist)\n',
       '    loss_train, loss_valid, acc_train, acc_valid = hist\n')],
     ['test_plot_history_accepts_each_kind_of_entry', 'test_plot_history_draws_any_history', 'test_plot_history_never_shows_or_pauses_and_renders_with_agg', 'test_live_plot_draws_the_seeds_history_of_tensors', 'test_live_plot_follows_any_history']),
    ('plotting', "only the loss lists converted (the seed's crash: accuracy tensors)",
     [('    loss_train, loss_valid, acc_train, acc_valid = ([_host(v) for v in h] for h in hist)\n',
       '    loss_train, loss_valid = ([_host(v) for v in h] for h in hist[:2])\n    acc_train, acc_valid = hist[2], hist[3]\n')],
     ['test_plot_history_accepts_each_kind_of_entry', 'test_plot_history_draws_any_history', 'test_live_plot_draws_the_seeds_history_of_tensors', 'test_live_plot_follows_any_history']),
    ('plotting', '.cpu() without .detach() or .item()',
     [('return value.detach().cpu().item()',
       'return value.cpu()')],
     ['test_plot_history_accepts_each_kind_of_entry', 'test_plot_history_draws_any_history', 'test_live_plot_draws_the_seeds_history_of_tensors']),
    ('plotting', '.float() taken for a move to the host',
     [('return value.detach().cpu().item()',
       'return value.float()')],
     ['test_plot_history_accepts_each_kind_of_entry', 'test_plot_history_draws_any_history', 'test_live_plot_draws_the_seeds_history_of_tensors']),
    ('plotting', 'np.asarray(hist, dtype=float) on a list of tensors',
     [('([_host(v) for v in h] for h in hist)',
       '(np.asarray(h, dtype=float) for h in hist)')],
     ['test_plot_history_accepts_each_kind_of_entry', 'test_plot_history_draws_any_history']),
    ('plotting', 'the first entry decides whether a list is converted',
     [('([_host(v) for v in h] for h in hist)',
       '([_host(v) for v in h] if isinstance(h[0], torch.Tensor) else list(h) for h in hist)')],
     ['test_plot_history_accepts_each_kind_of_entry', 'test_plot_history_draws_any_history']),
    ('plotting', 'requires_grad switched off in place',
     [('return value.detach().cpu().item()',
       'return value.requires_grad_(False).cpu().item()')],
     ['test_plot_history_leaves_the_history_as_it_was']),
    ('plotting', "the caller's history converted in place",
     [('    loss_train, loss_valid, acc_train, acc_valid = ([_host(v) for v in h] for h in hist)\n',
       '    for h in hist:\n        h[:] = [_host(v) for v in h]\n    loss_train, loss_valid, acc_train, acc_valid = hist\n')],
     ['test_plot_history_leaves_the_history_as_it_was', 'test_plot_history_draws_any_history', 'test_live_plot_draws_the_seeds_history_of_tensors']),
    ('plotting', 'only a named tuple works (fields read by name)',
     [('([_host(v) for v in h] for h in hist)',
       '([_host(v) for v in h] for h in (hist.loss_hist_train, hist.loss_hist_valid, hist.accuracy_hist_train, hist.accuracy_hist_valid))')],
     ['test_plot_history_accepts_a_named_tuple_or_a_plain_tuple']),
    ('plotting', 'x starts at 0',
     [('x_arr = np.arange(len(loss_train)) + 1',
       'x_arr = np.arange(len(loss_train))')],
     ['test_each_line_holds_its_history_at_epochs_1_to_n', 'test_live_plot_grows_one_point_per_epoch']),
    ('plotting', 'no x values: ax.plot(y, fmt) counts from 0',
     [('ax.plot(x_arr, ',
       'ax.plot(')],
     ['test_each_line_holds_its_history_at_epochs_1_to_n', 'test_plot_history_draws_any_history']),
    ('plotting', 'training and validation loss swapped',
     [("ax.plot(x_arr, loss_train, '-o'",
       "ax.plot(x_arr, loss_valid, '-o'"),
      ("ax.plot(x_arr, loss_valid, '--<'",
       "ax.plot(x_arr, loss_train, '--<'")],
     ['test_each_line_holds_its_history_at_epochs_1_to_n', 'test_plot_history_draws_any_history']),
    ('plotting', 'panels swapped: accuracy on the left',
     [('add_subplot(1, 2, 1)',
       'add_subplot(1, 2, @)'),
      ('add_subplot(1, 2, 2)',
       'add_subplot(1, 2, 1)'),
      ('add_subplot(1, 2, @)',
       'add_subplot(1, 2, 2)')],
     ['test_loss_is_on_the_left_and_accuracy_on_the_right', 'test_axes_are_labelled_epoch_loss_and_accuracy']),
    ('plotting', 'panels stacked, one above the other',
     [('add_subplot(1, 2, 1)',
       'add_subplot(2, 1, 1)'),
      ('add_subplot(1, 2, 2)',
       'add_subplot(2, 1, 2)')],
     ['test_plot_history_returns_a_figure_with_two_panels_side_by_side']),
    ('plotting', 'all four curves on one axes',
     [('    ax = fig.add_subplot(1, 2, 2)\n',
       '')],
     ['test_plot_history_returns_a_figure_with_two_panels_side_by_side']),
    ('plotting', 'plot_history returns (fig, axes)',
     [('    _draw(fig, history)\n    return fig\n',
       '    _draw(fig, history)\n    return fig, fig.axes\n')],
     ['test_plot_history_returns_a_figure_with_two_panels_side_by_side']),
    ('plotting', "validation drawn '-o' like training",
     [("'--<', label='Validation loss'",
       "'-o', label='Validation loss'"),
      ("'--<', label='Validation acc.'",
       "'-o', label='Validation acc.'")],
     ['test_train_lines_are_solid_with_circles_and_validation_dashed_with_triangles']),
    ('plotting', "validation dashed without markers ('--')",
     [("'--<'",
       "'--'")],
     ['test_train_lines_are_solid_with_circles_and_validation_dashed_with_triangles']),
    ('plotting', "training lines without markers ('-')",
     [("'-o'",
       "'-'")],
     ['test_train_lines_are_solid_with_circles_and_validation_dashed_with_triangles']),
    ('plotting', "label 'Train accuracy' for 'Train acc.'",
     [("label='Train acc.'",
       "label='Train accuracy'")],
     ['test_loss_is_on_the_left_and_accuracy_on_the_right', 'test_each_panel_has_a_legend_naming_its_lines']),
    ('plotting', "label 'Valid loss' for 'Validation loss'",
     [("label='Validation loss'",
       "label='Valid loss'")],
     ['test_loss_is_on_the_left_and_accuracy_on_the_right', 'test_each_line_holds_its_history_at_epochs_1_to_n']),
    ('plotting', 'names given to the legend, not the lines',
     [("ax.plot(x_arr, loss_train, '-o', label='Train loss')",
       "ax.plot(x_arr, loss_train, '-o')"),
      ("ax.plot(x_arr, loss_valid, '--<', label='Validation loss')\n    ax.legend(fontsize=15)",
       "ax.plot(x_arr, loss_valid, '--<')\n    ax.legend(['Train loss', 'Validation loss'])"),
      ("ax.plot(x_arr, acc_train, '-o', label='Train acc.')",
       "ax.plot(x_arr, acc_train, '-o')"),
      ("ax.plot(x_arr, acc_valid, '--<', label='Validation acc.')\n    ax.legend(fontsize=15)",
       "ax.plot(x_arr, acc_valid, '--<')\n    ax.legend(['Train acc.', 'Validation acc.'])")],
     ['test_loss_is_on_the_left_and_accuracy_on_the_right', 'test_each_line_holds_its_history_at_epochs_1_to_n']),
    ('plotting', "y label 'Acc'",
     [("ax.set_ylabel('Accuracy'",
       "ax.set_ylabel('Acc'")],
     ['test_axes_are_labelled_epoch_loss_and_accuracy']),
    ('plotting', 'no x label on the accuracy panel',
     [("    ax.set_xlabel('Epoch', size=15)\n    ax.set_ylabel('Accuracy', size=15)\n",
       "    ax.set_ylabel('Accuracy', size=15)\n")],
     ['test_axes_are_labelled_epoch_loss_and_accuracy']),
    ('plotting', 'a legend on the loss panel only',
     [("    ax.plot(x_arr, acc_valid, '--<', label='Validation acc.')\n    ax.legend(fontsize=15)\n",
       "    ax.plot(x_arr, acc_valid, '--<', label='Validation acc.')\n")],
     ['test_each_panel_has_a_legend_naming_its_lines']),
    ('plotting', 'one legend for the whole figure (fig.legend())',
     [('    ax.legend(fontsize=15)\n',
       ''),
      ("    ax.set_ylabel('Accuracy', size=15)\n",
       "    ax.set_ylabel('Accuracy', size=15)\n    fig.legend()\n")],
     ['test_each_panel_has_a_legend_naming_its_lines']),
    ('plotting', 'plot_history ends with plt.show()',
     [('    _draw(fig, history)\n    return fig\n',
       '    _draw(fig, history)\n    import matplotlib.pyplot as plt\n    plt.show()\n    return fig\n')],
     ['test_plot_history_never_shows_or_pauses_and_renders_with_agg']),
    ('plotting', "the book's live plot: plt.pause(0.1) after each redraw",
     [('import numpy as np\n',
       'import matplotlib.pyplot as plt\nimport numpy as np\n'),
      ('        _draw(self.figure, history)  # clears the figure and draws both panels afresh\n',
       '        _draw(self.figure, history)  # clears the figure and draws both panels afresh\n        plt.pause(0.1)\n')],
     ['test_live_plot_never_shows_or_pauses']),
    ('plotting', 'pause imported by name, and its error swallowed',
     [('import numpy as np\n',
       'from matplotlib.pyplot import pause\nimport numpy as np\n'),
      ('        _draw(self.figure, history)  # clears the figure and draws both panels afresh\n',
       '        _draw(self.figure, history)  # clears the figure and draws both panels afresh\n        try:\n            pause(0.1)\n        except Exception:\n            pass\n')],
     ['test_live_plot_never_shows_or_pauses']),
    ('plotting', 'LivePlot makes a new Figure at every update',
     [('        _draw(self.figure, history)  # clears the figure and draws both panels afresh\n',
       '        self.figure = Figure(figsize=(12, 4))\n        _draw(self.figure, history)  # clears the figure and draws both panels afresh\n')],
     ['test_live_plot_keeps_one_figure']),
    ('plotting', 'LivePlot opens a new pyplot figure at every update',
     [('import numpy as np\n',
       'import matplotlib.pyplot as plt\nimport numpy as np\n'),
      ('        _draw(self.figure, history)  # clears the figure and draws both panels afresh\n',
       '        self.figure = plt.figure(figsize=(12, 4))\n        _draw(self.figure, history)  # clears the figure and draws both panels afresh\n')],
     ['test_live_plot_keeps_one_figure']),
    ('plotting', 'LivePlot.update draws with plot_history, so .figure never changes',
     [('        _draw(self.figure, history)  # clears the figure and draws both panels afresh\n        if self.path is not None:\n            self.figure.savefig(self.path)',
       '        fig = plot_history(history)\n        if self.path is not None:\n            fig.savefig(self.path)')],
     ['test_live_plot_grows_one_point_per_epoch', 'test_live_plot_keeps_one_figure']),
    ('plotting', 'the figure never cleared: axes pile up',
     [('    fig.clear()\n',
       '')],
     ['test_live_plot_grows_one_point_per_epoch', 'test_live_plot_keeps_one_figure']),
    ('plotting', 'axes made once, lines added at every update',
     [('        _draw(self.figure, history)  # clears the figure and draws both panels afresh\n',
       "        if not self.figure.axes:\n            _draw(self.figure, history)\n        else:\n            loss_train, loss_valid, acc_train, acc_valid = ([_host(v) for v in h] for h in history)\n            x = np.arange(len(loss_train)) + 1\n            left, right = self.figure.axes\n            left.plot(x, loss_train, '-o', label='Train loss')\n            left.plot(x, loss_valid, '--<', label='Validation loss')\n            right.plot(x, acc_train, '-o', label='Train acc.')\n            right.plot(x, acc_valid, '--<', label='Validation acc.')\n")],
     ['test_live_plot_grows_one_point_per_epoch', 'test_live_plot_follows_any_history']),
    ('plotting', 'LivePlot draws the history up to the previous epoch',
     [('        _draw(self.figure, history)  # clears the figure and draws both panels afresh\n',
       '        _draw(self.figure, [h[:epoch] for h in history])\n')],
     ['test_live_plot_grows_one_point_per_epoch', 'test_live_plot_follows_any_history']),
    ('plotting', 'LivePlot never saves',
     [('        if self.path is not None:\n            self.figure.savefig(self.path)  # renders with Agg: no window, nothing blocks\n',
       '')],
     ['test_live_plot_saves_a_png_at_every_epoch']),
    ('plotting', 'LivePlot saves at the first epoch only',
     [('        if self.path is not None:',
       '        if self.path is not None and epoch == 0:')],
     ['test_live_plot_saves_a_png_at_every_epoch']),
    ('plotting', 'LivePlot saves before redrawing',
     [('        _draw(self.figure, history)  # clears the figure and draws both panels afresh\n        if self.path is not None:\n            self.figure.savefig(self.path)  # renders with Agg: no window, nothing blocks\n',
       '        if self.path is not None:\n            self.figure.savefig(self.path)  # renders with Agg: no window, nothing blocks\n        _draw(self.figure, history)  # clears the figure and draws both panels afresh\n')],
     ['test_live_plot_saves_a_png_at_every_epoch']),
    ('plotting', "LivePlot saves to 'live.png' when no path is given",
     [('        if self.path is not None:\n            self.figure.savefig(self.path)',
       "        self.figure.savefig(self.path or 'live.png')")],
     ['test_live_plot_without_a_path_writes_no_file']),
    ("data", "the errata's attribute 18 (Heavy_Makeup)",
     [("SMILING = 31", "SMILING = 18")],
     ["test_smiling_is_attribute_31", "test_get_smile_reads_attribute_31",
      "test_get_smile_returns_the_smiling_attribute", "test_load_splits_labels_are_the_smiling_attribute"]),
    ("data", "resize before the centre crop",
     [("        transforms.CenterCrop([178, 178]),\n        transforms.Resize([64, 64]),\n",
       "        transforms.Resize([64, 64]),\n        transforms.CenterCrop([178, 178]),\n")],
     ["test_transform_is_the_books_compose", "test_eval_transform_matches_the_book_exactly",
      "test_crop_happens_before_resize", "test_eval_transform_gives_a_3x64x64_float_tensor_in_0_1"]),
    ("data", "no random flip",
     [("        transforms.RandomHorizontalFlip(),\n", "")],
     ["test_transform_is_the_books_compose", "test_train_transform_flips_about_half_the_time",
      "test_train_transform_matches_the_book_under_the_same_seed"]),
    ("data", "a random crop for evaluation too",
     [("transforms.CenterCrop([178, 178])", "transforms.RandomCrop([178, 178])")],
     ["test_eval_transform_is_deterministic", "test_eval_transform_matches_the_book_exactly"]),
    ("data", "Resize(64) keeps the aspect ratio when the crop is skipped",
     [("        transforms.CenterCrop([178, 178]),\n        transforms.Resize([64, 64]),\n",
       "        transforms.Resize(64),\n")],
     ["test_eval_transform_gives_a_3x64x64_float_tensor_in_0_1", "test_crop_happens_before_resize"]),
    ("data", "torchvision's CelebA instead of the kata's",
     [("from kata.celeba import CelebA", "from torchvision.datasets import CelebA")],
     ["test_load_splits_sizes_and_first_items", "test_load_splits_labels_are_the_smiling_attribute"]),
    ("data", "a random subset instead of the first n",
     [("Subset(dataset, torch.arange(n))", "Subset(dataset, torch.randperm(len(dataset))[:n])")],
     ["test_load_splits_sizes_and_first_items"]),
    ("data", "the eval transform on the training split",
     [("split='train', target_type='attr', download=False,\n                                  transform=train_transform()",
       "split='train', target_type='attr', download=False,\n                                  transform=eval_transform()")],
     ["test_load_splits_augments_only_the_training_split"]),
    ("data", "no target_transform: labels are all 40 attributes",
     [(", target_transform=get_smile)", ")")],
     ["test_load_splits_labels_are_the_smiling_attribute", "test_load_splits_calls_celeba_as_the_book_does"]),
    ("data", "download=True",
     [("split='valid', target_type='attr', download=False", "split='valid', target_type='attr', download=True")],
     ["test_load_splits_calls_celeba_as_the_book_does"]),
    ("data", "no error when asked for too many images",
     [("    if n > len(dataset):", "    if False:")],
     ["test_load_splits_refuses_more_images_than_a_split_has"]),
    ("data", "the validation loader shuffles",
     [("DataLoader(valid, batch_size, shuffle=False)", "DataLoader(valid, batch_size, shuffle=True)")],
     ["test_only_the_training_loader_shuffles"]),
    ("data", "the training loader does not shuffle",
     [("DataLoader(train, batch_size, shuffle=True)", "DataLoader(train, batch_size)")],
     ["test_only_the_training_loader_shuffles"]),
    ("data", "the last partial batch dropped",
     [("DataLoader(train, batch_size, shuffle=True)", "DataLoader(train, batch_size, shuffle=True, drop_last=True)")],
     ["test_make_loaders_batches_every_image_once"]),
    ("data", "batch size 64 by default",
     [("batch_size=32", "batch_size=64")],
     ["test_make_loaders_default_batch_size_is_32"]),
]


@functools.cache
def load_checks(exercise):
    spec = importlib.util.spec_from_file_location(f"_kata_checks_{exercise}", CHECKS_DIR / f"test_{exercise}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def mutant_target(tmp_path, exercise, edits):
    source = (PROJECT_ROOT / "solutions" / f"{exercise}.py").read_text()
    for old, new in edits:
        assert old in source, f"the mutant's text {old!r} is no longer in solutions/{exercise}.py"
        source = source.replace(old, new)
    folder = tmp_path / "mutant"
    folder.mkdir()
    (folder / f"{exercise}.py").write_text(source)
    return Target(folder, "mutant")


@pytest.mark.parametrize(
    "exercise, mistake, edits, failing",
    [pytest.param(*m, id=f"{m[0]}: {m[1]}") for m in MUTANTS])
def test_known_wrong_implementation_fails_its_checks(exercise, mistake, edits, failing, tmp_path, request):
    checks = load_checks(exercise)
    target = mutant_target(tmp_path, exercise, edits)
    target.load(exercise)  # the mistake is in the code's behaviour, not a module that won't import
    passed = []
    for name in failing:
        check = getattr(checks, name)
        fixtures = {}
        for param in inspect.signature(check).parameters:
            if param == exercise:
                fixtures[param] = target.module(exercise)
            elif param in ("celeba_root", "monkeypatch", "tmp_path"):
                fixtures[param] = request.getfixturevalue(param)
        if not any(fails(check, {**fixtures, **params}) for params in parametrizations(check)):
            passed.append(name)
    assert not passed, f"{exercise} with '{mistake}' passed {passed}, which should catch it"


def parametrizations(check):
    """The keyword sets a check's @pytest.mark.parametrize gives it ([{}] if none)."""
    sets = [{}]
    for mark in getattr(check, "pytestmark", []):
        if mark.name == "parametrize":
            names = [n.strip() for n in mark.args[0].split(",")] if isinstance(mark.args[0], str) else mark.args[0]
            values = [v if len(names) > 1 else (v,) for v in mark.args[1]]
            sets = [{**s, **dict(zip(names, v))} for s in sets for v in values]
    return sets


def fails(check, kwargs) -> bool:
    try:
        check(**kwargs)
    except Exception:  # a failed assertion, or a crash: it fails
        return True
    except BaseException as exc:  # pytest.fail raises an OutcomeException
        if type(exc).__name__ == "Failed":
            return True
        raise
    return False

"""Reference solution: a checkpoint saved on any device, opened on any other, training resumed."""

import torch


def _as_floats(entries):
    return [entry.item() if isinstance(entry, torch.Tensor) else float(entry) for entry in entries]


def save_checkpoint(path, model, optimizer, epoch, history):
    torch.save({
        'epoch': int(epoch),
        'model_state_dict': model.state_dict(),
        'optimizer_state_dict': optimizer.state_dict(),
        'history': [_as_floats(entries) for entries in history],
    }, path)


def _model_device(model):
    for tensor in model.parameters():
        return tensor.device
    return torch.device('cpu')


def load_checkpoint(path, model, optimizer=None, device=None):
    if device is None:
        device = _model_device(model)
    else:
        model.to(device)
    checkpoint = torch.load(path, map_location=device, weights_only=True)
    model.load_state_dict(checkpoint['model_state_dict'])
    if optimizer is not None:
        optimizer.load_state_dict(checkpoint['optimizer_state_dict'])
    return checkpoint['epoch'], tuple(list(entries) for entries in checkpoint['history'])

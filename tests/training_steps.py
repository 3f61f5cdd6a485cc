"""The training step of a PyTorch program, as the compile tests capture it."""
from __future__ import annotations

import minigrad.nn.functional as F


def training_step(model, optimizer, loss_fn=F.mse_loss):
    """step(x, y): zero the gradients, compute loss_fn(model(x), y), backward, update;
    returns the loss."""
    def step(x, y):
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        return loss

    return step

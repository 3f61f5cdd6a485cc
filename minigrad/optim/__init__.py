"""minigrad.optim: optimizers and learning-rate schedules (PyTorch's torch.optim)."""
from minigrad.optim import lr_scheduler
from minigrad.optim.adam import Adam, AdamW
from minigrad.optim.optimizer import Optimizer
from minigrad.optim.sgd import SGD

__all__ = ["SGD", "Adam", "AdamW", "Optimizer", "lr_scheduler"]

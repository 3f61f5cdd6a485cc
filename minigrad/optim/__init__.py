"""minigrad.optim: optimizers and learning-rate schedules (PyTorch's torch.optim)."""
from minigrad.optim import lr_scheduler
from minigrad.optim.adadelta import Adadelta
from minigrad.optim.adagrad import Adagrad
from minigrad.optim.adam import Adam, AdamW
from minigrad.optim.adamax import Adamax
from minigrad.optim.nadam import NAdam
from minigrad.optim.optimizer import Optimizer
from minigrad.optim.radam import RAdam
from minigrad.optim.rmsprop import RMSprop
from minigrad.optim.sgd import SGD

__all__ = ["SGD", "Adadelta", "Adagrad", "Adam", "AdamW", "Adamax", "NAdam", "Optimizer",
           "RAdam", "RMSprop", "lr_scheduler"]

"""minigrad.nn.utils (PyTorch's torch.nn.utils): gradient clipping (clip_grad.py), all
parameters as one vector and back (convert_parameters.py), and the packed sequences of the
recurrent modules (rnn.py, as `nn.utils.rnn`)."""
from minigrad.nn.utils import rnn
from minigrad.nn.utils.clip_grad import clip_grad_norm_, clip_grad_value_, zero_grads
from minigrad.nn.utils.convert_parameters import parameters_to_vector, vector_to_parameters

__all__ = ["clip_grad_norm_", "clip_grad_value_", "parameters_to_vector", "rnn",
           "vector_to_parameters", "zero_grads"]

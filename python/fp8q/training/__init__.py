"""FP8 and MXFP8 training whose GEMMs compute what the chip computes (docs/training.md).

``convert_to_float8_training(model, recipe=recipe("mxfp8_trn3"))`` swaps a model's ``nn.Linear``
layers for ``Float8Linear``, as torchao's function of that name does; each of the three GEMMs of
a layer runs through the recipe's device model, bit for bit.

Example:
    >>> import torch
    >>> from fp8q.training import convert_to_float8_training, recipe
    >>> model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 8))
    >>> model = convert_to_float8_training(model, recipe=recipe("delayed", history_length=16))
    >>> type(model[0]).__name__, model[0].fp8_history_x.shape
    ('Float8Linear', torch.Size([16]))
"""

from __future__ import annotations

from .linear import Float8Linear, convert_to_float8_training, strip_fp8_state
from .recipes import RECIPES, Cast, Recipe, recipe

__all__ = ["Cast", "Float8Linear", "RECIPES", "Recipe", "convert_to_float8_training", "recipe", "strip_fp8_state"]

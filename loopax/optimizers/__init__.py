"""Public optimizers API (Keras names): `loopax.optimizers.Adam`, `get`, `schedules`."""

from loopax.src.optimizers import (ALL_OPTIMIZERS, SGD, Adafactor, Adagrad, Adam, Adamax,
                                   AdamW, Lion, Nadam, Optax, Optimizer, RMSprop,
                                   deserialize, get, serialize)
from loopax.optimizers import schedules

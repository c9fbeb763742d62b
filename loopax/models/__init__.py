"""Models: `Model`, `Sequential`, `Functional`, and loading/cloning them."""

from loopax.src.models.cloning import clone_model, model_from_config, model_from_json
from loopax.src.models.functional import Functional
from loopax.src.models.model import Model
from loopax.src.models.sequential import Sequential
from loopax.src.saving.saving_api import load_model, save_model

"""Global settings (Keras names): `floatx`, `set_floatx`, `epsilon`, `set_epsilon`,
`backend`, `set_backend`, `image_data_format`, `set_image_data_format`, `dtype_policy`,
`set_dtype_policy`; the debugging caps on fit (`max_epochs`, `max_steps_per_epoch` and
their setters); the flash-attention, traceback-filtering and interactive-logging switches;
and the persistent compilation cache (`enable_compilation_cache`,
`disable_compilation_cache`, `clear_compilation_cache`, `compilation_cache_dir`)."""

from loopax.src.compilation_cache import (
    clear_compilation_cache,
    compilation_cache_dir,
    disable_compilation_cache,
    enable_compilation_cache,
)
from loopax.src.config import (
    backend,
    disable_flash_attention,
    disable_traceback_filtering,
    enable_flash_attention,
    enable_traceback_filtering,
    enable_unsafe_deserialization,
    epsilon,
    floatx,
    image_data_format,
    is_flash_attention_enabled,
    is_nnx_enabled,
    is_traceback_filtering_enabled,
    max_epochs,
    max_steps_per_epoch,
    set_backend,
    set_epsilon,
    set_floatx,
    set_image_data_format,
    set_max_epochs,
    set_max_steps_per_epoch,
)
from loopax.src.mixed_precision import dtype_policy, set_dtype_policy
from loopax.src.utils.io_utils import (
    disable_interactive_logging,
    enable_interactive_logging,
    is_interactive_logging_enabled,
)

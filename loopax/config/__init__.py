"""Global settings (Keras names): `floatx`, `set_floatx`, `epsilon`, `backend`,
`image_data_format`, `set_image_data_format`, `dtype_policy`, `set_dtype_policy`; and the
persistent compilation cache (`enable_compilation_cache`, `disable_compilation_cache`,
`clear_compilation_cache`, `compilation_cache_dir`)."""

from loopax.src.compilation_cache import (
    clear_compilation_cache,
    compilation_cache_dir,
    disable_compilation_cache,
    enable_compilation_cache,
)
from loopax.src.config import (
    backend,
    epsilon,
    floatx,
    image_data_format,
    set_floatx,
    set_image_data_format,
)
from loopax.src.mixed_precision import dtype_policy, set_dtype_policy

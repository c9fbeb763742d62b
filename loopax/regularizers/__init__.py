"""Weight regularizers: `L1`, `L2`, `L1L2`, `OrthogonalRegularizer`, `get("l2")`."""

from loopax.src.regularizers import (
                                     L1,
                                     L1L2,
                                     L2,
                                     OrthogonalRegularizer,
                                     Regularizer,
                                     deserialize,
                                     get,
                                     l1,
                                     l1_l2,
                                     l2,
                                     orthogonal_regularizer,
                                     serialize,
)

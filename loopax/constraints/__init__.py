"""Weight constraints: `MaxNorm`, `NonNeg`, `UnitNorm`, `MinMaxNorm`, `get("non_neg")`."""

from loopax.src.constraints import (
                                    Constraint,
                                    MaxNorm,
                                    MinMaxNorm,
                                    NonNeg,
                                    UnitNorm,
                                    deserialize,
                                    get,
                                    max_norm,
                                    min_max_norm,
                                    non_neg,
                                    serialize,
                                    unit_norm,
)

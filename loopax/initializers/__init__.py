"""Weight initializers (Keras names): `GlorotUniform()`, `get("he_normal")`, ..."""

from loopax.src.initializers import (Constant, GlorotNormal, GlorotUniform, HeNormal, HeUniform,
                                     Identity, IdentityInitializer, Initializer, LecunNormal,
                                     LecunUniform, Ones, Orthogonal, RandomNormal, RandomUniform,
                                     TruncatedNormal, VarianceScaling, Zeros, compute_fans,
                                     constant, deserialize, get, glorot_normal, glorot_uniform,
                                     he_normal, he_uniform, identity, lecun_normal,
                                     lecun_uniform, ones, orthogonal, random_normal,
                                     random_uniform, serialize, truncated_normal,
                                     variance_scaling, zeros)

"""scikit-learn estimators around loopax models (Keras names): `SKLearnClassifier`,
`SKLearnRegressor`, `SKLearnTransformer`. Needs scikit-learn (`pip install
'loopax[sklearn]'`)."""

from loopax.src.wrappers import SKLearnClassifier, SKLearnRegressor, SKLearnTransformer

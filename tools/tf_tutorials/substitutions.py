"""Every change the harness makes to a notebook's text, each with its reason.

IMPORTS apply to the loopax run only: they are the one change a new user
makes (TensorFlow's run keeps the original imports). GENERIC and PER_NOTEBOOK
apply to both runs, so TensorFlow 2.21 runs exactly the text loopax runs:
they replace downloads by fakes.py (same shapes and dtypes, fewer rows) and
shrink epochs so that all notebooks run in minutes. A substitution that no
longer matches its notebook is reported (the notebooks change upstream).
Each entry: (regex, replacement, reason); regexes are multiline.
"""

IMPORTS = [
    (r"^(\s*)import tensorflow as tf\b", r"\1import loopax.tf as tf",
     "the one line the user changes"),
    (r"^(\s*)from tensorflow import keras\b", r"\1from loopax.tf import keras",
     "tf.keras is loopax"),
    (r"^(\s*)from tensorflow\.keras((?:\.\w+)*) import", r"\1from loopax.tf.keras\2 import",
     "tf.keras submodules"),
    (r"^(\s*)import keras\s*$", r"\1import loopax as keras",
     "Keras 3 is loopax"),
    (r"^(\s*)from keras((?:\.\w+)*) import", r"\1from loopax\2 import",
     "Keras 3 submodules"),
]

GENERIC = [
    (r"(?:[\w.]*\.)?\b(mnist|fashion_mnist|cifar10)\.load_data\(\)", r"_tt.load_data('\1')",
     "download: same shapes/dtypes, 512 train + 128 test rows"),
    (r"(?:tf\.)?keras\.utils\.get_file\(", "_tt.get_file(",
     "download: fakes.get_file builds the file (images, csv, npz, text) locally"),
    (r"pd\.read_csv\((['\"]https?://[^'\"]+['\"])", r"pd.read_csv(_tt.get_file(origin=\1)",
     "download of a CSV read by pandas"),
    (r"\bepochs\s*=\s*\d+", "epochs=1", "run time: one epoch"),
    (r"\bEPOCHS\s*=\s*\d+", "EPOCHS = 1", "run time: one epoch"),
]

PER_NOTEBOOK = {
    "tutorials/keras/regression": [
        (r"pd\.read_csv\(url,", "pd.read_csv(_tt.get_file(origin=url),",
         "download of auto-mpg.data (398 synthetic rows, '?' in Horsepower)"),
    ],
    "tutorials/structured_data/imbalanced_data": [
        (r"epochs=10\*EPOCHS", "epochs=EPOCHS", "run time (the resampled fit)"),
    ],
}

# Display-only cells and shell lines are dropped by the converter (run.py):
# lines starting with `!` (pip installs) or `%` (line magics such as
# %matplotlib, %load_ext, %tensorboard, %timeit), and `%%` cell magics other
# than %%writefile (a statement writing the file) and %%time/%%timeit/%%capture
# (their body, run once).


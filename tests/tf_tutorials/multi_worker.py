"""One worker of test_tut_distribute_custom_training.py's two-process job:
TF_CONFIG names the two workers (localhost ports), MultiWorkerMirroredStrategy
joins them through jax.distributed, and the custom-training tutorial runs with
each worker feeding its half of every global batch. Writes the numbers as JSON.

    python multi_worker.py INDEX PORT OUT.json
"""

import json
import os
import sys
from pathlib import Path

index, port, out_path = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
os.environ["TF_CONFIG"] = json.dumps({
    "cluster": {"worker": [f"localhost:{port}", f"localhost:{port + 1}"]},
    "task": {"type": "worker", "index": index}})

import loopax.tf as tf  # noqa: E402

strategy = tf.distribute.MultiWorkerMirroredStrategy()   # joins the job first

import jax  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
import distribute_tutorials  # noqa: E402

out = distribute_tutorials.main(tf, shuffle=False, strategy=strategy)
out["process_count"] = jax.process_count()
with open(out_path, "w") as f:
    json.dump(out, f)

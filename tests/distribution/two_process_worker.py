"""One of the two processes of test_multi_process.py: joins the job through
`loopax.distribution.initialize`, trains a data-parallel model on its own half of
the data (2 CPU devices per process, 4 in all) and writes what it saw as JSON."""

import json
import sys

from loopax import distribution as dist

process_id, port, out_path = int(sys.argv[1]), sys.argv[2], sys.argv[3]
# `import loopax` must not have started the backend: initialize comes first.
dist.initialize(job_addresses=f"localhost:{port}", num_processes=2, process_id=process_id)

import jax  # noqa: E402
import numpy as np  # noqa: E402
from two_process_data import make_data, make_model  # noqa: E402

x, y = make_data()
data_parallel = dist.DataParallel()
dist.set_distribution(data_parallel)
model = make_model()
own_x, own_y = data_parallel.distribute_dataset((x, y))
history = model.fit(own_x, own_y, batch_size=16, epochs=2, verbose=0, shuffle=False).history
evaluation = model.evaluate(own_x, own_y, batch_size=16, verbose=0, return_dict=True)
prediction = model.predict(own_x, batch_size=16, verbose=0)
with open(out_path, "w") as f:
    json.dump({
        "process_count": jax.process_count(), "device_count": jax.device_count(),
        "own_rows": len(own_x), "history": history, "evaluate": evaluation,
        "weights": [np.asarray(w).tolist() for w in model.get_weights()],
        "prediction": prediction.tolist(),
        "kernel_devices": len(model.get_layer("hidden").kernel.value.sharding.device_set),
    }, f)

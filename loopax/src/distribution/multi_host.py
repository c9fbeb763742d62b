"""Several processes (hosts) as one job: `initialize` over `jax.distributed`."""

from __future__ import annotations

import os

import jax

from loopax.src.api_export import export


@export("loopax.distribution.initialize")
def initialize(job_addresses=None, num_processes=None, process_id=None,
               local_device_ids=None):
    """Joins this process to a multi-process job (call it first, in every process).

    Args:
        job_addresses: "host:port" of process 0 (the coordinator), or Keras's
            comma-separated list of every process's address (the first is used).
            Default: `KERAS_DISTRIBUTION_JOB_ADDRESSES`, else JAX's detection
            (TPU pods, SLURM).
        num_processes: processes in the job (`KERAS_DISTRIBUTION_NUM_PROCESSES`).
        process_id: this process's index, 0 .. num_processes-1
            (`KERAS_DISTRIBUTION_PROCESS_ID`).
        local_device_ids: the local devices this process uses (default all).

    On CPU the processes talk through JAX's gloo collectives (selected here).
    """
    env = os.environ
    if job_addresses is None:
        job_addresses = env.get("KERAS_DISTRIBUTION_JOB_ADDRESSES")
    if num_processes is None and "KERAS_DISTRIBUTION_NUM_PROCESSES" in env:
        num_processes = int(env["KERAS_DISTRIBUTION_NUM_PROCESSES"])
    if process_id is None and "KERAS_DISTRIBUTION_PROCESS_ID" in env:
        process_id = int(env["KERAS_DISTRIBUTION_PROCESS_ID"])
    coordinator = job_addresses.split(",")[0].strip() if job_addresses else None
    if num_processes is not None and process_id is not None and not (
            0 <= int(process_id) < int(num_processes)):
        raise ValueError(f"initialize: process_id={process_id} must be in "
                         f"[0, num_processes={num_processes}).")
    try:
        jax.config.update("jax_cpu_collectives_implementation", "gloo")
    except Exception:  # a JAX without the option: its own default
        pass
    jax.distributed.initialize(coordinator_address=coordinator, num_processes=num_processes,
                               process_id=process_id, local_device_ids=local_device_ids)


def num_processes() -> int:
    return jax.process_count()


def process_id() -> int:
    return jax.process_index()

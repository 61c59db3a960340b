"""Tensor-parallel runs on ``torch.distributed``: N processes, one per rank, started by ``mha verify --tp N``.

- ``group``: a rank's place in the run from the launcher's environment (RANK, WORLD_SIZE, LOCAL_RANK,
  MASTER_ADDR, MASTER_PORT, as torchrun sets them) and the process group (gloo on CPU, NCCL on CUDA),
  with a timeout on its set-up and on every collective.
- ``launch``: the parent side: spawn N worker processes, watch them, and end the whole run with one
  clear line when a rank fails or hangs, leaving no process behind.
- ``worker``: the child side (``python -m mha_cli.parallel.worker``, also startable by
  ``torchrun --nproc-per-node N -m mha_cli.parallel.worker SOURCE``).
- ``tp_verify`` / ``report``: what each rank builds, measures and checks, and the gathered report.

Only ``mha verify`` imports this package; the worker imports torch, the launcher does not.
"""

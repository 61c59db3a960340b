"""Tensor-parallel runs on ``torch.distributed``: N processes, one per rank, started by ``mha verify --tp N``.

- ``plan``: the job, planned once before any process starts (single-device verify's plan at tp N).
- ``run``: the parent side: write the jobs, run the ranks, read rank 0's reports.
- ``launch``: spawn N worker processes and watch them; a rank that fails or hangs ends the whole run
  with one clear line, every rank killed.
- ``group``: a rank's place from the launcher's environment (RANK, WORLD_SIZE, LOCAL_RANK,
  MASTER_ADDR, MASTER_PORT, as torchrun sets them) and the process group (gloo on CPU, NCCL on
  CUDA), with a timeout on its set-up and on every collective.
- ``worker``: the child side (``python -m mha_cli.parallel.worker``, also startable by
  ``torchrun --nproc-per-node N -m mha_cli.cli.torchrun SOURCE``, which renders rank 0's reports).
- ``rank_run``: what each rank builds, measures and checks; ``report``: the job and the report models.
- ``faults``: a fault a test can inject into one rank (``MHA_TP_FAULT``).

Only ``mha verify`` imports this package.
"""

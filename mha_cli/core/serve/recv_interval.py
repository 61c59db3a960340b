"""SGLang's ``--scheduler-recv-interval N``: its scheduler takes new requests off its socket only every N decode steps.

Read in SGLang's wheels from PyPI (``WHEELS_READ``). ``SchedulerRecvSkipper`` (``managers/scheduler_recv_skipper.py``,
from 0.5.16 ``managers/scheduler_components/recv_skipper.py``) exists when the interval is above 1. At the top of
each turn of the event loop, ``recv_requests`` asks it ``handle(last_batch)``: it adds the weight of the batch the loop
ran last to a counter, and only when the counter reaches N does it reset it to 0 and let the turn receive; otherwise
the turn takes no request. The weights (``environ.py``, ``SGLANG_SCHEDULER_RECV_SKIPPER_WEIGHT_*``; up to 0.5.2
module constants, the same): a DECODE or TARGET_VERIFY batch (a speculative step) 1, no batch (an idle turn) 1, any
other batch (EXTEND, MIXED: a prompt's step) 1,000. So while requests only decode, one that reaches the server waits
for the next N-th decode step; after a prompt's step the next turn receives; an idle loop, which spins without waiting
on the device, receives within N turns of no work (modelled as at once).

0.5.1-0.5.15 assert the skipper off under DP attention (``assert not server_args.enable_dp_attention``); 0.5.16 and
later sum a mode all ranks agree on there, which mha does not model: the pair is refused (``DP_ATTENTION_REFUSAL``).
Under pipeline parallelism SGLang's loop (``scheduler_pp_mixin.py``) asks the same skipper once per micro-batch turn,
weighing that micro-batch's previous batch; the pipelined loop (``core.serve.pipelined``) counts each batch it sends
by its own kind and not the turns that send none (an approximation). Pure Python.
"""

WHEELS_READ = (
    "0.4.10, 0.4.10.post1 and 0.4.10.post2 (no flag), 0.5.0rc0, 0.5.0rc2, 0.5.1-0.5.4, 0.5.6, 0.5.10, 0.5.12-0.5.16"
    " and 0.5.23"
)
"""The SGLang wheels whose server arguments and skipper were read for this rule."""

DP_ATTENTION_REFUSAL = (
    "--scheduler-recv-interval with DP attention is not priced (SGLang 0.5.1-0.5.15 refuse the pair at start; 0.5.16"
    " on count a mode every rank agrees on): drop one of them"
)
"""The one line a deployment asking for both gets (``core.schemas.DeploymentSpec``, ``mha plan --dp``); a search
leaves DP attention out instead (``core.cost.search``)."""

DECODE_WEIGHT = 1
"""What a decode (or speculative verify) step adds to the counter (``SGLANG_SCHEDULER_RECV_SKIPPER_WEIGHT_DECODE``)."""
PROMPT_WEIGHT = 1000
"""What any other step adds, a prompt's (``SGLANG_SCHEDULER_RECV_SKIPPER_WEIGHT_DEFAULT``): the next turn receives."""


class RecvSkipper:
    """When the engine's next turn takes the requests that reached it (see the module docstring)."""

    def __init__(self, interval: int) -> None:
        self.interval = interval
        """``--scheduler-recv-interval``; 1 (SGLang's default, every other engine): every turn receives."""
        self.counter = 0
        self.due = True
        """Whether the next turn receives."""

    def step(self, *, prompt: bool) -> None:
        """One engine step has run (``prompt``: it computed prompt tokens); the next turn's ``handle``."""
        if self.interval <= 1:
            return
        self.counter += PROMPT_WEIGHT if prompt else DECODE_WEIGHT
        self.due = self.counter >= self.interval
        if self.due:
            self.counter = 0

    def receives(self, *, idle: bool) -> bool:
        """Whether this turn takes the requests waiting on the socket; ``idle``: nothing running or queued, so the
        loop spins through its N empty turns at once."""
        if idle and not self.due:
            self.counter, self.due = 0, True
        return self.due

"""ERNIE (1.0-3.0) run as a causal LM (``is_decoder``): BERT's architecture under ``ernie.``; its task-type
embeddings (``use_task_id``) are refused, not built."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mha_cli.core.errors import BadInputError
from mha_cli.core.families import ANY_VALUE
from mha_cli.core.families.models.bert import bert_family

if TYPE_CHECKING:
    from mha_cli.core.config_reader import ConfigReader


def _refuse_task_types(r: ConfigReader, fields: dict[str, Any]) -> None:
    if r.get("use_task_id"):
        raise BadInputError(
            f"{r.origin}: use_task_id: ERNIE's task-type embeddings (task_type_vocab_size rows, row 0 added to every"
            " token) are not built, so it is refused"
        )


FAMILY = bert_family(("ernie",), "ErnieConfig (transformers 5.24)", "ernie", read_more=_refuse_task_types)._replace(
    left_unread={"task_type_vocab_size": ANY_VALUE}
)  # its table exists with use_task_id only (refused)

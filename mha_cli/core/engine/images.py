"""An engine named by the container image it runs in: ``--engine vllm/vllm-openai:v0.11.0`` is ``vllm@0.11.0``.

Users deploy from the engines' published images and paste the image they run. Each repository below is one engine's
official image; its tag carries the release, with a build suffix after ``-`` (``lmsysorg/sglang:v0.5.6-cu129``,
``v0.5.6.post1-rocm700-mi35x``) or, in AMD's ROCm image of vLLM, between ``_vllm_`` and ``_``
(``rocm/vllm:rocm7.0.0_vllm_0.10.2_20251006``). ``latest`` (or no tag) is the engine alone, the latest modelled, except AMD's
``rocm/vllm``, whose builds trail vLLM's releases: its ``latest`` is refused as a tag that names no release
(``nightly``, a commit) is, in one line: what it runs cannot be dated. Pure Python.
"""

from __future__ import annotations

import re

from mha_cli.core.errors import BadInputError

IMAGE_REPOSITORIES: dict[str, str] = {
    "vllm/vllm-openai": "vllm",  # hub.docker.com/r/vllm/vllm-openai
    "rocm/vllm": "vllm",  # hub.docker.com/r/rocm/vllm, AMD's build of vLLM
    "lmsysorg/sglang": "sglang",  # hub.docker.com/r/lmsysorg/sglang
    "nvcr.io/nvidia/tensorrt-llm/release": "trtllm",  # NGC's TensorRT-LLM release container
}
"""Each engine's official image repository (without ``docker.io/``) -> the engine it runs."""

_TAG_RELEASE = re.compile(r"v?(\d+\.\d+(?:\.\d+)?(?:\.post\d+|rc\d+)?)(?:-[\w.-]*)?", re.IGNORECASE)
_ROCM_VLLM_RELEASE = re.compile(r".*_vllm_v?(\d+\.\d+(?:\.\d+)?(?:\.post\d+|rc\d+)?)(?:_.*)?", re.IGNORECASE)


def engine_of_image(text: str) -> str:
    """``text`` as ``--engine`` reads it: an image of ``IMAGE_REPOSITORIES`` as ``ENGINE@RELEASE`` (its engine alone
    for ``latest`` or no tag); any other text unchanged."""
    reference = text.strip().lower().removeprefix("docker.io/")
    repository, colon, tag = reference.rpartition(":") if ":" in reference else (reference, "", "")
    engine = IMAGE_REPOSITORIES.get(repository)
    if engine is None:
        return text
    if (not colon or tag in ("", "latest")) and repository == "rocm/vllm":  # trial 402 #6: AMD's build lags vLLM's
        raise BadInputError(
            f"image {text.strip()!r}: AMD's rocm/vllm 'latest' follows vLLM's releases weeks behind, so it names no"
            " release to price; pin a dated tag, which states its release (rocm/vllm:rocm7.0.0_vllm_0.10.2_20251006"
            " runs 0.10.2), or give --engine vllm@0.10.2"
        )
    if not colon or tag in ("", "latest"):
        return engine
    match = (_ROCM_VLLM_RELEASE if repository == "rocm/vllm" else _TAG_RELEASE).fullmatch(tag)
    if match is None:
        from mha_cli.core.engine.releases_read import NEWEST_READ

        raise BadInputError(
            f"image {text.strip()!r}: its tag {tag!r} names no {engine} release; give the release it runs, as"
            f" --engine {engine}@{NEWEST_READ[engine].release}"  # type: ignore[index]
        )
    return f"{engine}@{match.group(1)}"

"""The slots SGLang's token-to-KV pool holds beyond its tokens, by release.

``mem_cache/memory_pool.py`` ``MHATokenToKVPool._create_buffers`` sizes each layer's K and V buffers ``self.size +
self.page_size`` from 0.4.4 (read in the 0.4.4 wheel, and in every later one read, 0.4.5-0.5.23): a page of padding,
whose first slot takes the padded tokens' dummy writes. 0.4.0-0.4.3.post4 have no page size and pad ``self.size + 1``.
The padding is allocated beside the pool the memory profile sized, so it moves the "K size" line, not the tokens.
Pure Python.
"""

from __future__ import annotations

from mha_cli.core.engine.release_numbers import release_key

PAGE_PADDING_FROM = release_key("0.4.4")
"""The first SGLang release that pads its pool by a page (``ServerArgs.page_size`` is new there too)."""


def padding_slots(page_size: int, release: str | None) -> int:
    """Slots beyond the tokens in SGLang ``release``'s pool of pages of ``page_size`` tokens (None: the latest)."""
    if release is not None and release_key(release) < PAGE_PADDING_FROM:
        return 1
    return page_size

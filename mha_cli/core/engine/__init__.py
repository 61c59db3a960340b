"""How a serving engine turns device memory into KV-cache tokens and concurrent requests.

``settings`` resolves the engine's knobs (utilisation, step tokens and sequences, block size) to the engine's
own defaults; ``activation`` estimates vLLM's profiling peak; ``pages`` sizes vLLM's block pool and its hybrid
allocator's groups; ``plan`` writes the budget line by line for vLLM, SGLang and TensorRT-LLM. Pure Python.
"""

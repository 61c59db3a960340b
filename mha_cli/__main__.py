"""``python -m mha_cli``: the same as the ``mha`` console script."""

from mha_cli.cli.app import main

if __name__ == "__main__":
    main()

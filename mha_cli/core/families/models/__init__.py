"""One module per decoder family, each defining ``FAMILY`` (``core.families.Family``); named as transformers'
``models/<family>`` folder. ``core.families.family`` imports the one a config names."""

"""The command-line surface: ``wayline demo``, ``wayline runs ...``."""

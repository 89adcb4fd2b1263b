"""What ``wayline demo``, ``wayline crashtest`` and ``wayline serve --demo`` run: the demo
graphs, the local payments service that stands in for a provider (and really counts), and
the crash harness. Not a library: nothing outside the CLI and the tests imports it."""

"""Backends the contract suite runs against: every test here runs on each of them.

The fixtures live in ``store_fixtures`` (type-checked: mypy sees one ``conftest`` module
only, the suite's root one)."""

from store_fixtures import store, store_url  # noqa: F401

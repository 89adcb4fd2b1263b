"""Encryption at rest on every backend: no stored row holds a byte of plaintext, nothing
opens without the key, rotation changes new writes only, and an encrypted store refuses a
handle without keys before it reads or writes anything."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from stored_rows import stored_rows

import wayline
from wayline.client import Wayline
from wayline.control import Actor
from wayline.demo.refund_agent import build_refund_agent, claim_input
from wayline.errors import CodecError, KeysRequiredError
from wayline.store.base import Store
from wayline.store.encrypted import StaticKeys

MARKER = "PLAINTEXT-MARKER-5e1d"
K1, K2 = os.urandom(32), os.urandom(32)


@pytest.fixture(params=["sqlite-file", "postgres"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Encryption is a property of a database, so each handle is opened anew by URL."""
    if request.param == "sqlite-file":
        return f"sqlite:///{tmp_path / 'sealed.db'}"
    return str(request.getfixturevalue("pg_url"))


@pytest.fixture
def handles() -> Iterator[list[Store]]:
    opened: list[Store] = []
    yield opened
    for store in opened:
        store.close()


def refund(key: str, amount: int, customer: str) -> dict[str, Any]:
    return {"id": f"re-{key}", "note": MARKER}


def keys_of(**keys: bytes) -> StaticKeys:
    current = list(keys)[-1] if keys else "k1"
    return StaticKeys({"default": dict(keys)}, {"default": current})


def run_claim(store: Store, claim: str = "claim-9") -> None:
    app = build_refund_agent(store, refund)
    cfg = {"configurable": {"thread_id": claim}}
    big = {**claim_input(claim), "reason": f"{MARKER} {claim} " + "y" * 70_000}  # a blob too
    (question,) = app.invoke(big, cfg)["__interrupt__"]
    finance = Actor(id="fatima", roles=("finance",))
    Wayline(store).resume(
        claim, {"approved": True, "why": MARKER}, actor=finance, digest=question.digest
    )
    app.invoke(None, cfg)


def state_of(store: Store, claim: str) -> dict[str, Any]:
    app = build_refund_agent(store, refund)
    return app.get_state({"configurable": {"thread_id": claim}}).values


def test_no_stored_row_holds_plaintext(url: str, handles: list[Store]) -> None:
    store = wayline.connect(url, keys=keys_of(k1=K1))
    handles.append(store)
    run_claim(store)
    assert not [table for table, row in stored_rows(store) if MARKER.encode() in row]
    exported = json.dumps(Wayline(store).export("claim-9"))
    assert exported.count(MARKER) >= 4  # input, proposal, decision, effect result, blob


def test_nothing_opens_without_the_right_key(url: str, handles: list[Store]) -> None:
    handles.append(sealed := wayline.connect(url, keys=keys_of(k1=K1)))
    run_claim(sealed)
    handles.append(no_k1 := wayline.connect(url, keys=keys_of()))
    with pytest.raises(CodecError, match="does not have"):
        state_of(no_k1, "claim-9")
    handles.append(wrong := wayline.connect(url, keys=keys_of(k1=os.urandom(32))))
    with pytest.raises(CodecError, match="does not open"):
        state_of(wrong, "claim-9")


def test_a_keyless_handle_is_refused_and_writes_nothing(url: str, handles: list[Store]) -> None:
    handles.append(sealed := wayline.connect(url, keys=keys_of(k1=K1)))
    run_claim(sealed)
    before = stored_rows(sealed)
    with pytest.raises(KeysRequiredError, match="encrypted"):
        wayline.connect(url)
    assert stored_rows(sealed) == before
    assert state_of(sealed, "claim-9")["refund"]["note"] == MARKER


def test_rows_written_before_encryption_never_read_as_plaintext(
    url: str, handles: list[Store]
) -> None:
    handles.append(plain := wayline.connect(url))
    build_refund_agent(plain, refund).invoke(
        claim_input("plain"), {"configurable": {"thread_id": "plain"}}
    )
    handles.append(sealed := wayline.connect(url, keys=keys_of(k1=K1)))
    with pytest.raises(CodecError, match="not sealed"):
        state_of(sealed, "plain")
    with pytest.raises(KeysRequiredError):  # from now on the store is an encrypted one
        wayline.connect(url)


def test_rotation_seals_new_writes_with_the_new_key(url: str, handles: list[Store]) -> None:
    handles.append(old := wayline.connect(url, keys=keys_of(k1=K1)))
    run_claim(old)
    handles.append(both := wayline.connect(url, keys=keys_of(k1=K1, k2=K2)))
    run_claim(both, "claim-10")
    for claim in ("claim-9", "claim-10"):
        assert state_of(both, claim)["refund"]["note"] == MARKER
    handles.append(only_new := wayline.connect(url, keys=keys_of(k2=K2)))
    assert state_of(only_new, "claim-10")["refund"]["note"] == MARKER
    with pytest.raises(CodecError, match="'k1'"):
        state_of(only_new, "claim-9")


def test_connect_with_keys_seals(tmp_path: Any) -> None:
    url = f"sqlite:///{tmp_path / 'sealed.db'}"
    store = wayline.connect(url, keys=keys_of(k1=K1))
    run_claim(store)
    store.close()
    assert MARKER.encode() not in (tmp_path / "sealed.db").read_bytes()

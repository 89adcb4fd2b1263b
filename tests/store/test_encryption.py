"""Encryption at rest on every backend: no stored row holds a byte of plaintext, nothing
opens without the key, rotation changes new writes only."""

from __future__ import annotations

import json
import os
from typing import Any, cast

import pytest
from stored_rows import stored_rows

import wayline
from wayline.client import Wayline
from wayline.control import Actor
from wayline.errors import CodecError
from wayline.examples.refund_agent import build_refund_agent, claim_input
from wayline.store.base import Store
from wayline.store.encrypted import EncryptedStore, StaticKeys

MARKER = "PLAINTEXT-MARKER-5e1d"
K1, K2 = os.urandom(32), os.urandom(32)


def refund(key: str, amount: int, customer: str) -> dict[str, Any]:
    return {"id": f"re-{key}", "note": MARKER}


def sealed(inner: Store, keys: StaticKeys) -> Store:
    return cast(Store, EncryptedStore(inner, keys))


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


def test_no_stored_row_holds_plaintext(store: Store) -> None:
    keys = StaticKeys({"default": {"k1": K1}}, {"default": "k1"})
    run_claim(sealed(store, keys))
    assert not [table for table, row in stored_rows(store) if MARKER.encode() in row]
    exported = json.dumps(Wayline(sealed(store, keys)).export("claim-9"))
    assert exported.count(MARKER) >= 4  # input, proposal, decision, effect result, blob


def test_nothing_opens_without_the_right_key(store: Store) -> None:
    run_claim(sealed(store, StaticKeys({"default": {"k1": K1}}, {"default": "k1"})))
    app = build_refund_agent(sealed(store, StaticKeys({"default": {}}, {"default": "k1"})), refund)
    with pytest.raises(CodecError, match="does not have"):
        app.get_state({"configurable": {"thread_id": "claim-9"}})
    wrong = StaticKeys({"default": {"k1": os.urandom(32)}}, {"default": "k1"})
    with pytest.raises(CodecError, match="does not open"):
        build_refund_agent(sealed(store, wrong), refund).get_state(
            {"configurable": {"thread_id": "claim-9"}}
        )
    plain_cfg = {"configurable": {"thread_id": "plain"}}
    build_refund_agent(store, refund).invoke(claim_input("plain"), plain_cfg)  # unsealed
    with pytest.raises(CodecError, match="not sealed"):  # never read silently as plaintext
        build_refund_agent(sealed(store, wrong), refund).get_state(plain_cfg)


def test_rotation_seals_new_writes_with_the_new_key(store: Store) -> None:
    run_claim(sealed(store, StaticKeys({"default": {"k1": K1}}, {"default": "k1"})))
    both = StaticKeys({"default": {"k1": K1, "k2": K2}}, {"default": "k2"})
    run_claim(sealed(store, both), "claim-10")
    for claim in ("claim-9", "claim-10"):
        values = (
            build_refund_agent(sealed(store, both), refund)
            .get_state({"configurable": {"thread_id": claim}})
            .values
        )
        assert values["refund"]["note"] == MARKER
    only_new = sealed(store, StaticKeys({"default": {"k2": K2}}, {"default": "k2"}))
    assert (
        build_refund_agent(only_new, refund)
        .get_state({"configurable": {"thread_id": "claim-10"}})
        .values["refund"]["note"]
        == MARKER
    )
    with pytest.raises(CodecError, match="'k1'"):
        build_refund_agent(only_new, refund).get_state({"configurable": {"thread_id": "claim-9"}})


def test_connect_with_keys_seals(tmp_path: Any) -> None:
    keys = StaticKeys({"default": {"k1": K1}}, {"default": "k1"})
    url = f"sqlite:///{tmp_path / 'sealed.db'}"
    run_claim(wayline.connect(url, keys=keys))
    assert MARKER.encode() not in (tmp_path / "sealed.db").read_bytes()

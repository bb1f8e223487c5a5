"""The worker's lines to the judge, sealed with the request's key (evaluate/protocol_seal.py)."""

from __future__ import annotations

import hashlib
import hmac
import json

import pytest

from kernelseek_tui.evaluate.protocol_seal import KEY_FIELD, ForgedLine, Sealer, new_key, open_line


def test_a_sealed_line_opens_to_its_message_and_the_key_leaves_the_request() -> None:
    key = new_key()
    request = {"seed": 1, KEY_FIELD: key}
    sealer = Sealer.from_request(request)
    assert KEY_FIELD not in request
    message = {"type": "scenario", "result": {"name": "a\tb", "ms": 1.5}}
    line = sealer.line(message)
    assert "\n" not in line
    assert open_line(key, line.encode()) == message


@pytest.mark.parametrize(
    "tamper, why",
    [
        (lambda line: line.split("\t")[0], "without the worker's seal"),
        (lambda line: line.replace("1.5", "0.1"), "whose seal does not match"),
        (lambda line: Sealer(new_key()).line(json.loads(line.split("\t")[0])), "does not match"),
    ],
)
def test_a_line_not_sealed_by_this_key_is_refused(tamper, why: str) -> None:
    key = new_key()
    line = Sealer(key).line({"type": "scenario", "result": {"ms": 1.5}})
    with pytest.raises(ForgedLine, match=why):
        open_line(key, tamper(line).encode())


@pytest.mark.parametrize("text, why", [("[1, 2]", "not a message"), ("not json", "not JSON")])
def test_sealed_text_that_is_not_a_message_is_refused(text: str, why: str) -> None:
    key = new_key()
    seal = hmac.new(bytes.fromhex(key), text.encode(), hashlib.sha256).hexdigest()
    with pytest.raises(ForgedLine, match=why):
        open_line(key, f"{text}\t{seal}".encode())


def test_with_no_key_the_worker_writes_plain_json() -> None:
    assert Sealer(None).line({"type": "done"}) == '{"type": "done"}'

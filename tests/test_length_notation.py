"""One length notation with one meaning: ``{"range": [a, b]}`` / ``{"lengths": [...]}`` in the API,
``a..b`` / ``a,b`` in the CLI; the old forms are still read, with a note saying how."""

from __future__ import annotations

from typing import Any

import pytest

from langclass.core.automata.automaton import DFA
from langclass.core.base.errors import InputError, LimitExceeded
from langclass.models.experiments.experiment import validate_spec
from langclass.models.training.specs import length_notation_notes

AB = DFA.from_table(["a", "b"], [[1, 2], [2, 0], [2, 2]], 0, [0])  # (ab)*


def _test_lengths(value: Any) -> list[int]:
    spec = {"language": AB.to_canonical_dict(), "encodings": ["nope"], "seeds": [0],
            "overrides": {"test_lengths": value, "train_lengths": {"range": [1, 10]}, "eval_per_length": 4}}
    return validate_spec(spec)["settings"]["test_lengths"]


def test_api_forms() -> None:
    assert _test_lengths({"range": [21, 25]}) == [21, 22, 23, 24, 25]
    assert _test_lengths({"lengths": [21, 40]}) == [21, 40]  # two lengths, said explicitly
    assert _test_lengths({"lengths": [40, 21, 40]}) == [21, 40]
    assert _test_lengths({"range": [41, 50], "step": 4}) == [41, 45, 49, 50]
    # the old forms keep their meaning
    assert _test_lengths([21, 25]) == [21, 22, 23, 24, 25]
    assert _test_lengths([21, 30, 40]) == [21, 30, 40]
    assert _test_lengths({"min": 41, "max": 50, "step": 4}) == [41, 45, 49, 50]


@pytest.mark.parametrize(
    "value, field",
    [({"range": [40, 21]}, "overrides.test_lengths"), ({"range": [1, 2, 3]}, "overrides.test_lengths"),
     ({"lengths": []}, "overrides.test_lengths"), ({"range": [1, 5], "lengths": [1]}, "overrides.test_lengths"),
     ({"lengths": [-1]}, "overrides.test_lengths")],
)
def test_bad_forms_name_the_field(value: Any, field: str) -> None:
    with pytest.raises(InputError) as info:
        _test_lengths(value)
    assert (info.value.field or "").startswith(field)


def test_new_forms_are_bounded_before_expansion() -> None:
    with pytest.raises(LimitExceeded) as info:
        _test_lengths({"range": [0, 10**12]})
    assert info.value.extra["limit"] == "max_test_length"
    with pytest.raises(LimitExceeded):
        _test_lengths({"lengths": [10**12]})


def test_old_forms_carry_a_deprecation_note() -> None:
    notes = length_notation_notes({"overrides": {"test_lengths": [21, 40]}})
    assert len(notes) == 1 and "RANGE 21..40" in notes[0] and '{"range": [21, 40]}' in notes[0]
    assert '{"lengths": [21, 40]}' in notes[0]
    assert "deprecated" in length_notation_notes({"overrides": {"train_lengths": {"min": 1, "max": 9}}})[0]
    assert length_notation_notes({"overrides": {"test_lengths": {"range": [21, 40]}, "train_lengths": {"lengths": [3]}}}) == []


def test_cli_forms_mean_what_the_api_forms_mean() -> None:
    from langclass.app.cli.jobs import parse_lengths

    assert parse_lengths("41..60") == {"range": [41, 60]}
    assert parse_lengths("41..500:10") == {"range": [41, 500], "step": 10}
    assert parse_lengths("21,40") == {"lengths": [21, 40]}
    assert parse_lengths("50") == {"lengths": [50]}
    warned: list[str] = []
    assert parse_lengths("41-60", warn=warned.append) == {"range": [41, 60]}
    assert warned and "deprecated" in warned[0] and "41..60" in warned[0]
    # the CLI's two lengths and the API's two lengths are the same experiment
    assert _test_lengths(parse_lengths("21,40")) == _test_lengths({"lengths": [21, 40]}) == [21, 40]
    assert _test_lengths(parse_lengths("21..40")) == _test_lengths({"range": [21, 40]}) == list(range(21, 41))
    with pytest.raises(InputError):
        parse_lengths("21..x")


def test_job_resource_says_how_an_old_form_was_read(make_client: Any, migrated_url: str) -> None:
    client = make_client(migrated_url, worker_slots=0)
    lid = client.post("/v1/languages", json={"regex": "(ab)*", "alphabet": ["a", "b"]}).json()["id"]
    body = {"kind": "train", "encodings": ["nope"], "seeds": [0], "overrides": {"max_steps": 1}}
    old = client.post(f"/v1/languages/{lid}/experiments", json={**body, "overrides": {"max_steps": 1, "test_lengths": [41, 44]}})
    assert old.status_code == 202, old.text
    assert any("RANGE 41..44" in n for n in old.json()["notes"])
    assert any("RANGE 41..44" in n for n in client.get(f"/v1/jobs/{old.json()['id']}").json()["notes"])
    new = client.post(f"/v1/languages/{lid}/experiments", json={**body, "overrides": {"max_steps": 1, "test_lengths": {"lengths": [41, 44]}}})
    assert new.status_code == 202, new.text
    assert new.json()["notes"] == []

"""Messages of the strict JSON body decoder (langclass/app/web/body.py)."""
import pytest

from langclass.app.web.body import decode_json_strict
from langclass.app.errors import MalformedJsonError


def test_control_character_message_has_no_doubled_at():
    with pytest.raises(MalformedJsonError) as info:
        decode_json_strict('{"regex": "a\x00b"}', max_depth=32)
    msg = str(info.value)
    assert "at at" not in msg
    assert "Invalid control character at line 1 column" in msg

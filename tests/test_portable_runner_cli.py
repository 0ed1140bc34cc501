"""The standalone runner's command line (docs/models.md): words as arguments, or one a line on stdin;
without words and with a terminal (or empty) stdin it prints the usage and exits 2 instead of nothing."""

from __future__ import annotations

import io

import pytest
import torch

from langclass.models.nn.recognizer import Recognizer, RecognizerConfig
from langclass.models.portable import runner as R
from langclass.models.portable.export import save_model


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    torch.manual_seed(0)
    path = tmp_path_factory.mktemp("m")
    save_model(Recognizer(RecognizerConfig(alphabet=("a", "b"), d_model=8, n_heads=2, n_layers=1, encoding={"name": "nope"})), path)
    return str(path)


def test_words_from_stdin_equal_words_as_arguments(folder, capsys):
    assert R.main(["runner", folder, "ab", "", "abba"]) == 0
    from_args = capsys.readouterr().out
    assert R.main(["runner", folder], stdin=io.StringIO("ab\n\nabba\n")) == 0
    from_stdin = capsys.readouterr().out
    assert from_stdin == from_args and len(from_args.splitlines()) == 3 and "''\t" in from_args


@pytest.mark.parametrize("stdin", [_Tty(""), io.StringIO("")], ids=["terminal", "empty"])
def test_no_words_prints_usage(folder, capsys, stdin):
    assert R.main(["runner", folder], stdin=stdin) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "usage: python langclass_runner.py MODEL_DIR" in captured.err


def test_a_train_downloads_top_folder_names_its_models(tmp_path, capsys):
    """The top folder of a train download holds one model per ``enc-*`` folder: the runner names
    them instead of a bare 'No such file … config.json'."""
    torch.manual_seed(0)
    for label in ("enc-nope", "enc-rope"):
        save_model(Recognizer(RecognizerConfig(alphabet=("a", "b"), d_model=8, n_heads=2, n_layers=1,
                                               encoding={"name": label[4:]})), tmp_path / label)
    assert R.main(["runner", str(tmp_path), "ab"]) == 2
    err = capsys.readouterr().err
    assert "one model per folder" in err and "enc-nope, enc-rope" in err
    assert R.main(["runner", str(tmp_path / "enc-rope"), "ab"]) == 0

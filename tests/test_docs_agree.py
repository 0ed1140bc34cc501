"""The README and docs agree with the Makefile and the job kinds the API accepts."""
import re
import typing
from pathlib import Path

from langclass.app.usecases.experiments import ExperimentRequest

ROOT = Path(__file__).resolve().parents[1]


def test_readme_extras_match_makefile():
    make = re.search(r"^EXTRAS \?= (\S+)$", (ROOT / "Makefile").read_text(), re.M).group(1)
    readme = (ROOT / "README.md").read_text()
    m = re.search(r"the extras `([^`]+)`\s*\(Makefile `EXTRAS`\)", readme)
    assert m is not None and m.group(1) == make


def test_every_job_kind_is_documented():
    kinds = typing.get_args(ExperimentRequest.model_fields["kind"].annotation)
    for doc in ("README.md", "docs/jobs.md"):
        text = (ROOT / doc).read_text()
        for kind in kinds:
            assert f"`{kind}`" in text or f'"kind": "{kind}"' in text, (doc, kind)
        assert "pjrope.md" in text, doc

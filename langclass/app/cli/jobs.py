"""CLI commands of the job layer: ``langclass worker`` and ``langclass train``.

::

    langclass worker [--slots N]                        work the job queue of LANGCLASS_DATABASE_URL
    langclass train --regex '(aa)*' --alphabet ab --encoding rope_periodic --encoding nope --profile quick
    langclass train --dfa dfa.json --encoding rope_periodic --seed 0 --seed 1 --lr 1e-3 --json
    langclass train --regex '(ab)*' --alphabet ab -e nope -e rope_periodic --save result.json

``train`` runs in the foreground (no database, no service): it classifies the language to default
the encoding parameters (the period k of an LTL[P,MOD] language) and the prediction, trains with a
progress bar, and prints the per-length accuracy table, N* and the verdict. Ctrl-C stops after the
current step and prints what finished.
"""

from __future__ import annotations

import json
import signal
import sys
import threading
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from langclass.core.base.errors import InputError, LangclassError
from .common import parse_alphabet

__all__ = ["register", "worker", "train", "parse_lengths"]


def parse_lengths(text: str, *, warn: Any = None) -> dict[str, Any]:
    """Test lengths from the command line, in the API's explicit notation:

    * ``"41..100"`` → ``{"range": [41, 100]}`` (every length 41 to 100); ``"41..500:10"`` adds a step;
    * ``"41,60,100"`` or ``"50"`` → ``{"lengths": [41, 60, 100]}`` (exactly those; ``"21,40"`` is two lengths);
    * the old ``"41-100"`` is still read as the range 41..100; ``warn(message)`` (if given) is told
      it is deprecated.

    Raises:
        InputError: anything else (``field="test_lengths"``).
    """
    t = text.strip()
    try:
        if ".." in t:
            lo_text, _, rest = t.partition("..")
            hi_text, _, step_text = rest.partition(":")
            out: dict[str, Any] = {"range": [int(lo_text), int(hi_text)]}
            if step_text:
                out["step"] = int(step_text)
            return out
        if "-" in t.lstrip("-"):
            lo, hi = (int(x) for x in t.split("-", 1))
            if warn is not None:
                warn(f"--test-lengths {text!r}: 'A-B' is deprecated; write '{lo}..{hi}' (the range) or '{lo},{hi}' (two lengths)")
            return {"range": [lo, hi]}
        values = [int(x) for x in t.split(",")]
    except ValueError:
        raise InputError(
            f"test lengths {text!r}: expected A..B (a range, e.g. 41..100, optionally A..B:STEP) or a comma-separated "
            "list of lengths (e.g. 41,60,100)", field="test_lengths",
        ) from None
    return {"lengths": values}


def worker(
    slots: Annotated[Optional[int], typer.Option(min=1, help="worker processes (default LANGCLASS_WORKER_SLOTS, at least 1)")] = None,
) -> None:
    """Run jobs from the database (LANGCLASS_DATABASE_URL) until interrupted; several can run anywhere
    the database is reachable. Ctrl-C / SIGTERM put a running job back in the queue."""
    import logging

    from langclass.app.execution.executor import run_worker_loop
    from langclass.app.settings import get_settings

    settings = get_settings()
    settings.check_database_url()
    logging.basicConfig(level=settings.log_level.upper(), format="%(asctime)s %(name)s %(levelname)s %(message)s")
    n = slots or max(1, settings.worker_slots)
    stop = threading.Event()

    def handle(_sig: int, _frame: Any) -> None:
        stop.set()

    signal.signal(signal.SIGINT, handle)
    signal.signal(signal.SIGTERM, handle)
    typer.echo(f"langclass worker: {n} slot(s) on {_safe_url(settings.database_url)} (Ctrl-C to stop)", err=True)
    run_worker_loop(settings, slots=n, stop=stop)


def _safe_url(url: str) -> str:
    from sqlalchemy.engine import make_url

    return make_url(url).render_as_string(hide_password=True)


def _language(regex: str | None, alphabet: str | None, dfa: Path | None, limits: Any) -> Any:
    """The canonical DFA of ``--regex`` (with ``--alphabet``) or ``--dfa`` (a file, ``-`` for stdin),
    read and parsed by the one language parser (:mod:`langclass.core.ingest.source`)."""
    from langclass.core.ingest.source import language_source, parse_language

    text = None
    if dfa is not None:
        try:
            text = sys.stdin.read() if str(dfa) == "-" else Path(str(dfa)).read_text(encoding="utf-8")
        except OSError as exc:
            raise InputError(f"cannot read {dfa}: {exc.strerror}", field="dfa") from None
    source = language_source(regex=regex, dfa=text, alphabet=parse_alphabet(alphabet) if regex is not None and alphabet is not None else None,
                             kinds=("regex", "dfa"), spelling="cli")
    return parse_language(source, limits).dfa


def _analysis(dfa: Any, limits: Any) -> dict[str, Any]:
    """The classification record, or an empty one when the analysis is over a limit (then no defaults)."""
    try:
        from langclass.core.classification.analysis import analyze
    except ImportError:  # pragma: no cover - partial installation
        return {}
    try:
        return analyze(dfa, limits).to_dict()
    except LangclassError as err:
        typer.echo(f"warning: classification failed ({err.code}: {err.detail}); no parameter defaults or prediction", err=True)
        return {}


def train(
    regex: Annotated[Optional[str], typer.Option("--regex", "-r", help="regex over the alphabet")] = None,
    alphabet: Annotated[Optional[str], typer.Option("--alphabet", "-a", help="'ab' = {a,b}; 'x1,x2' for longer symbols; '\\,' is a comma symbol ('a,\\,' = {a, ','})")] = None,
    dfa: Annotated[Optional[Path], typer.Option("--dfa", help="DFA JSON file ('-' = standard input)")] = None,
    encoding: Annotated[list[str], typer.Option("--encoding", "-e", help="encoding name or JSON {name, params} (repeat)")] = ["rope_periodic"],  # noqa: B006
    profile: Annotated[str, typer.Option(help="quick (2-core CPU), paper-lite (2-core CPU, test lengths 41..500, attention scores × ln(keys seen); --set length_scale=none turns that off) or paper (App. E.2)")] = "quick",
    seed: Annotated[Optional[list[int]], typer.Option("--seed", help="training seed (repeat; default: the profile's)")] = None,
    lr: Annotated[Optional[list[float]], typer.Option("--lr", help="learning rate (repeat; default: the profile's)")] = None,
    max_steps: Annotated[Optional[int], typer.Option(min=1, help="training step budget per run")] = None,
    test_lengths: Annotated[Optional[str], typer.Option(help="'41..100' = every length 41 to 100 (':STEP' adds a step); '41,60,100' = exactly those")] = None,
    eval_per_length: Annotated[Optional[int], typer.Option(min=1, help="test strings per length")] = None,
    device: Annotated[Optional[str], typer.Option(help="cpu | cuda | auto")] = None,
    batched: Annotated[bool, typer.Option("--batched/--sequential", help="train runs that share a model shape together (default) "
                                          "or one after another")] = True,
    override: Annotated[Optional[list[str]], typer.Option("--set", help="profile override KEY=JSON, e.g. d_model=64 (repeat)")] = None,
    setting: Annotated[str, typer.Option("--setting", help="strict (strict mask, BOS w EOS, readout at EOS) or causal (non-strict mask, "
                                         "BOS w, readout at the last position; docs/training.md)")] = "strict",
    task: Annotated[str, typer.Option("--task", help="recognition, or state_prediction (the DFA state at every position; causal only)")] = "recognition",
    as_json: Annotated[bool, typer.Option("--json", help="print the full JSON result instead of the table")] = False,
    save: Annotated[Optional[Path], typer.Option("--save", help="a path ending in .json: write the full JSON result there; any other path: a folder "
                                                  "that receives result.json and the best run of every encoding as a portable model (one "
                                                  "folder per encoding, langclass_runner.py at the top; docs/models.md)")] = None,
    save_all_runs: Annotated[bool, typer.Option("--save-all-runs", help="with --save FOLDER: every run's model, not only the best per encoding")] = False,
) -> None:
    """Train recognizers for one language in the foreground and print accuracy by length, N* and the verdict."""
    from langclass.app.usecases.experiments import ExperimentRequest, build_train_spec, validate_train_spec
    from langclass.app.settings import get_settings

    settings = get_settings()
    limits = settings.limits()
    try:
        lang = _language(regex, alphabet, dfa, limits)
        encs: list[Any] = []
        for i, e in enumerate(encoding):
            if e.lstrip().startswith("{"):
                try:
                    encs.append(json.loads(e))
                except json.JSONDecodeError as exc:
                    raise InputError(f"--encoding {e!r} is not valid JSON: {exc.msg}", field=f"encodings[{i}]") from None
            else:
                encs.append(e)
        overrides: dict[str, Any] = {}
        for item in override or []:
            key, sep, value = item.partition("=")
            if not sep:
                raise InputError(f"--set {item!r}: expected KEY=VALUE", field="overrides")
            try:
                overrides[key.strip()] = json.loads(value)
            except json.JSONDecodeError:
                overrides[key.strip()] = value
        if max_steps is not None:
            overrides["max_steps"] = max_steps
        if test_lengths is not None:
            overrides["test_lengths"] = parse_lengths(test_lengths, warn=lambda m: typer.echo(f"note: {m}", err=True))
        if eval_per_length is not None:
            overrides["eval_per_length"] = eval_per_length
        if device is not None:
            overrides["device"] = device
        from pydantic import ValidationError

        try:
            body = ExperimentRequest(kind="train", encodings=encs, profile=profile, seeds=seed or None,
                                     learning_rates=lr or None, overrides=overrides or None, batched=None if batched else False,
                                     setting=setting, task=task)
        except ValidationError as exc:
            from langclass.models.training.specs import field_path

            err = exc.errors(include_url=False, include_input=False)[0]
            where = field_path(err["loc"])
            raise InputError(f"{where}: {err['msg']}", field=where) from None
        from langclass.core.automata.export import dfa_to_json

        spec = build_train_spec(body, {"dfa": dfa_to_json(lang), "analysis": _analysis(lang, limits)})
        validate_train_spec(spec, settings.job_limits())
    except LangclassError as err:
        where = f" [{err.field}]" if err.field else ""
        typer.echo(f"error ({err.code}){where}: {err.detail}", err=True)
        raise typer.Exit(code=2) from None

    runner, best = None, None
    if save is not None and save.suffix.lower() != ".json":
        _check_save_folder(save)  # before training: a stale or unwritable folder is refused, not found out at the end
        import functools

        from langclass.models.experiments.experiment import run_experiment
        from langclass.models.portable.provenance import BestRuns

        best = BestRuns(lang, spec.get("prediction"), all_runs=save_all_runs)
        runner = functools.partial(run_experiment, on_model=best.on_model)
    result, cancelled = _run_with_progress(spec, quiet=as_json, limits=settings.job_limits(), runner=runner)
    if result is None:
        raise typer.Exit(code=130)
    if save is not None:
        _save_result(save, result, best)
    if as_json:
        typer.echo(json.dumps(result, indent=2, default=str))
    else:
        from langclass.models.experiments.experiment import format_results

        typer.echo(format_results(result))
    if cancelled:
        raise typer.Exit(code=130)


def _check_save_folder(save: Path) -> None:
    """``--save FOLDER`` must be new or empty (another language's ``enc-*`` models would sit beside this
    one's) and creatable; else exit 2 naming ``save``."""
    try:
        if save.exists() and (not save.is_dir() or any(save.iterdir())):
            typer.echo(f"error (invalid-input) [save]: {save} exists and is not an empty folder; choose a new one "
                       "(the models of another run would sit beside this one's)", err=True)
            raise typer.Exit(code=2)
        save.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        typer.echo(f"error (invalid-input) [save]: cannot create {save}: {exc.strerror or exc}", err=True)
        raise typer.Exit(code=2) from None


def _save_result(save: Path, result: dict[str, Any], best: Any) -> None:
    """``--save``: the JSON result to ``save`` (a .json path), or ``result.json`` and the kept models into the folder ``save``."""
    try:
        if best is None:
            save.write_text(json.dumps(result, indent=2, default=str), encoding="utf-8")
            return
        save.mkdir(parents=True, exist_ok=True)
        (save / "result.json").write_text(json.dumps(result, indent=2, default=str), encoding="utf-8")
        for folder, why in best.refused.items():
            typer.echo(f"not saved: {folder}: {why}", err=True)
        for folder, files in best.folders().items():
            (save / folder).mkdir(exist_ok=True)
            for name, data in files.items():
                (save / (name if name == "langclass_runner.py" else f"{folder}/{name}")).write_bytes(data)
    except OSError as exc:
        typer.echo(f"error (invalid-input) [save]: cannot write {save}: {exc}", err=True)
        raise typer.Exit(code=2) from None
    if best is not None:
        typer.echo(f"saved {len(best.folders())} model(s) to {save}/: {', '.join(sorted(best.folders()))}", err=True)


def _run_with_progress(spec: dict[str, Any], *, quiet: bool, limits: Any = None, runner: Any = None) -> tuple[dict[str, Any] | None, bool]:
    """Run the experiment (``runner``, default :func:`~langclass.models.experiments.experiment.run_experiment`)
    under a rich progress bar; Ctrl-C cancels cooperatively.

    Returns:
        ``(result, cancelled)`` — the partial result when cancelled (None if nothing finished).

    Raises:
        typer.Exit(2): the experiment rejected its input.
    """
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    from langclass.models.experiments.experiment import run_experiment

    stop = threading.Event()
    previous = signal.signal(signal.SIGINT, lambda *_: stop.set())
    console = Console(stderr=True)
    try:
        with Progress(
            TextColumn("[bold]{task.fields[label]}"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[info]}"),
            TimeElapsedColumn(), TimeRemainingColumn(), console=console, disable=quiet, transient=False,
        ) as bar:
            task = bar.add_task("train", total=None, label="starting", info="")
            current = {"run": None}

            def on_progress(p: dict[str, Any]) -> None:
                run, runs = p.get("run"), p.get("runs")
                if p.get("phase") == "done":
                    total = bar.tasks[0].total if bar.tasks else None
                    bar.update(task, label="done", info="", completed=total or 0)
                    return
                if run != current["run"]:
                    current["run"] = run
                    bar.reset(task, total=p.get("total"), completed=0)
                what = p.get("encoding", "") if "sparsity" not in p else f"λ {p['sparsity']:g}"
                label = f"run {int(run) + 1}/{runs} {what} seed {p.get('seed')} lr {p.get('learning_rate')}" if run is not None else "run"
                info = []
                if isinstance(p.get("loss"), (int, float)):
                    info.append(f"loss {p['loss']:.3f}")
                if isinstance(p.get("train_accuracy"), (int, float)):
                    info.append(f"train acc {p['train_accuracy']:.3f}")
                if p.get("phase") in ("evaluate", "evaluated"):
                    info.append(p["phase"])
                last = p.get("last_evaluation")
                if isinstance(last, dict):
                    info.append(f"last N* {last.get('longest_perfect_length')}")
                bar.update(task, total=p.get("total"), completed=p.get("step") or 0, label=label, info="  ".join(info))

            try:
                return (runner or run_experiment)(spec, progress=on_progress, should_cancel=stop.is_set, limits=limits), False
            except LangclassError as err:
                where = f" [{err.field}]" if err.field else ""
                console.print(f"error ({err.code}){where}: {err.detail}")
                raise typer.Exit(code=2) from None
            except Exception as exc:
                partial = getattr(exc, "partial", None)
                if stop.is_set():
                    console.print("interrupted: showing the runs that finished")
                    return (partial if isinstance(partial, dict) and partial.get("runs") else None), True
                raise
    finally:
        signal.signal(signal.SIGINT, previous)


def register(app: typer.Typer) -> None:
    """Add ``worker`` and ``train`` to the ``langclass`` command line."""
    app.command("worker")(worker)
    app.command("train")(train)

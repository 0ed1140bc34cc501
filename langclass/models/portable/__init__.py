"""Stage 4 of models — portable: every built or trained transformer as safetensors + a JSON config + a standalone runner; imports construct, training, nn and core.

* :mod:`.runner` — the reference runner shipped in every download as ``langclass_runner.py``: it
  imports only torch and safetensors (never langclass), checks the files and runs the model.
* :mod:`.export` — FormulaTransformer / BraspTransformer / Recognizer → config + tensors
  (:func:`~.export.save_model`, :func:`~.export.model_files`, :func:`~.export.zip_models`).
* :mod:`.load` — :func:`~.load.load_model`: a saved directory → the runner's torch module, every
  refusal a :class:`~langclass.core.base.errors.ModelFileError`.

The format is documented in docs/models.md.
"""

"""Stage 2 of models — training: data, job specs, footprints, the trainers and evaluation; imports nn and core.

Training recognizers: the length-bucketed data (:mod:`.data`), the frozen job specs the API and
the CLI validate (:mod:`.specs`, torch-free), the memory footprint of a run (:mod:`.footprint`), the
trainer of one run (:mod:`.train`) and of a grid stacked into one module (:mod:`.train_batched`),
and accuracy by length with N* (:mod:`.evaluate`). Imports :mod:`langclass.models.nn` and
:mod:`langclass.core`; never :mod:`langclass.models.construct`, the experiments above it, or the app.
"""

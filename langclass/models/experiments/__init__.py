"""Stage 3 of models — experiments: experiments, sweeps, sectors and their reports; imports training, nn and core.

Experiments built from training runs: a train experiment with its prediction check and report
(:mod:`.experiment`, :mod:`.experiment_report`), the census sweep over sampled languages and its
table (:mod:`.sweep`, :mod:`.sweep_report`), the PJ-bias sector runs (:mod:`.sectors`) and their
kernel diagnostics (:mod:`.pj_diagnostics`). The top stage of :mod:`langclass.models`: imports
:mod:`langclass.models.training`, :mod:`langclass.models.nn` and :mod:`langclass.core`, never the app.
"""

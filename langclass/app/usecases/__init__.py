"""Stage 3 of app — use cases shared by every interface: classification records, experiments, response models, plots; imports execution and below."""

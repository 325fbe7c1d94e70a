"""Making a run: the config read once into the typed `RunPlan` (`plan`), the suite it runs on (`suite`), the
loop over datasets in this process or split over worker processes (`loop`, `processes`, `pools`), resume and
the one-writer lock (`resume`, `lock`), and what the run folder receives at the end (`results`, `mistakes`,
`role_table`; `merge` combines the shards of one job). `experiment.run_experiment` ties them together. Only
`plan` (and the CLI above it) reads the Hydra config; every other module takes the plan or option records
built from it. Nothing here imports `experiments.selection` or `experiments.analysis`.
"""

"""Analysis of finished runs and sweeps: the ablation tables and figures (`ablation`), pass@k and
the budget-matched comparison over stored candidates (`passk`, `budget_matched`), the oracle upper bound
(`oracle_bound`), the validator's meta-evaluation (`validator_eval`) and the sweep's HTML page
(`sweep_report`). Reads run folders through `experiments.stored` and stored candidates through
`experiments.selection`; never imports the run machinery (`experiments.run`).
"""

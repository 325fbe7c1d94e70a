"""How every published number is computed and written: dataset-clustered statistics (`stats`: bootstrap
CIs, paired sign-flip tests, mean ± spread) and the one writer of ``<stem>.csv/.md/.tex`` tables (`tables`).
Shared by `experiments.selection` and `experiments.analysis`; imports no other sub-package.
"""

"""Reading back what runs stored: the runs of a sweep folder (`sweep`), and which runs check the framework's
mechanics rather than measure a strategy (`mechanics`). The bottom of `experiments/`: imports no other
sub-package, so the run, the analysis and the report can all read run folders through it.
"""

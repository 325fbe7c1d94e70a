"""Write the foreign suite: other packages' sample pixels in community layouts, with ground truth via medio.

It reuses the realfiles machinery (``RealContext``/``RealSample``, geometry read back through ``medio``) with
two differences: its own registry, and a ground-truth ``dataset_name`` that is the name the dataset's
documentation gives (README title, nnU-Net ``dataset.json``, BIDS ``dataset_description.json``), or the
folder id when it gives none.
"""

from __future__ import annotations

from testbed.foreign.sets import FOREIGN_REGISTRY, FOREIGN_TITLES
from testbed.foreign.sources import source_versions
from testbed.realfiles.documented_suite import DocumentedSuite

__all__ = ["FOREIGN_AUTHORS_ROOT", "FOREIGN_MARKER", "build_foreign", "foreign_catalogue", "foreign_names"]

#: The markers around the foreign catalogue table in docs/benchmark.md.
FOREIGN_MARKER = "foreign-catalogue"
#: The authors' root the manifests pretend the data came from (re-rooted at the ``/data/`` segment).
FOREIGN_AUTHORS_ROOT = "/mnt/store/collab/foreign-sets"

FOREIGN = DocumentedSuite(
    "foreign dataset", FOREIGN_REGISTRY, FOREIGN_AUTHORS_ROOT, source_versions, titles=FOREIGN_TITLES
)
# The suite's commands by the names the rest of the project calls them.
foreign_names = FOREIGN.names
foreign_catalogue = FOREIGN.catalogue
build_foreign = FOREIGN.build

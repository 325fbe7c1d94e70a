"""litellm, imported offline and quietly (`agents.model.client.import_litellm`) when this is imported.

Why a module: a fork server imports the modules it is told to preload by name
(`medio.processes.preload_in_workers`); naming ``litellm`` itself would import it without the offline
price-map setting unless the server happened to inherit it, and litellm would then try to download its price
map at import. Naming this module imports it the one way the project does.
"""

from __future__ import annotations

from agents.model.client import import_litellm

__all__: list[str] = []

import_litellm()

"""Entry point of ``python -m experiments`` (Hydra).

Example:
    python -m experiments --cfg job            # print the composed config
    python -m experiments strategy=s3          # run S3 (arrives with the strategies)
"""

from __future__ import annotations

import sys

import hydra
from omegaconf import DictConfig, OmegaConf

from experiments._config_path import config_dir

EXIT_NOT_AVAILABLE = 2


@hydra.main(config_path=str(config_dir()), config_name="config", version_base="1.3")
def main(cfg: DictConfig) -> None:
    """Run one experiment described by ``cfg``.

    Args:
        cfg: The composed Hydra configuration.
    """
    print(OmegaConf.to_yaml(cfg))
    print(
        "experiments: the strategy runner is not implemented yet (it arrives with the strategies issue); "
        "the configuration above is what it will run.",
        file=sys.stderr,
    )
    sys.exit(EXIT_NOT_AVAILABLE)


if __name__ == "__main__":
    main()

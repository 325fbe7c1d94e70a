"""Hydra overrides shared by the runner tests (a plain module: test files import it by a unique name)."""

FAKE_AGENT = "agent._target_=strategy_fakes.NoisyOracleAgent"

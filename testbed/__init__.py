"""Test material, apart from the product: what the framework is exercised and measured on.

- Suites, written in the benchmark's own layout (`benchmark.layout`, `benchmark.manifest`) with ground
  truth in its format: `synth` (the bundled synthetic suite, the main job's default), `realfiles` (pydicom's
  and nibabel's own test files), `replica` (the development set rebuilt from ``shared/mdsbench/replica``),
  `independent` and `foreign` (evaluation suites from other packages' sample data).
- Simulated candidates: `perturb` (correct outputs with labelled, realistic mistakes) and the gated
  `simulated` agent that serves them.
- The offline model double: `fakeserver` (an OpenAI-compatible loopback server that replays decisions as
  tool calls), so tests and the README's offline recipe run the real LiteLLM path.

The product never needs this package: `benchmark`, `validator`, `agents` and `strategies` never import it;
only `experiments` does, where a suite is the benchmark chosen or a run is a simulation
(docs/architecture.md).
"""

"""``python -m agents.fakeserver [--script FILE | --replay DATASET_ROOT [--mode tools|script]] [--port N]
[--latency S]``: serve a scripted fake provider.

Prints the URL to give LiteLLM as ``api_base`` (with ``model="openai/<anything>"``) and serves until Ctrl-C.
``--replay`` serves `agents.fakeserver.replay.replay_script` of a dataset: the rules baseline's decisions as
tool calls, so a LiteLLM agent pointed at the server standardizes that dataset offline; with ``--mode script``
it serves `agents.fakeserver.script_replay.script_mode_replay` instead (the same decisions as one conversion
script run by ``run_python``), for an agent run with ``agent.mode=script``.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from agents.fakeserver.script import Reply, TurnScript, script_from_json
from agents.fakeserver.server import FakeServer
from core.cli_errors import CliError, OneLineParser, cli_main, existing_path


@cli_main("python -m agents.fakeserver")
def main(argv: list[str] | None = None) -> int:
    """Run the demo server.

    Args:
        argv: Command-line arguments (default: ``sys.argv[1:]``).

    Returns:
        The exit status.
    """
    parser = OneLineParser(prog="python -m agents.fakeserver", description=__doc__)
    parser.add_argument(
        "--script", type=Path, help="JSON list of turns (see agents.fakeserver.script_from_json)"
    )
    parser.add_argument(
        "--replay",
        type=Path,
        metavar="DATASET_ROOT",
        help="replay the rules agent on this dataset as tool calls",
    )
    parser.add_argument(
        "--mode",
        choices=("tools", "script"),
        default="tools",
        help="with --replay: per-sample tool calls (agent.mode=tools) or one script (agent.mode=script)",
    )
    parser.add_argument("--port", type=int, default=0, help="TCP port on 127.0.0.1 (0: any free port)")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds added to every answer")
    args = parser.parse_args(argv)
    if args.mode != "tools" and args.replay is None:
        raise CliError("--mode applies to --replay only; give --replay DATASET_ROOT")
    if args.script is not None:
        existing_path("--script", args.script)
        try:
            script = script_from_json(json.loads(args.script.read_text(encoding="utf-8")))
        except (OSError, ValueError) as exc:
            raise CliError(f"--script {args.script}: cannot load it as a JSON list of turns ({exc})") from exc
    elif args.replay is not None:
        from agents.fakeserver.replay import replay_script
        from agents.fakeserver.script_replay import script_mode_replay

        existing_path("--replay", args.replay)
        try:
            script = script_mode_replay(args.replay) if args.mode == "script" else replay_script(args.replay)
        except (OSError, ValueError, RuntimeError) as exc:
            raise CliError(f"--replay {args.replay}: cannot replay this dataset ({exc})") from exc
        print(
            f"replaying the rules agent on {script.dataset}: {len(script.sample_steps)} samples, "
            f"{len(script.steps)} turns as one conversation (or by phase: plan, batches, meta); reference "
            f"outputs in {script.reference_dir}",
            file=sys.stderr,
        )
        for index, problem in sorted(getattr(script, "mismatches", {}).items()):
            print(f"  sample {index} cannot be reproduced through the tools: {problem}", file=sys.stderr)
    else:
        script = TurnScript([], after_end=Reply(content="Hello from the fake server."))
    server = FakeServer(script, latency_s=args.latency, port=args.port).start()
    print(server.url, flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

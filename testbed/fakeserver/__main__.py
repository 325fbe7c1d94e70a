"""``medstrat fakeserver [--script FILE | --replay DATASET_ROOT [--mode tools|script]] [--port N]
[--latency S]``: serve a scripted fake provider.

Prints the URL to give LiteLLM as ``api_base`` (with ``model="openai/<anything>"``) and serves until Ctrl-C.
``--replay`` serves `testbed.fakeserver.replay.replay_script` of a dataset: the rules baseline's decisions as
tool calls, so a LiteLLM agent pointed at the server standardizes that dataset offline; with ``--mode script``
it serves `testbed.fakeserver.script_replay.script_mode_replay` instead (the same decisions as one conversion
script run by ``run_python``), for an agent run with ``agent.mode=script``. A request about any other dataset
is refused (`testbed.fakeserver.dispatch.unscripted`: a 404 that stops the run with one line). ``--judge N``
answers the judge of ``selector=llm_judge`` with candidate N (`testbed.fakeserver.judge`).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from core.cli_errors import CliError, OneLineParser, cli_main, existing_path
from testbed.fakeserver.dispatch import OneDataset
from testbed.fakeserver.script import Reply, Script, Step, TurnScript, script_from_json
from testbed.fakeserver.server import FakeServer


def _script(args: argparse.Namespace, cleanup: contextlib.ExitStack) -> Script:
    """The script ``args`` ask for; a replay's scratch folder is removed when ``cleanup`` closes."""
    if args.script is not None:
        existing_path("--script", args.script)
        try:
            return script_from_json(json.loads(args.script.read_text(encoding="utf-8")))
        except (OSError, ValueError) as exc:
            raise CliError(f"--script {args.script}: cannot load it as a JSON list of turns ({exc})") from exc
    if args.replay is None:
        return TurnScript([], after_end=Reply(content="Hello from the fake server."))
    # Both run the rules agent: imported only here.
    from testbed.fakeserver.replay import replay_script
    from testbed.fakeserver.script_replay import script_mode_replay

    existing_path("--replay", args.replay)
    work = Path(cleanup.enter_context(tempfile.TemporaryDirectory(prefix="rules-replay-")))
    build = script_mode_replay if args.mode == "script" else replay_script
    try:
        script = build(args.replay, work_dir=work)
    except (OSError, ValueError, RuntimeError) as exc:
        raise CliError(f"--replay {args.replay}: cannot replay this dataset ({exc})") from exc
    if args.mode == "script":
        shape = "one conversion script (tree, inspect, run_python, finish)"
    else:
        samples = len(getattr(script, "sample_steps", ()))
        shape = f"{samples} samples, {len(script.steps)} turns as one conversation (or by phase)"
    print(
        f"replaying the rules agent on {script.dataset}: {shape}; reference outputs in "
        f"{script.reference_dir} (removed when the server stops)",
        file=sys.stderr,
    )
    for index, problem in sorted(getattr(script, "mismatches", {}).items()):
        print(f"  sample {index} cannot be reproduced through the tools: {problem}", file=sys.stderr)
    # Every request about another dataset is refused: replaying this dataset's decisions there would score
    # garbage with exit 0 (a benchmark.root holding more than this dataset).
    return OneDataset(script.dataset, script)


def _dying(script: Script, answers: int) -> Script:
    """``script`` for ``answers`` chat requests; the process exits at the next one, without an answer."""
    import os

    def served(body: Mapping[str, Any], serial: int) -> Step:
        if serial >= answers:
            os._exit(3)  # the connection drops mid-request, as when a native kernel faults
        return script(body, serial)

    return served


@cli_main("medstrat fakeserver")
def main(argv: list[str] | None = None) -> int:
    """Run the demo server.

    Args:
        argv: Command-line arguments (default: ``sys.argv[1:]``).

    Returns:
        The exit status.
    """
    parser = OneLineParser(prog="medstrat fakeserver", description=__doc__)
    parser.add_argument(
        "--script", type=Path, help="JSON list of turns (see testbed.fakeserver.script_from_json)"
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
    parser.add_argument(
        "--judge", type=int, metavar="N", help="answer judge requests (choose_candidate) with candidate N"
    )
    parser.add_argument("--port", type=int, default=0, help="TCP port on 127.0.0.1 (0: any free port)")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds added to every answer")
    parser.add_argument(
        "--die-after",
        type=int,
        metavar="N",
        help="answer N chat requests, then exit at the next one (a local server that crashed mid-run)",
    )
    args = parser.parse_args(argv)
    if args.mode != "tools" and args.replay is None:
        raise CliError("--mode applies to --replay only; give --replay DATASET_ROOT")
    with contextlib.ExitStack() as cleanup:
        served = _script(args, cleanup)
        if args.judge is not None:
            from testbed.fakeserver.judge import with_judge

            # The judge's requests are answered before the dataset check: they name no dataset.
            served = with_judge(served, args.judge)
        if args.die_after is not None:
            served = _dying(served, args.die_after)
        server = FakeServer(served, latency_s=args.latency, port=args.port).start()
        cleanup.callback(server.stop)
        from agents.serve import stdout_log, write_record

        # As `python -m agents.serve` does: a run whose server dies names this process and its log.
        record = write_record(int(server.url.rsplit(":", 1)[1].split("/")[0]), stdout_log())
        cleanup.callback(record.unlink, missing_ok=True)  # a clean stop takes it along; --die-after leaves it
        # SIGTERM (`kill %1`) ends the server like Ctrl-C (`cli_main`), so the replay's scratch folder is
        # removed either way.
        try:
            # Inside the try: a SIGTERM sent the moment the URL is read must still end the server cleanly.
            print(server.url, flush=True)
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

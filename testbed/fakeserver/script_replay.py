"""A fake-server script for the coding-agent mode (``agent.mode=script``): the rules baseline's decisions as
one generated conversion script.

`script_mode_replay(dataset_root)` takes what `testbed.fakeserver.replay.replay_script` learns from the
`rules` agent at temperature 0 (per sample the ``render`` arguments of the image and the mask, and the JSON
the rules agent wrote) and turns it into the conversation a coding model would have: ``tree`` over ``data/``,
``inspect`` of the first source, one ``run_python`` whose script reads every sample with ``medio``, renders
it exactly as the ``render`` tool would (same `medio.read`/`medio.render` options) and writes the PNGs and
JSONs, then ``finish``. Four model calls whatever the number of samples, so the LiteLLM agent's script mode
runs offline through the real LiteLLM path, and its outputs can be compared with the tool mode's replay.

What the replay does not imitate: a model's script computes each sample's JSON from what it read; this
script carries the rules agent's JSONs as data (so its completion tokens grow with the sample count, as
the tool mode's ``write_annotation`` arguments do), and it does not revise itself after the validator's
messages (the rules agent's decisions are its final answer).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from testbed.fakeserver.replay import replay_script
from testbed.fakeserver.script import Reply, TurnScript, assistant_turn, tool_call

__all__ = ["ScriptModeReplay", "conversion_script", "script_mode_replay"]

_SCRIPT = '''\
"""Convert every manifest sample: render image (and mask) with medio, write the JSONs, then data_meta.json."""
import json
import os

import medio

SAMPLES = json.loads({samples!r})
DATA_META = json.loads({meta!r})


def render(call, label):
    image = medio.read(
        call["source"], key=call.get("key"), index=call.get("item"), volume=call.get("volume"),
        frame=call.get("frame"),
    )
    # A multi-frame file read at one frame is already that frame.
    frame = None if image.meta.frame_index is not None else call.get("frame")
    return medio.render(
        image, slice_index=call.get("slice_index"), axis=call.get("axis", 0), frame=frame, label=label
    ).pixels


for folder in ("images", "masks", "standardized_annotations"):
    os.makedirs(os.path.join("output", folder), exist_ok=True)
done = 0
for sample in SAMPLES:
    index = sample["index"]
    try:
        medio.write_png(render(sample["image"], False), f"output/images/{{index}}.png")
        if sample["mask"] is not None:
            medio.write_png(render(sample["mask"], True), f"output/masks/{{index}}.png")
        with open(f"output/standardized_annotations/{{index}}.json", "w", encoding="utf-8") as handle:
            json.dump(sample["annotation"], handle, ensure_ascii=False, indent=2)
        done += 1
    except Exception as exc:  # one bad sample must not stop the others
        print(f"sample {{index}}: {{type(exc).__name__}}: {{exc}}")
with open("output/data_meta.json", "w", encoding="utf-8") as handle:
    json.dump(DATA_META, handle, ensure_ascii=False, indent=2)
print(f"converted {{done}} of {{len(SAMPLES)}} samples")
'''


class ScriptModeReplay(TurnScript):
    """A turn script replaying the rules agent on one dataset as one conversion script.

    Attributes:
        steps: The four scripted assistant turns.
        dataset: The dataset's name.
        reference_dir: The rules agent's ``agent1_data_organization`` folder (the expected outputs).
        code: The generated conversion script.
        skipped: Manifest indices the rules agent did not write (the script leaves them out too).
    """

    def __init__(
        self, steps: list[Reply], *, dataset: str, reference_dir: Path, code: str, skipped: list[int]
    ) -> None:
        super().__init__(steps, after_end=Reply(content="The dataset is done."))
        self.dataset = dataset
        self.reference_dir = reference_dir
        self.code = code
        self.skipped = skipped


def conversion_script(samples: list[dict[str, Any]], data_meta: dict[str, Any]) -> str:
    """The Python script that writes every sample's outputs from its render arguments and JSON.

    Args:
        samples: Per sample ``{"index", "image": render args, "mask": render args | None, "annotation"}``.
        data_meta: The dataset JSON.

    Returns:
        The script's source (it runs in the ``run_python`` workspace: ``data/`` and ``output/``).
    """
    return _SCRIPT.format(samples=json.dumps(samples, ensure_ascii=False), meta=json.dumps(data_meta))


def script_mode_replay(
    dataset_root: str | Path, *, work_dir: str | Path | None = None, usage: tuple[int, int] | None = None
) -> ScriptModeReplay:
    """Build a fake-server script that makes a script-mode LiteLLM agent redo the rules agent's work.

    Args:
        dataset_root: The dataset folder (holding ``data/`` and ``VLM/random.txt``).
        work_dir: Where the rules agent writes its reference candidate (a fresh temporary folder when None).
        usage: Fixed ``(prompt_tokens, completion_tokens)`` per turn; None lets the server estimate them.

    Returns:
        The script: ``tree``, ``inspect`` of the first source, one ``run_python``, ``finish``.

    Raises:
        benchmark.errors.ManifestError: The folder is not a dataset.
        RuntimeError: The rules agent could not standardize any sample.
    """
    tools = replay_script(dataset_root, work_dir=work_dir, check=False)
    reference = tools.reference_dir
    samples = []
    for index, args in sorted(tools.render_args.items()):
        annotation_file = reference / "standardized_annotations" / f"{index}.json"
        annotation = json.loads(annotation_file.read_text(encoding="utf-8"))
        samples.append(
            {"index": index, "image": args["image"], "mask": args["mask"], "annotation": annotation}
        )
    data_meta = json.loads((reference / "data_meta.json").read_text(encoding="utf-8"))
    code = conversion_script(samples, data_meta)
    first = samples[0]["image"]["source"]
    steps = [
        assistant_turn(tool_call("tree", {"path": "data"}, "explore_tree"), content="Looking at the folder."),
        assistant_turn(tool_call("inspect", {"path": first}, "explore_inspect")),
        assistant_turn(
            tool_call("run_python", {"code": code}, "convert"), content="Converting every sample."
        ),
        assistant_turn(tool_call("finish", {"summary": "one script converted every sample"}, "finish")),
    ]
    if usage is not None:
        steps = [Reply(content=s.content, tool_calls=s.tool_calls, usage=usage) for s in steps]
    return ScriptModeReplay(
        steps, dataset=tools.dataset, reference_dir=reference, code=code, skipped=tools.skipped
    )

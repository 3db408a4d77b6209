"""babylon-mmd, the MMD reader and runtime that is not ours (pinned in tools/package.json, run in Node: docs/mmd.md
§7): what its parser reads from PMX files, and the world positions its `MmdRuntime` gives bones as it plays a
motion (tests/js/pmx_counts.mjs, tests/js/mmd_runtime_pose.mjs)."""
from __future__ import annotations

import json
import pathlib
import subprocess

import numpy as np
import pytest

from support import tools
from support.tools import NODE_MODULES, node_with_babylon

SCRIPT = pathlib.Path(__file__).resolve().parent.parent / "js" / "mmd_runtime_pose.mjs"


def babylon_parse(paths: list[pathlib.Path]) -> dict[str, dict]:
    """What babylon-mmd read from each file (tests/js/pmx_counts.mjs), by path."""
    return tools.babylon_parse("pmx_counts.mjs", paths)


def runtime_positions(model_path, motion_path, frames, bones) -> np.ndarray:
    """(F, B, 3) world positions in MMD units as babylon-mmd's runtime plays the motion (IK on, no physics)."""
    node = node_with_babylon()
    if not (NODE_MODULES / "@babylonjs" / "core" / "package.json").is_file():
        pytest.fail("@babylonjs/core is not installed in tools/node_modules (bash tools/run runs npm install)")
    done = subprocess.run([node, str(SCRIPT), str(NODE_MODULES), str(model_path), str(motion_path),
                           json.dumps([float(f) for f in frames]), json.dumps(bones, ensure_ascii=False)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout[done.stdout.index("{"):])
    assert out["missing"] == []
    return np.array(out["frames"], np.float64)

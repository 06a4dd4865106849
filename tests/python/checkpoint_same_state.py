"""Two gptrain checkpoints hold the same training state bit for bit, whatever layouts saved them: every
model tensor and every AdamW tensor (moments and fp32 master weights, gathered per tensor name) is
reassembled to its global shape from the rank files' slice metadata (TP blocks, expert-parallel dim-0
slices) with the safetensors package, independently of gptrain's loader, and compared bitwise.

  checkpoint_same_state.py CKPT_A CKPT_B
"""
import glob
import os
import sys

from convert_common import assert_identical, global_tensors, latest_iteration_dir

a, b = (latest_iteration_dir(ck) for ck in sys.argv[1:3])
for kind in ("model", "optim"):
    fa, fb = (sorted(glob.glob(os.path.join(d, f"{kind}_*.safetensors"))) for d in (a, b))
    assert fa and fb, f"no {kind}_* files in {a if not fa else b}"
    assert_identical(global_tensors(fa), global_tensors(fb),
                     f"{kind} state of {os.path.basename(os.path.dirname(a))} ({len(fa)} files) and "
                     f"{os.path.basename(os.path.dirname(b))} ({len(fb)} files)")

#!/usr/bin/env bash
# Every example configuration in scripts/presets/ (pretrain_gpt --config *.yaml): has a header naming
# the source of its shape; parses; every key is recorded in the checkpoint args as written; its
# architecture switches build a model (sizes shrunk on the command line, so CI never allocates the
# real model) whose parameter count equals transformers' for the same architecture, and train 2
# iterations on mock data; at full size, `pretrain_gpt --config <preset> --dry-run` counts exactly the
# parameters of the source model's published shape (closed-form formula and transformers, at the padded
# vocabulary), the planned layout a preset's header shows (e.g. Qwen2.5-72B on 64 GPUs) prints a plan counting
# the same model at its TP-padded vocabulary, and a wrong-shaped copy of a preset fails. tests/python/family_presets_check.py. ~1 min.
set -euo pipefail
: "${GPTRAIN_SRC:?}" "${GPTRAIN_BIN:?}" "${GPTRAIN_TMP:?}"
if [[ ! -x "${GPTRAIN_PYTHON:-}" ]]; then echo "SKIP: no reference python at GPTRAIN_PYTHON='${GPTRAIN_PYTHON:-}'"; exit 77; fi
if [[ ! -x "$GPTRAIN_BIN/pretrain_gpt" ]]; then echo "SKIP: $GPTRAIN_BIN/pretrain_gpt not built"; exit 77; fi
rm -rf "$GPTRAIN_TMP" && mkdir -p "$GPTRAIN_TMP"
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
cd "$GPTRAIN_SRC/tests/python"
"$GPTRAIN_PYTHON" family_presets_check.py --presets "$GPTRAIN_SRC/scripts/presets" --bin "$GPTRAIN_BIN" --tmp "$GPTRAIN_TMP"

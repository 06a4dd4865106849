#!/usr/bin/env bash
# The flag pages of docs/ that mirror pretrain_gpt's flag table (docs/flags.md, docs/flags-without-effect.md,
# docs/megatron-flag-status.md with its counts per Megatron argument group) are exactly what
# scripts/gen_flag_docs.py makes from `pretrain_gpt --list-flags` and docs/megatron-flags.tsv today, and no
# flag of Megatron's pretraining parser is unknown to pretrain_gpt. The fixture's generator,
# scripts/megatron_flag_list.py, derives the flags of a small Megatron-shaped tree as argparse would: option
# strings by group, dataclass fields (with base classes and re-exported imports) as --name, a bool not
# defaulting to False as --no-name/--disable-name, argparse_meta's arg_names, minus exclude lists, init=False
# and ClassVar fields. ~2 s.
set -euo pipefail
: "${GPTRAIN_BIN:?}" "${GPTRAIN_SRC:?}" "${GPTRAIN_TMP:?}"
rm -rf "$GPTRAIN_TMP" && mkdir -p "$GPTRAIN_TMP" && cd "$GPTRAIN_TMP"

# 1. megatron_flag_list.py on a miniature Megatron-LM tree.
mkdir -p mini/megatron/training/config mini/megatron/core
cat >mini/megatron/core/base_config.py <<'PY'
from dataclasses import dataclass
@dataclass
class BaseConfig:
    hidden_size: int = 0
    use_cpu_init: bool = False
PY
cat >mini/megatron/core/model_config.py <<'PY'
from dataclasses import dataclass, field
from typing import ClassVar, Optional
from megatron.core.base_config import BaseConfig
@dataclass
class ModelConfig(BaseConfig):
    fused_norm: bool = True
    """Deprecated: always fused."""
    maybe_on: Optional[bool] = None
    left_out: int = 1
    derived: int = field(init=False, default=0)
    renamed: int = field(default=1, metadata={"argparse_meta": {"arg_names": ["--first-name", "--second-name"]}})
    typed: list = field(default_factory=list, metadata={"argparse_meta": {"type": int, "nargs": "+"}})
    LIMIT: ClassVar[int] = 3
PY
echo 'from .training_config import TrainConfig' >mini/megatron/training/config/__init__.py
cat >mini/megatron/training/config/training_config.py <<'PY'
from dataclasses import dataclass
@dataclass
class TrainConfig:
    train_iters: int = 0
    check_nan: bool = True
PY
cat >mini/megatron/training/arguments.py <<'PY'
from megatron.core.model_config import ModelConfig
from megatron.training.argument_utils import ArgumentGroupFactory

def add_megatron_arguments(parser):
    parser = _add_network_size_args(parser)
    parser = _add_training_args(parser)
    parser = _add_kitchen_quantization_arguments(parser)
    return parser

def _add_training_args(parser):
    from megatron.training.config import TrainConfig
    ArgumentGroupFactory(TrainConfig, exclude=["check_nan"]).build_group(parser, "training")
    parser.add_argument('--old-iters', type=int, help='Deprecated. Use --train-iters.')
    return parser

def _add_network_size_args(parser):
    exclude = ["left_out"]
    ArgumentGroupFactory(ModelConfig, exclude=exclude).build_group(parser, "model")
    group = parser.add_argument_group(title='network size')
    group.add_argument('--num-layers', type=int, help='Layers.')
    return parser

def _add_kitchen_quantization_arguments(parser):
    parser.add_argument('--kitchen-recipe', '--kr', type=int)
    return parser

def _add_unused_args(parser):
    parser.add_argument('--never-added')
    return parser
PY
python3 "$GPTRAIN_SRC/scripts/megatron_flag_list.py" --src mini --out mini.tsv
grep -v '^#' mini.tsv >got.tsv
printf '%s\t%s\t%s\t%s\n' \
  network_size hidden-size '' '' \
  network_size use-cpu-init '' '' \
  network_size no-fused-norm disable-fused-norm yes \
  network_size no-maybe-on disable-maybe-on '' \
  network_size first-name second-name '' \
  network_size typed '' '' \
  network_size num-layers '' '' \
  training train-iters '' '' \
  training old-iters '' yes \
  kitchen_quantization kitchen-recipe kr '' >want.tsv
diff want.tsv got.tsv ||
  { echo "FAIL: megatron_flag_list.py derived the miniature tree's flags wrongly (diff: want, got)"; exit 1; }

# 2. The committed fixture is the script's output (its header) and the pages match the binary.
grep -q '^# Written by scripts/megatron_flag_list.py' "$GPTRAIN_SRC/docs/megatron-flags.tsv" ||
  { echo "FAIL: docs/megatron-flags.tsv is not the output of scripts/megatron_flag_list.py"; exit 1; }
"$GPTRAIN_BIN/pretrain_gpt" --list-flags >flags.json
gen=$GPTRAIN_SRC/scripts/gen_flag_docs.py
python3 "$gen" --list-flags flags.json --check ||
  { echo "FAIL: the docs/ flag pages differ from pretrain_gpt --list-flags (diff above)"; exit 1; }
mkdir fresh
python3 "$gen" --list-flags flags.json --docs fresh >/dev/null
row='^\| [^|]+ \| `--[^|]+ \| unknown \|'  # a flag's row: | group | `--flag` | unknown | note |
unknown=$(grep -cE "$row" fresh/megatron-flag-status.md || true)
[ "$unknown" = 0 ] ||
  { grep -E "$row" fresh/megatron-flag-status.md; echo "FAIL: $unknown Megatron flag(s) unknown to pretrain_gpt"; exit 1; }
echo "megatron_flag_table: megatron_flag_list.py reads a Megatron tree as argparse would; the docs/ flag pages" \
  "match pretrain_gpt --list-flags; no unknown Megatron flag"

#!/usr/bin/env bash
# scripts/launch_mpi.sh binds each rank to a GPU by local rank and passes flags through unchanged;
# scripts/slurm/pretrain_gpt.sbatch (mpirun mode, with a faked 2-task allocation) starts the program
# with the job's flags. ~10 s on 2 cores.
set -euo pipefail
export OMP_NUM_THREADS=1
launch=$GPTRAIN_SRC/scripts/launch_mpi.sh
out=$("$launch" -n 2 --gpus-per-node 2 --bin bash -- -c 'echo "rank=$OMPI_COMM_WORLD_RANK local=$OMPI_COMM_WORLD_LOCAL_RANK gpu=$CUDA_VISIBLE_DEVICES args=$0"' 'a b')
echo "$out"
grep -qx "rank=0 local=0 gpu=0 args=a b" <<<"$out"
grep -qx "rank=1 local=1 gpu=1 args=a b" <<<"$out"
# CPU runs (no GPUs) leave CUDA_VISIBLE_DEVICES alone.
out=$(CUDA_VISIBLE_DEVICES=keep "$launch" -n 2 --gpus-per-node 0 --bin bash -- -c 'echo "gpu=$CUDA_VISIBLE_DEVICES"')
[ "$(grep -c '^gpu=keep$' <<<"$out")" = 2 ]
# Bad usage is refused with a message.
if "$launch" --bin bash -- true 2> /dev/null; then echo "expected an error without -n"; exit 1; fi

out=$(SLURM_NTASKS=2 SLURM_NTASKS_PER_NODE="2(x1)" SLURM_JOB_ID=42 SLURM_JOB_NODELIST=localhost GPTRAIN_LAUNCHER=mpirun \
  GPTRAIN_PREFLIGHT=0 GPTRAIN_GPUS_PER_NODE=0 GPTRAIN_ROOT=$GPTRAIN_SRC GPTRAIN_BIN=$GPTRAIN_BIN/gptrain_preflight \
  bash "$GPTRAIN_SRC/scripts/slurm/pretrain_gpt.sbatch" --tensor-model-parallel-size 2 --size-mb 1 --iters 2)
echo "$out"
grep -q "job 42 on localhost: 2 ranks, 2 per node" <<<"$out"
grep -q "world 2 = TP 2 x PP 1 x DP 1" <<<"$out"
grep -q "busbw" <<<"$out"
echo "launchers: ok"

#!/usr/bin/env bash
# One prepared run on a CUDA machine (the device tool): CUDA tests, then images/s at 1024², batch 16.
# Usage there: bash benchmarks/gpu_check.sh OUT_DIR   (pysodmetrics wheels in .whl/ when not installed)
set -o pipefail
out=${1:-gpu-out}; mkdir -p "$out"
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:/tmp/site${PYTHONPATH:+:$PYTHONPATH}
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl
fi
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
  python3 -c "import torch, torchmetrics; print('torch', torch.__version__, 'torchmetrics', torchmetrics.__version__)"
} 2>&1 | tee "$out/gpu.txt"
timeout ${TEST_TIMEOUT:-200} python3 -m pytest -q -p no:cacheprovider -o addopts="" tests/test_cuda.py \
  tests/instance/test_cuda_instances.py tests/instance/test_bbox_device.py tests/panoptic/test_devices.py 2>&1 | tee "$out/test_cuda.log"
# one generated batch per case (--images 1): the device paths do not size their work by the object, and
# the reference side (PySODMetrics on the host CPU, 16 images per call) must fit the device time
timeout ${BENCH_TIMEOUT:-240} python3 benchmarks/run.py --device cuda --sizes 1024 --batch 16 --repeat 5 \
  --images 1 ${BENCH_ARGS:-} --json "$out/bench.json" 2>&1 | tee "$out/bench.log"
# instance AP (mask and Boundary AP) on the GPU beside the CPU tools, COCO-like 480x640 set
timeout ${INSTANCES_TIMEOUT:-150} python3 benchmarks/bench_instances.py --device cuda --sizes 480x640 --images 40 \
  --repeat 2 2>&1 | tee "$out/bench_instances.log"

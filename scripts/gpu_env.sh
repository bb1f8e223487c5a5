# Sourced at the start of every command on the GPU box: installs the carried wheels into
# /tmp/site and points Python at them and at this checkout.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site .whl/*.whl || return 1
export PYTHONPATH=/tmp/site:$PWD
export PYTHONUNBUFFERED=1
export KERNELSEEK_CACHE=${KERNELSEEK_CACHE:-/tmp/kernelseek-cache}

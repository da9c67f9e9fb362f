#!/bin/sh
# Usage: cartpole_fx_current.sh FXPLAIN SOURCE_DIR OUT
# The module fxplain writes for scripts/cartpole.fx must be the one XLA compiled for the reference
# in tests/xla/cartpole_fx (otherwise regenerate it with scripts/xla_reference.py).
set -e
"$1" -e "load $2/scripts/cartpole.fx; save $3" >/dev/null
cmp "$3" "$2/tests/xla/cartpole_fx/cartpole_fx.hlo"

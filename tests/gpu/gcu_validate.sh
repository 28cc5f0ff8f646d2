#!/usr/bin/env bash
# Validate devtrace's TOPSPTI backend on a real Enflame GCU: the same run as
# `tests/gpu/vendor_validate.sh topspti` (see there), kept under this name.
#
#   tests/gpu/gcu_validate.sh [-B BUILD_DIR] [-o OUT_DIR] [-- WORKLOAD...]
exec "$(dirname "$0")/vendor_validate.sh" topspti "$@"

#!/bin/sh
# `make run`: starts kvcon on its out-of-the-box default (the local engine on libvirt's embedded QEMU driver).
set -e
cd "$(dirname "$0")/.."
exec ./kvcon "$@"

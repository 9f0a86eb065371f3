#!/bin/sh
# Saves a checkpoint onto a tmpfs of SIZE in a mount namespace of its own,
# then saves another over it that does not fit, and prints what is left:
# the second save's message, whether the first checkpoint is byte for byte
# as it was, the files in the folder, and the first checkpoint resumed.
#   full_disk_save.sh SIZE DIR MODEL DATA
size=$1 dir=$2 model=$3 data=$4
exec unshare -m sh -c '
  set -e
  mkdir -p "$2/disk"
  mount -t tmpfs -o size="$1" none "$2/disk"
  pmlir-run "$3" --train --steps 1 --data "$4" --save "$2/disk/c.safetensors" > /dev/null
  cp "$2/disk/c.safetensors" "$2/disk/c.optimizer.safetensors" "$2/"
  if pmlir-run "$3" --train --steps 2 --data "$4" --save "$2/disk/c.safetensors" > /dev/null; then
    echo "the second save fit on $1"
    exit 1
  fi
  cmp "$2/disk/c.safetensors" "$2/c.safetensors"
  cmp "$2/disk/c.optimizer.safetensors" "$2/c.optimizer.safetensors"
  echo "unchanged: the first checkpoint"
  echo "left:" $(ls -A "$2/disk")
  pmlir-run "$3" --train --steps 1 --data "$4" --resume "$2/disk/c.safetensors"
' full_disk_save "$size" "$dir" "$model" "$data"

#!/bin/sh
# Saves a checkpoint directory from a mesh onto a tmpfs of SIZE in a mount
# namespace of its own, then saves another over it that does not fit, and
# prints what is left: whether the first checkpoint is byte for byte as it
# was, what the disk holds, and the first checkpoint resumed.
#   full_disk_save_directory.sh SIZE DIR MODEL DATA MESH...
size=$1 dir=$2 model=$3 data=$4
shift 4
exec unshare -m sh -c '
  set -e
  size=$1 dir=$2 model=$3 data=$4
  shift 4
  mkdir -p "$dir/disk"
  mount -t tmpfs -o size="$size" none "$dir/disk"
  pmlir-run "$model" --train --steps 1 --data "$data" "$@" --save "$dir/disk/c" > /dev/null
  cp -r "$dir/disk/c" "$dir/first"
  if pmlir-run "$model" --train --steps 2 --data "$data" "$@" --save "$dir/disk/c" > /dev/null; then
    echo "the second save fit on $size"
    exit 1
  fi
  diff -r "$dir/disk/c" "$dir/first"
  echo "unchanged: the first checkpoint"
  echo "left:" $(ls -A "$dir/disk")
  pmlir-run "$model" --train --steps 1 --data "$data" "$@" --resume "$dir/disk/c"
' full_disk_save_directory "$size" "$dir" "$model" "$data" "$@"

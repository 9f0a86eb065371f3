#!/bin/sh
# Saves a checkpoint NAME (a file pair X.safetensors, or a directory) onto
# a tmpfs of SIZE in a mount namespace of its own, then saves another over
# it that does not fit, and prints what is left: whether the disk holds
# byte for byte what it held after the first save, its files, and the
# first checkpoint resumed. ARGS go to every run (a mesh).
#   full_disk_save.sh SIZE DIR MODEL DATA NAME [ARGS...]
size=$1 dir=$2 model=$3 data=$4 name=$5
shift 5
exec unshare -m sh -c '
  set -e
  size=$1 dir=$2 model=$3 data=$4 name=$5
  shift 5
  mkdir -p "$dir/disk"
  mount -t tmpfs -o size="$size" none "$dir/disk"
  pmlir-run "$model" --train --steps 1 --data "$data" "$@" --save "$dir/disk/$name" > /dev/null
  cp -r "$dir/disk" "$dir/first"
  if pmlir-run "$model" --train --steps 2 --data "$data" "$@" --save "$dir/disk/$name" > /dev/null; then
    echo "the second save fit on $size"
    exit 1
  fi
  diff -r "$dir/disk" "$dir/first"
  echo "unchanged: the first checkpoint"
  echo "left:" $(ls -A "$dir/disk")
  pmlir-run "$model" --train --steps 1 --data "$data" "$@" --resume "$dir/disk/$name"
' full_disk_save "$size" "$dir" "$model" "$data" "$name" "$@"

#!/usr/bin/env bash
# Regenerates a committed model from the pmlir-gen command on its first line
# and fails if the file differs from what the generator writes today.
set -euo pipefail
model=$1 out=$2
command=$(head -n 1 "$model" | sed -n 's|^// \(pmlir-gen .*\)$|\1|p')
if [ -z "$command" ]; then
  echo "$model: first line is not a '// pmlir-gen ...' command" >&2
  exit 1
fi
read -ra argv <<<"$command"
"${argv[@]}" -o "$out"
diff -u "$model" "$out"
pmlir-opt "$model" -o /dev/null

#!/bin/sh
# Runs a command with a TMPDIR of its own, removed after it. The suite's
# mpirun jobs run several at once: sharing Open MPI's top session directory
# (TMPDIR/ompi.HOST.UID), one job removing it as it ends while another made
# its own inside ended the other ("orte_session_dir failed").
dir=$(mktemp -d "${TMPDIR:-/tmp}/pmlir-test.XXXXXX") || exit 1
TMPDIR=$dir "$@"
status=$?
rm -rf "$dir"
exit $status

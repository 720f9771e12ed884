#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Replays fuzz/corpus-slots through the slot table's harness built as a
# plain program (tests/fuzz_slots_replay): every file must pass every
# property it checks.  Run by `make check`.
FUZZ_REPLAY=fuzz_slots_replay FUZZ_CORPUS=corpus-slots \
    exec "${top_srcdir:?top_srcdir must be set (make check sets it)}/tests/fuzz-corpus.sh"

#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Replays fuzz/corpus-session through the session's harness built as a
# plain program (tests/fuzz_session_replay): every file must pass every
# property it checks.  Run by `make check`.
FUZZ_REPLAY=fuzz_session_replay FUZZ_CORPUS=corpus-session \
    exec "${top_srcdir:?top_srcdir must be set (make check sets it)}/tests/fuzz-corpus.sh"

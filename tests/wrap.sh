#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Runs one test.  RLK_WRAP, when set (for example to a valgrind command
# line), is put in front of the test when it is a program; test scripts
# read RLK_WRAP themselves for the programs they start.
case "$1" in
  *.sh) exec bash "$@" ;;
  *) exec ${RLK_WRAP:-} "$@" ;;
esac

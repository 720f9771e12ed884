#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# No dependency cycle between the files of src/ and resp/: includes read
# from the source, calls and data from the built objects (nm).  See
# scripts/check-layers.  Run by `make check`.
: "${top_srcdir:?top_srcdir must be set (make check sets it)}" "${top_builddir:?}"
if sh "$top_srcdir/scripts/check-layers" "$top_srcdir" "$top_builddir"; then
    echo "1 passed, 0 failed"
else
    echo "FAIL: a dependency cycle (above)"
    echo "0 passed, 1 failed"
    exit 1
fi

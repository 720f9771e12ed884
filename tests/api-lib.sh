# SPDX-License-Identifier: BSD-3-Clause
# The public C API as its installed headers declare it, read from the
# source tree ($top_srcdir), for the tests that check it against the
# library and the documentation.  Source it; needs bash.

# The status codes: the members of the unnamed enums of include/resplock/resp.h and
# include/resplock/resplock.h, one name a line, in the headers' order.
rlk_status_codes() {
  awk '
    /^enum[[:space:]]*\{/ { on = 1; next }
    on && /^\}/ { on = 0; next }
    on && match($0, /^[[:space:]]*RLK_[A-Z0-9_]+/) {
      name = substr($0, RSTART, RLENGTH); gsub(/[[:space:]]/, "", name); print name
    }' "$top_srcdir/include/resplock/resp.h" "$top_srcdir/include/resplock/resplock.h"
}

# The functions of include/resplock/resplock.h, include/resplock/resp.h and include/resplock/adapters/poll.h,
# sorted.  Declarations start a line with their type (comments and
# struct fields are indented, function-pointer types begin "typedef"):
# the first rlk_NAME( on such a line is the function's name.
rlk_public_functions() {
  grep -hE '^[a-z]' "$top_srcdir/include/resplock/resplock.h" "$top_srcdir/include/resplock/resp.h" \
    "$top_srcdir/include/resplock/adapters/poll.h" | grep -v '^typedef' |
    grep -oE '\brlk_[a-z0-9_]+[[:space:]]*\(' | sed 's/[[:space:]]*($//' | sort -u
}

/* What the layers above the connection may use of its insides. */
#ifndef RESPLOCK_CONN_INTERNAL_H
#define RESPLOCK_CONN_INTERNAL_H

#include "resplock.h"

/* Records a failure message on the connection and returns status. */
#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
int rlk__conn_fail(rlk_conn *c, int status, const char *fmt, ...);

#endif

/* SPDX-License-Identifier: BSD-3-Clause */
/* Where a benchmark runs: pinning processes to CPUs, for benchmarks whose
 * loopback round trips swing between two speeds as the kernel moves client
 * and server between two CPUs (a shared CPU: one wake-up per hop;
 * separate ones: two), and the load that other work puts on the machine. */
#ifndef RESPLOCK_BENCH_PIN_H
#define RESPLOCK_BENCH_PIN_H

#include <dirent.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>

/* Pins every thread of process pid (0: this one) to one CPU. */
static inline int bench_pin(pid_t pid, int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (pid == 0) return sched_setaffinity(0, sizeof set, &set);
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    DIR *d = opendir(path);
    if (!d) return -1;
    struct dirent *e;
    int r = 0;
    while ((e = readdir(d)) != NULL)
        if (e->d_name[0] != '.' && sched_setaffinity(atoi(e->d_name), sizeof set, &set) != 0)
            r = -1;
    closedir(d);
    return r;
}

/* The first two CPUs this program may run on into *a and *b: 1, or 0
 * when there are fewer (*a the one, if any). */
static inline int bench_two_cpus(int *a, int *b)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) != 0) return 0;
    int n = 0;
    for (int i = 0; i < CPU_SETSIZE && n < 2; i++)
        if (CPU_ISSET(i, &set)) {
            if (n == 0) *a = i;
            else *b = i;
            n++;
        }
    return n == 2;
}

/* The 1, 5 and 15 minute load averages, or "unknown". */
static inline void bench_loadavg(char *out, size_t cap)
{
    double l[3];
    FILE *f = fopen("/proc/loadavg", "r");
    if (f && fscanf(f, "%lf %lf %lf", &l[0], &l[1], &l[2]) == 3)
        snprintf(out, cap, "%.2f %.2f %.2f", l[0], l[1], l[2]);
    else
        snprintf(out, cap, "unknown");
    if (f) fclose(f);
}

#endif

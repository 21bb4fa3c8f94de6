/*
 * Process-table and self-resource probes for the C tests (Linux /proc; C99 + POSIX).
 *
 *   proc_client_pid(c)        the agent's pid, from omprpc_client_info (0 if unknown)
 *   proc_group_left(pgid, b)  how many processes still carry process group `pgid` (the agent
 *                             leads its own group, so pgid == its pid); zombies count, since an
 *                             unreaped child is a leak too. `b` receives "pid:state …".
 *   proc_pid_left(pid)        1 while `pid` exists (zombie included), 0 once it is gone
 *   proc_children_left(b, n)  children of this process, running or zombie
 *   proc_wait_gone(pgid, ms)  polls proc_group_left until 0 or `ms` passed; the count left
 *   proc_self_threads(), proc_self_fds(), proc_self_kb("VmRSS:" | "VmHWM:")
 */
#ifndef OMPRPC_TEST_PROC_H
#define OMPRPC_TEST_PROC_H

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "omprpc.h"
#include "json.h"

static inline long proc_client_pid(omprpc_client *c) {
    char *out = NULL, *err = NULL;
    long pid = 0;
    if (omprpc_client_info(c, &out, &err) == OMPRPC_STATUS_OK) {
        jval *v = json_parse(out);
        int ok = 0;
        double d = jnum(jget(v, "pid"), &ok);
        if (ok) pid = (long)d;
        json_free(v);
    }
    if (out) omprpc_string_free(out);
    if (err) omprpc_string_free(err);
    return pid;
}

/* Reads /proc/<pid>/stat: state, parent and process group. 0 if the process does not exist. */
static inline int proc_stat(const char *pid, char *state, long *ppid, long *pgrp) {
    char path[300], buf[1024];
    FILE *f;
    size_t n;
    char *rp;
    snprintf(path, sizeof path, "/proc/%s/stat", pid);
    f = fopen(path, "r");
    if (!f) return 0;
    n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    /* "pid (comm) S ppid pgrp …": comm may hold spaces and parentheses, so parse after the last ')' */
    rp = strrchr(buf, ')');
    if (!rp || sscanf(rp + 1, " %c %ld %ld", state, ppid, pgrp) != 3) return 0;
    return 1;
}

/* How many processes have `want` as their process group (by_group) or parent (!by_group);
 * `desc` receives "pid:state …". */
static inline int proc_count(int by_group, long want, char *desc, size_t cap) {
    DIR *d = opendir("/proc");
    struct dirent *e;
    int left = 0;
    if (desc && cap) desc[0] = '\0';
    if (!d || want <= 0) {
        if (d) closedir(d);
        return 0;
    }
    while ((e = readdir(d)) != NULL) {
        char state = '?';
        long ppid = 0, pgrp = 0;
        if (!isdigit((unsigned char)e->d_name[0])) continue;
        if (!proc_stat(e->d_name, &state, &ppid, &pgrp) || (by_group ? pgrp : ppid) != want) continue;
        left++;
        if (desc && strlen(desc) + 32 < cap) {
            size_t k = strlen(desc);
            snprintf(desc + k, cap - k, "%s%s:%c", k ? " " : "", e->d_name, state);
        }
    }
    closedir(d);
    return left;
}

static inline int proc_group_left(long pgid, char *desc, size_t cap) { return proc_count(1, pgid, desc, cap); }

/* Children of this process (running or zombie): every agent is one, so 0 once all are reaped. */
static inline int proc_children_left(char *desc, size_t cap) { return proc_count(0, (long)getpid(), desc, cap); }

static inline int proc_pid_left(long pid) {
    char name[32], state;
    long ppid, pgrp;
    if (pid <= 0) return 0;
    snprintf(name, sizeof name, "%ld", pid);
    return proc_stat(name, &state, &ppid, &pgrp);
}

static inline int proc_wait_gone(long pgid, long ms) {
    struct timespec ts = {0, 10 * 1000000L};
    long waited = 0;
    int left;
    while ((left = proc_group_left(pgid, NULL, 0)) > 0 && waited < ms) {
        nanosleep(&ts, NULL);
        waited += 10;
    }
    return left;
}

static inline long proc_self_kb(const char *key) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long v = -1;
    size_t k = strlen(key);
    if (!f) return -1;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, key, k)) {
            v = atol(line + k);
            break;
        }
    fclose(f);
    return v;
}

static inline long proc_self_threads(void) { return proc_self_kb("Threads:"); }

static inline long proc_self_fds(void) {
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    long n = 0;
    if (!d) return -1;
    while ((e = readdir(d)) != NULL)
        if (isdigit((unsigned char)e->d_name[0])) n++;
    closedir(d);
    return n - 1; /* the directory stream's own descriptor */
}

#endif /* OMPRPC_TEST_PROC_H */

/*
 * Process-table and self-resource probes for the C tests: Linux's /proc (C99 + POSIX), and on
 * Windows the ToolHelp snapshot, process handles and the process's own counters.
 *
 *   proc_client_pid(c)        the agent's pid, from omprpc_client_info (0 if unknown); Windows
 *                             keeps a handle to it, so that the pid stays the agent's
 *   proc_group_left(pgid, b)  how many of the agent's processes are left. POSIX: the processes
 *                             that carry process group `pgid` (the agent leads its own group,
 *                             so pgid == its pid); zombies count, since an unreaped child is a
 *                             leak too. Windows (no process groups: the library puts the agent
 *                             in a Job object, which tests cannot see): the agent `pgid` and
 *                             every process it started, and they started, still running.
 *                             `b` receives "pid:state …" (Windows: "pid:R:image …").
 *   proc_pid_left(pid)        1 while `pid` exists (zombie included), 0 once it is gone
 *                             (Windows: while it runs)
 *   proc_kill(pid)            SIGKILL / TerminateProcess: a test's last resort, never its check
 *   proc_children_left(b, n)  children of this process, running or zombie
 *   proc_wait_gone(pgid, ms)  polls proc_group_left until 0 or `ms` passed; the count left
 *   proc_self_threads(), proc_self_fds() (Windows: handles, less those the probes keep),
 *   proc_self_kb("VmRSS:" | "VmHWM:")
 *                             (Windows: the working set and its peak)
 */
#ifndef OMPRPC_TEST_PROC_H
#define OMPRPC_TEST_PROC_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "omprpc.h"
#include "json.h"
#include "platform.h"

#ifndef _WIN32

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <sys/types.h>
#include <unistd.h>

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

static inline void proc_kill(long pid) {
    if (pid > 0) kill((pid_t)pid, SIGKILL);
}

/* Nothing to keep: a pid stays its process's until that is reaped (zombies count as left). */
static inline void proc_remember(long pid) { (void)pid; }

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

#endif /* !_WIN32 */

#ifdef _WIN32

#include <psapi.h>
#include <tlhelp32.h>

/* Windows gives the pid of an ended process to a new one as soon as no handle holds the old
 * one (Wine at once), so an agent's pid read from its client's info may name another process by
 * the time it is checked (another test program's agent, say). proc_client_pid keeps a handle to
 * every agent it reports, which keeps that pid the agent's for the rest of the program. These
 * handles are the probes', not the library's: proc_self_fds leaves them out. */
#define PROC_WIN_PINS 4096
static struct {
    DWORD pid;
    HANDLE handle;
} proc_win_pins[PROC_WIN_PINS];
static long proc_win_npins;
static SRWLOCK proc_win_pins_lock = SRWLOCK_INIT;

static inline void proc_remember(long pid) {
    HANDLE h;
    long i;
    if (pid <= 0) return;
    AcquireSRWLockExclusive(&proc_win_pins_lock);
    for (i = 0; i < proc_win_npins && proc_win_pins[i].pid != (DWORD)pid; i++) {
    }
    if (i == proc_win_npins && i < PROC_WIN_PINS
        && (h = OpenProcess(SYNCHRONIZE | PROCESS_QUERY_LIMITED_INFORMATION, FALSE, (DWORD)pid)) != NULL) {
        proc_win_pins[i].pid = (DWORD)pid;
        proc_win_pins[i].handle = h;
        proc_win_npins++;
    }
    ReleaseSRWLockExclusive(&proc_win_pins_lock);
}

/* Whether process `pid` runs (its handle is not signalled); its creation time into *created. A
 * remembered agent is asked through its own handle. */
static inline int proc_win_running(DWORD pid, ULONGLONG *created) {
    HANDLE h = NULL, pinned = NULL;
    FILETIME c, e, k, u;
    long i;
    int running;
    if (created) *created = 0;
    AcquireSRWLockShared(&proc_win_pins_lock);
    for (i = 0; i < proc_win_npins; i++)
        if (proc_win_pins[i].pid == pid) pinned = proc_win_pins[i].handle;
    ReleaseSRWLockShared(&proc_win_pins_lock);
    h = pinned ? pinned : OpenProcess(SYNCHRONIZE | PROCESS_QUERY_LIMITED_INFORMATION, FALSE, pid);
    if (!h) return 0;
    running = WaitForSingleObject(h, 0) == WAIT_TIMEOUT;
    if (created && GetProcessTimes(h, &c, &e, &k, &u))
        *created = (ULONGLONG)c.dwHighDateTime << 32 | c.dwLowDateTime;
    if (!pinned) CloseHandle(h);
    return running;
}

static inline int proc_pid_left(long pid) { return pid > 0 && proc_win_running((DWORD)pid, NULL); }

static inline void proc_kill(long pid) {
    HANDLE h = pid > 0 ? OpenProcess(PROCESS_TERMINATE, FALSE, (DWORD)pid) : NULL;
    if (h) {
        TerminateProcess(h, 1);
        CloseHandle(h);
    }
}

/* The running processes descended from `root` (by parent pid, at most `depth` generations; root
 * itself counted when `with_root`). A process is taken for a child only when it was not created
 * before its parent: Windows reuses the pid of a process that has ended, and a snapshot keeps
 * the parent pid of an orphan. Ended processes still in the snapshot are walked through, not
 * counted. */
#define PROC_WIN_MAX 4096
static inline int proc_tree_left(long root, int with_root, int depth, char *desc, size_t cap) {
    /* large for a thread's stack: static, one probe at a time */
    static DWORD pids[PROC_WIN_MAX], parents[PROC_WIN_MAX], member[PROC_WIN_MAX];
    static char names[PROC_WIN_MAX][48];
    static int member_at[PROC_WIN_MAX]; /* its index in the snapshot; -1: not in it */
    static ULONGLONG member_created[PROC_WIN_MAX];
    static int in_tree[PROC_WIN_MAX], member_gen[PROC_WIN_MAX], member_runs[PROC_WIN_MAX];
    static SRWLOCK lock = SRWLOCK_INIT;
    PROCESSENTRY32 pe;
    HANDLE snap;
    int n = 0, members, grew = 1, left = 0, i, j;
    if (desc && cap) desc[0] = '\0';
    if (root <= 0) return 0;
    snap = CreateToolhelp32Snapshot(TH32CS_SNAPPROCESS, 0);
    if (snap == INVALID_HANDLE_VALUE) return 0;
    AcquireSRWLockExclusive(&lock);
    pe.dwSize = sizeof pe;
    if (Process32First(snap, &pe)) {
        do {
            pids[n] = pe.th32ProcessID;
            parents[n] = pe.th32ParentProcessID;
            snprintf(names[n], sizeof names[n], "%s", pe.szExeFile);
            in_tree[n] = pe.th32ProcessID == (DWORD)root;
            n++;
        } while (n < PROC_WIN_MAX && Process32Next(snap, &pe));
    }
    CloseHandle(snap);
    member[0] = (DWORD)root;
    member_at[0] = -1;
    for (i = 0; i < n; i++)
        if (pids[i] == (DWORD)root) member_at[0] = i;
    member_runs[0] = proc_win_running((DWORD)root, &member_created[0]);
    member_gen[0] = 0;
    members = 1;
    while (grew) {
        grew = 0;
        for (i = 0; i < n; i++) {
            if (in_tree[i]) continue;
            for (j = 0; j < members; j++) {
                ULONGLONG created;
                int runs;
                if (parents[i] != member[j] || member_gen[j] >= depth) continue;
                runs = proc_win_running(pids[i], &created);
                if (created && member_created[j] && created < member_created[j]) break;
                in_tree[i] = 1;
                member[members] = pids[i];
                member_at[members] = i;
                member_created[members] = created;
                member_gen[members] = member_gen[j] + 1;
                member_runs[members] = runs;
                members++;
                grew = 1;
                break;
            }
        }
    }
    for (j = with_root ? 0 : 1; j < members; j++) {
        if (!member_runs[j]) continue;
        left++;
        if (desc && strlen(desc) + 32 < cap) {
            size_t k = strlen(desc);
            snprintf(desc + k, cap - k, "%s%lu:R:%s", k ? " " : "", (unsigned long)member[j],
                     member_at[j] >= 0 ? names[member_at[j]] : "?");
        }
    }
    ReleaseSRWLockExclusive(&lock);
    return left;
}

static inline int proc_group_left(long pgid, char *desc, size_t cap) {
    return proc_tree_left(pgid, 1, PROC_WIN_MAX, desc, cap);
}

static inline int proc_children_left(char *desc, size_t cap) {
    return proc_tree_left((long)GetCurrentProcessId(), 0, 1, desc, cap);
}

static inline long proc_self_threads(void) {
    HANDLE snap = CreateToolhelp32Snapshot(TH32CS_SNAPTHREAD, 0);
    THREADENTRY32 te;
    DWORD self = GetCurrentProcessId();
    long n = 0;
    if (snap == INVALID_HANDLE_VALUE) return -1;
    te.dwSize = sizeof te;
    if (Thread32First(snap, &te)) {
        do {
            if (te.th32OwnerProcessID == self) n++;
        } while (Thread32Next(snap, &te));
    }
    CloseHandle(snap);
    return n;
}

/* Handles stand for descriptors: pipes, events, processes, threads, jobs. GetProcessHandleCount
 * first. Wine answers it with 0 (a stub), so then each handle value is asked for in turn
 * (GetHandleInformation), up to a long run of unused ones: Windows and Wine give out the lowest
 * free value, in steps of 4. Not NtQuerySystemInformation's list of every process's handles:
 * that request crashed Wine 8.0's wineserver (SIGSEGV walking a process's handle table) while
 * the load test started and ended its agents, which froze every program of the prefix. */
static inline long proc_self_fds_all(void) {
    DWORD n = 0, flags;
    ULONG_PTR value;
    long count = 0;
    int unused = 0;
    if (GetProcessHandleCount(GetCurrentProcess(), &n) && n > 0) return (long)n;
    for (value = 4; unused < 256; value += 4) {
        if (GetHandleInformation((HANDLE)value, &flags)) {
            count++;
            unused = 0;
        } else {
            unused++;
        }
    }
    return count;
}

static inline long proc_self_fds(void) {
    long n = proc_self_fds_all(), pins;
    AcquireSRWLockShared(&proc_win_pins_lock);
    pins = proc_win_npins;
    ReleaseSRWLockShared(&proc_win_pins_lock);
    return n < 0 ? n : n - pins;
}

static inline long proc_self_kb(const char *key) {
    PROCESS_MEMORY_COUNTERS pmc;
    if (!strcmp(key, "Threads:")) return proc_self_threads();
    if (!GetProcessMemoryInfo(GetCurrentProcess(), &pmc, sizeof pmc)) return -1;
    if (!strcmp(key, "VmRSS:")) return (long)(pmc.WorkingSetSize / 1024);
    if (!strcmp(key, "VmHWM:")) return (long)(pmc.PeakWorkingSetSize / 1024);
    return -1;
}

#endif /* _WIN32 */

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
    proc_remember(pid);
    return pid;
}

static inline int proc_wait_gone(long pgid, long ms) {
    long waited = 0;
    int left;
    while ((left = proc_group_left(pgid, NULL, 0)) > 0 && waited < ms) {
        plat_sleep_ms(10);
        waited += 10;
    }
    return left;
}

#endif /* OMPRPC_TEST_PROC_H */

/*
 * Makes the broker's disk slow on demand (the `slow-disk` fault). Preloaded into the broker JVM beside the
 * sync journal, the clock shift and the full disk, it wraps the libc calls that make a file durable (fsync,
 * fdatasync) and, in `write` mode, those that add bytes to it (write, pwrite, writev, pwritev), and while
 * the disk counts as slow sleeps before each such call on a file under the log dirs ($KCHAOS_DISK_DIRS,
 * colon-separated), as a failing or saturated disk answers: late, but with the bytes. Everything else (the
 * JVM's own output, files outside the log dirs, an index's memory mapping) goes through untouched.
 *
 * How slow is read from $KCHAOS_SLOW_DISK, a file of one line `MODE MS TAIL_MS TAIL_PERCENT`: MODE `sync`
 * (only the syncs) or `write` (the writes too), MS milliseconds before every call, and TAIL_PERCENT percent
 * of them TAIL_MS instead (a distribution with a tail, as a disk's latency has); an empty or missing file,
 * or MS and TAIL_MS both 0, is a healthy disk. The file is looked at at most every CHECK_NS, so a call
 * costs one atomic load while the disk is healthy. Every delayed call is counted; on each look the count
 * and the first delayed call (`CALL PATH`) are written to $KCHAOS_SLOW_DISK_HIT, so the harness knows the
 * broker met the slow disk, not only that a flag was set.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "logdirs.h"

#define CHECK_NS 100000000LL /* how often the flag file is looked at: 0.1 s */

enum { HEALTHY = 0, SLOW_SYNC = 1, SLOW_WRITE = 2 };

static atomic_int mode = HEALTHY;
static atomic_long delay_ms = 0;
static atomic_long tail_ms = 0;
static atomic_long tail_percent = 0;
static atomic_llong next_check = 0;
static atomic_llong delayed = 0;
static atomic_llong delayed_noted = -1;
static atomic_uint seed = 12345;
static char first_hit[PATH_MAX + 32];
static atomic_int first_claimed = 0;
static atomic_int first_taken = 0;

static void *next(const char *name) { return dlsym(RTLD_NEXT, name); }

static long long monotonic_ns(void) {
    struct timespec ts;
    if (clock_gettime(CLOCK_MONOTONIC_COARSE, &ts) != 0) return 0;
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Writes the count of delayed calls and the first one to the hit file, when the count changed. */
static void note_hits(void) {
    long long count = atomic_load(&delayed);
    if (count == atomic_load(&delayed_noted)) return;
    const char *out = getenv("KCHAOS_SLOW_DISK_HIT");
    if (out == NULL || *out == '\0') return;
    int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return;
    char line[PATH_MAX + 96];
    int n = snprintf(line, sizeof line, "%lld %s\n", count, atomic_load(&first_taken) ? first_hit : "-");
    ssize_t (*real_write)(int, const void *, size_t) = next("write");
    if (real_write != NULL && n > 0) real_write(fd, line, (size_t)n);
    close(fd);
    atomic_store(&delayed_noted, count);
}

/* Reads the flag file; called by one thread at a time. A new slow spell starts its count afresh. */
static void reload(void) {
    const char *path = getenv("KCHAOS_SLOW_DISK");
    char text[128] = {0};
    if (path != NULL && *path != '\0') {
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
            ssize_t (*real_read)(int, void *, size_t) = next("read");
            if (real_read != NULL) real_read(fd, text, sizeof text - 1);
            close(fd);
        }
    }
    char word[16] = {0};
    long ms = 0, tail = 0, percent = 0;
    int now = HEALTHY;
    if (sscanf(text, "%15s %ld %ld %ld", word, &ms, &tail, &percent) >= 2 && (ms > 0 || tail > 0)) {
        now = strcmp(word, "write") == 0 ? SLOW_WRITE : strcmp(word, "sync") == 0 ? SLOW_SYNC : HEALTHY;
    }
    if (now != HEALTHY && atomic_load(&mode) == HEALTHY) {
        atomic_store(&delayed, 0);
        atomic_store(&delayed_noted, -1);
        atomic_store(&first_taken, 0);
        atomic_store(&first_claimed, 0);
    }
    atomic_store(&delay_ms, ms);
    atomic_store(&tail_ms, tail);
    atomic_store(&tail_percent, percent);
    atomic_store(&mode, now);
    note_hits();
}

static int current_mode(void) {
    long long now = monotonic_ns();
    long long due = atomic_load(&next_check);
    if (now >= due && atomic_compare_exchange_strong(&next_check, &due, now + CHECK_NS)) reload();
    return atomic_load(&mode);
}

/* Sleeps before a call on `fd` when the disk is slow for calls of its kind (`writes`: a write, else a
 * sync) and `fd` is a file under the log dirs. */
static void slow_down(int fd, int writes, const char *call) {
    int now = current_mode();
    if (now == HEALTHY || (writes && now != SLOW_WRITE)) return;
    char link[64], path[PATH_MAX];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, path, sizeof path - 1);
    if (n <= 0) return;
    path[n] = '\0';
    if (!under_dirs(path, getenv("KCHAOS_DISK_DIRS"))) return;
    long ms = atomic_load(&delay_ms);
    unsigned draw = atomic_fetch_add(&seed, 2654435761u) * 2246822519u;
    long percent = atomic_load(&tail_percent);
    if (percent > 0 && (long)(draw % 100u) < percent) ms = atomic_load(&tail_ms);
    if (!atomic_exchange(&first_claimed, 1)) {
        snprintf(first_hit, sizeof first_hit, "%s %s", call, path);
        atomic_store(&first_taken, 1);
    }
    atomic_fetch_add(&delayed, 1);
    if (ms <= 0) return;
    int saved = errno;
    struct timespec wait = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&wait, &wait) != 0 && errno == EINTR) {
    }
    errno = saved;
}

int fsync(int fd) {
    static int (*real)(int);
    if (!real) real = next("fsync");
    slow_down(fd, 0, "fsync");
    return real(fd);
}

int fdatasync(int fd) {
    static int (*real)(int);
    if (!real) real = next("fdatasync");
    slow_down(fd, 0, "fdatasync");
    return real(fd);
}

ssize_t write(int fd, const void *buf, size_t count) {
    static ssize_t (*real)(int, const void *, size_t);
    if (!real) real = next("write");
    slow_down(fd, 1, "write");
    return real(fd, buf, count);
}

ssize_t pwrite(int fd, const void *buf, size_t count, off_t offset) {
    static ssize_t (*real)(int, const void *, size_t, off_t);
    if (!real) real = next("pwrite");
    slow_down(fd, 1, "pwrite");
    return real(fd, buf, count, offset);
}

ssize_t pwrite64(int fd, const void *buf, size_t count, off_t offset) {
    static ssize_t (*real)(int, const void *, size_t, off_t);
    if (!real) real = next("pwrite64");
    slow_down(fd, 1, "pwrite64");
    return real(fd, buf, count, offset);
}

ssize_t writev(int fd, const struct iovec *iov, int iovcnt) {
    static ssize_t (*real)(int, const struct iovec *, int);
    if (!real) real = next("writev");
    slow_down(fd, 1, "writev");
    return real(fd, iov, iovcnt);
}

ssize_t pwritev(int fd, const struct iovec *iov, int iovcnt, off_t offset) {
    static ssize_t (*real)(int, const struct iovec *, int, off_t);
    if (!real) real = next("pwritev");
    slow_down(fd, 1, "pwritev");
    return real(fd, iov, iovcnt, offset);
}

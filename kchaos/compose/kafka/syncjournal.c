/*
 * Records what a process made durable, so a power loss can be simulated afterwards (the `power-loss`
 * fault). Loaded into the broker JVM with LD_PRELOAD, it wraps the libc calls that make file contents
 * durable or change which file a name holds, and appends one line per call that succeeded to a journal:
 *
 *   fsync <path> <size>        fsync/fdatasync: the file's first <size> bytes are on disk
 *   msync <path> <size>        msync of a mapping of <path> (Kafka's index files)
 *   ftruncate <path> <size>    the file was cut (or grown) to <size>: nothing above it is durable
 *   rename <from> <to>         the name <to> now holds what <from> held (checkpoints: write, fsync, rename)
 *   unlink <path>              the name is gone; a file created under it later starts with nothing durable
 *   create <path> -            a new name: a file opened with O_CREAT that did not exist, or a directory
 *   dirsync <dir> -            fsync of a directory: the names created in it so far are durable
 *
 * The last two let a power loss also lose directory entries (`power-loss:dirents=lost`): POSIX makes a new
 * name durable only once its directory is synced, so a file fsynced in full can still vanish if it was
 * created after its directory's last sync (what KAFKA-3968 fixed for new segments in Kafka 3.0).
 *
 * Only paths under $KCHAOS_SYNC_DIRS (colon-separated; the broker's log dirs) are recorded. The journal
 * ($KCHAOS_SYNC_JOURNAL) lives outside them, so the simulated power loss never cuts it. Each line is one
 * write(2) to a file opened with O_APPEND, so lines from concurrent threads never interleave, and a line
 * is written only after the wrapped call returned success: the journal never claims more than the kernel
 * was asked to make durable.
 *
 * Java reaches these through libnio's FileChannel.force (fsync/fdatasync), MappedByteBuffer.force (msync),
 * FileChannel.truncate / RandomAccessFile.setLength (ftruncate64) and Files.move/delete (rename, unlink).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdarg.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "logdirs.h"

static atomic_int journal_fd = -1;
static char dirs[4096];
static atomic_int dirs_read = 0;

static void *next(const char *name) { return dlsym(RTLD_NEXT, name); }

static void read_dirs(void) {
    if (atomic_load(&dirs_read)) return;
    const char *env = getenv("KCHAOS_SYNC_DIRS");
    snprintf(dirs, sizeof dirs, "%s", env ? env : "");
    atomic_store(&dirs_read, 1);
}

/* Whether `path` lies under one of the watched directories (or is one). */
static int watched(const char *path) {
    read_dirs();
    return under_dirs(path, dirs);
}

static int journal(void) {
    int fd = atomic_load(&journal_fd);
    if (fd >= 0) return fd;
    const char *path = getenv("KCHAOS_SYNC_JOURNAL");
    if (!path || !*path) return -1;
    int opened = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (opened < 0) return -1;
    int expected = -1;
    if (!atomic_compare_exchange_strong(&journal_fd, &expected, opened)) {
        close(opened); /* another thread opened it first */
        return expected;
    }
    return opened;
}

/* Appends "<op> <path> <rest>"; the caller has checked that the call touched a watched path. */
static void record(const char *op, const char *path, const char *rest) {
    int fd = journal();
    if (fd < 0) return;
    char line[2 * PATH_MAX + 64];
    int n = snprintf(line, sizeof line, "%s %s %s\n", op, path, rest);
    if (n <= 0 || (size_t)n >= sizeof line) return;
    ssize_t ignored = write(fd, line, (size_t)n);
    (void)ignored;
}

static int fd_path(int fd, char *out, size_t size) {
    char link[64];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, out, size - 1);
    if (n <= 0) return -1;
    out[n] = '\0';
    return 0;
}

/* Records `op` with the regular file's size; a sync (`synced`) of a directory is recorded as a dirsync. */
static void record_fd(const char *op, int fd, int synced) {
    int saved = errno;
    char path[PATH_MAX];
    struct stat st;
    if (fd_path(fd, path, sizeof path) == 0 && watched(path) && fstat(fd, &st) == 0) {
        if (S_ISREG(st.st_mode)) {
            char size[32];
            snprintf(size, sizeof size, "%lld", (long long)st.st_size);
            record(op, path, size);
        } else if (synced && S_ISDIR(st.st_mode)) {
            record("dirsync", path, "-");
        }
    }
    errno = saved;
}

/* An absolute path for `path` relative to `dirfd` (AT_FDCWD: the working directory). */
static int absolute(int dirfd, const char *path, char *out, size_t size) {
    if (path[0] == '/') {
        snprintf(out, size, "%s", path);
        return 0;
    }
    char base[PATH_MAX];
    if (dirfd == AT_FDCWD) {
        if (!getcwd(base, sizeof base)) return -1;
    } else if (fd_path(dirfd, base, sizeof base) != 0) {
        return -1;
    }
    snprintf(out, size, "%s/%s", base, path);
    return 0;
}

int fsync(int fd) {
    static int (*real)(int);
    if (!real) real = next("fsync");
    int result = real(fd);
    if (result == 0) record_fd("fsync", fd, 1);
    return result;
}

int fdatasync(int fd) {
    static int (*real)(int);
    if (!real) real = next("fdatasync");
    int result = real(fd);
    if (result == 0) record_fd("fsync", fd, 1);
    return result;
}

int ftruncate(int fd, off_t length) {
    static int (*real)(int, off_t);
    if (!real) real = next("ftruncate");
    int result = real(fd, length);
    if (result == 0) record_fd("ftruncate", fd, 0);
    return result;
}

int ftruncate64(int fd, off64_t length) {
    static int (*real)(int, off64_t);
    if (!real) real = next("ftruncate64");
    int result = real(fd, length);
    if (result == 0) record_fd("ftruncate", fd, 0);
    return result;
}

/* The file mapped at `addr`, from /proc/self/maps. */
static int mapped_path(void *addr, char *out, size_t size) {
    FILE *maps = fopen("/proc/self/maps", "re");
    if (!maps) return -1;
    char line[PATH_MAX + 256];
    int found = -1;
    uintptr_t at = (uintptr_t)addr;
    while (fgets(line, sizeof line, maps)) {
        unsigned long lo, hi;
        int name_at = 0;
        if (sscanf(line, "%lx-%lx %*s %*s %*s %*s %n", &lo, &hi, &name_at) < 2 || name_at == 0) continue;
        if (at < lo || at >= hi) continue;
        char *name = line + name_at;
        name[strcspn(name, "\n")] = '\0';
        if (name[0] == '/') {
            snprintf(out, size, "%s", name);
            found = 0;
        }
        break;
    }
    fclose(maps);
    return found;
}

int msync(void *addr, size_t length, int flags) {
    static int (*real)(void *, size_t, int);
    if (!real) real = next("msync");
    int result = real(addr, length, flags);
    if (result == 0 && (flags & MS_SYNC)) {
        int saved = errno;
        char path[PATH_MAX];
        struct stat st;
        if (mapped_path(addr, path, sizeof path) == 0 && watched(path) && stat(path, &st) == 0
            && S_ISREG(st.st_mode)) {
            char size[32];
            snprintf(size, sizeof size, "%lld", (long long)st.st_size);
            record("msync", path, size);
        }
        errno = saved;
    }
    return result;
}

static void record_rename(int olddirfd, const char *oldpath, int newdirfd, const char *newpath) {
    int saved = errno;
    char from[PATH_MAX], to[PATH_MAX];
    if (absolute(olddirfd, oldpath, from, sizeof from) == 0 && absolute(newdirfd, newpath, to, sizeof to) == 0
        && (watched(from) || watched(to)))
        record("rename", from, to);
    errno = saved;
}

int rename(const char *oldpath, const char *newpath) {
    static int (*real)(const char *, const char *);
    if (!real) real = next("rename");
    int result = real(oldpath, newpath);
    if (result == 0) record_rename(AT_FDCWD, oldpath, AT_FDCWD, newpath);
    return result;
}

int renameat(int olddirfd, const char *oldpath, int newdirfd, const char *newpath) {
    static int (*real)(int, const char *, int, const char *);
    if (!real) real = next("renameat");
    int result = real(olddirfd, oldpath, newdirfd, newpath);
    if (result == 0) record_rename(olddirfd, oldpath, newdirfd, newpath);
    return result;
}

int renameat2(int olddirfd, const char *oldpath, int newdirfd, const char *newpath, unsigned int flags) {
    static int (*real)(int, const char *, int, const char *, unsigned int);
    if (!real) real = next("renameat2");
    int result = real(olddirfd, oldpath, newdirfd, newpath, flags);
    if (result == 0) record_rename(olddirfd, oldpath, newdirfd, newpath);
    return result;
}

static void record_unlink(int dirfd, const char *path) {
    int saved = errno;
    char full[PATH_MAX];
    if (absolute(dirfd, path, full, sizeof full) == 0 && watched(full)) record("unlink", full, "-");
    errno = saved;
}

int unlink(const char *path) {
    static int (*real)(const char *);
    if (!real) real = next("unlink");
    int result = real(path);
    if (result == 0) record_unlink(AT_FDCWD, path);
    return result;
}

int unlinkat(int dirfd, const char *path, int flags) {
    static int (*real)(int, const char *, int);
    if (!real) real = next("unlinkat");
    int result = real(dirfd, path, flags);
    if (result == 0 && !(flags & AT_REMOVEDIR)) record_unlink(dirfd, path);
    return result;
}

/* Whether `full` is a name inside a watched directory that does not exist yet: asked before a create. */
static int new_name(const char *full) {
    struct stat st;
    return watched(full) && fstatat(AT_FDCWD, full, &st, AT_SYMLINK_NOFOLLOW) != 0;
}

/* Resolves `path` against `dirfd` into `full`; empty when it cannot be (nothing is recorded then). */
static void resolve(int dirfd, const char *path, char *full, size_t size) {
    if (absolute(dirfd, path, full, size) != 0) full[0] = '\0';
}

/* A mode argument follows the flags only when the call can create a file. */
#define CREATES(flags) (((flags) & O_CREAT) || (((flags) & O_TMPFILE) == O_TMPFILE))
#define MODE_ARG(flags, mode)                                         \
    do {                                                              \
        va_list args;                                                 \
        va_start(args, flags);                                        \
        mode = CREATES(flags) ? (mode_t)va_arg(args, int) : 0;        \
        va_end(args);                                                 \
    } while (0)

/* Before an open with O_CREAT: the absolute name when the open may create a watched name, else "". */
static void before_create(int dirfd, const char *path, int flags, char *full, size_t size) {
    int saved = errno;
    full[0] = '\0';
    if (flags & O_CREAT) {
        resolve(dirfd, path, full, size);
        if (full[0] && !new_name(full)) full[0] = '\0';
    }
    errno = saved;
}

static void after_create(int result, const char *full) {
    if (result >= 0 && full[0]) {
        int saved = errno;
        record("create", full, "-");
        errno = saved;
    }
}

/* The open family, each wrapped alike: `open`/`open64` name a path, `openat`/`openat64` one relative to a
 * directory descriptor (COMMA puts the comma after it inside the macro's argument). */
#define WRAP_OPEN(fn, DIRFD_PARAM, DIRFD, DIRFD_ARG)                  \
    int fn(DIRFD_PARAM const char *path, int flags, ...) {            \
        static int (*real)(DIRFD_PARAM const char *, int, ...);       \
        if (!real) real = next(#fn);                                  \
        mode_t mode;                                                  \
        MODE_ARG(flags, mode);                                        \
        char full[PATH_MAX];                                          \
        before_create(DIRFD, path, flags, full, sizeof full);         \
        int fd = real(DIRFD_ARG path, flags, mode);                   \
        after_create(fd, full);                                       \
        return fd;                                                    \
    }
#define NO_DIRFD
#define COMMA ,
WRAP_OPEN(open, NO_DIRFD, AT_FDCWD, NO_DIRFD)
WRAP_OPEN(open64, NO_DIRFD, AT_FDCWD, NO_DIRFD)
WRAP_OPEN(openat, int dirfd COMMA, dirfd, dirfd COMMA)
WRAP_OPEN(openat64, int dirfd COMMA, dirfd, dirfd COMMA)

int mkdir(const char *path, mode_t mode) {
    static int (*real)(const char *, mode_t);
    if (!real) real = next("mkdir");
    char full[PATH_MAX];
    before_create(AT_FDCWD, path, O_CREAT, full, sizeof full);
    int result = real(path, mode);
    after_create(result, full);
    return result;
}

int mkdirat(int dirfd, const char *path, mode_t mode) {
    static int (*real)(int, const char *, mode_t);
    if (!real) real = next("mkdirat");
    char full[PATH_MAX];
    before_create(dirfd, path, O_CREAT, full, sizeof full);
    int result = real(dirfd, path, mode);
    after_create(result, full);
    return result;
}

/*
 * Whether a path lies under the broker's log dirs: the one question every library kchaos preloads into the
 * broker asks before it acts on a file (the sync journal records only what is under them, the full disk
 * fails only writes under them). The log dirs come from the entrypoint as a colon-separated list.
 */
#ifndef KCHAOS_LOGDIRS_H
#define KCHAOS_LOGDIRS_H

#include <string.h>

/* Whether `path` lies under one of `dirs` (colon-separated; trailing slashes ignored), or is one. */
static inline int under_dirs(const char *path, const char *dirs) {
    if (dirs == NULL) return 0;
    const char *start = dirs;
    while (*start) {
        const char *end = strchr(start, ':');
        size_t n = end ? (size_t)(end - start) : strlen(start);
        while (n > 1 && start[n - 1] == '/') n--;
        if (n > 0 && strncmp(path, start, n) == 0 && (path[n] == '/' || path[n] == '\0')) return 1;
        if (!end) break;
        start = end + 1;
    }
    return 0;
}

#endif

/* Files read through mmap can shrink under us: when another program truncates or rewrites an
 * input while fuserule reads it, touching a page past the file's new end raises SIGBUS, which
 * would kill the process with no word of why and leave its temporary outputs behind.
 *
 * Every read-only mapping of a file is watched here with its path. mw_install's handler, on a
 * SIGBUS inside a watched mapping, names the file, removes the temporary outputs being written,
 * and exits with the status of bad input (2). A SIGBUS anywhere else is a bug of ours and keeps
 * its default action (a core dump). The process is single-threaded where it maps files. */
#ifndef FUSERULE_BASE_MAPWATCH_H
#define FUSERULE_BASE_MAPWATCH_H

#include <stddef.h>

/* The exit status after an input shrank under us: the one of bad input. */
enum { MW_EXIT_STATUS = 2 };

/* Installs the SIGBUS handler; program is the name its message starts with ("fuserule"). */
void mw_install(const char *program);

/* [addr, addr + len) maps the file at path (copied); mw_forget(addr) ends the watch. */
void mw_watch(const void *addr, size_t len, const char *path);
void mw_forget(const void *addr);

/* path (copied) is a temporary output the handler removes; mw_temp_done once it was renamed into
 * place or removed. */
void mw_temp_begin(const char *path);
void mw_temp_done(const char *path);

/* What a failed write's errno means. A write() of bytes mapped from an input that shrank
 * meanwhile fails with EFAULT (the kernel's word for it, where reading them ourselves would raise
 * SIGBUS): that is said as such; any other errno as strerror says it. */
const char *mw_write_error(int err);

#endif

/* File paths as the loaders use them: a file's folder (what the paths written in it are relative
 * to) and its last component. Only '/' separates. */
#ifndef FUSERULE_BASE_PATH_H
#define FUSERULE_BASE_PATH_H

#include "base/arena.h"

/* What follows the last '/' of path (path itself when there is none). */
const char *path_base(const char *path);
/* The folder of path: "." when it has none, "/" for a file at the root. In arena, or malloc'd (the
 * caller frees) when arena is NULL. */
char *path_dir(ar_arena *arena, const char *path);
/* `rel` read from the folder of the file `of`: rel itself when it is absolute or `of` has no
 * folder. In arena, or malloc'd when arena is NULL. */
char *path_beside(ar_arena *arena, const char *of, const char *rel);

#endif

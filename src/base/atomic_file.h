/*
 * How a trace file is written whole or not at all (src/base/atomic_file.c).
 */
#ifndef DT_BASE_ATOMIC_FILE_H
#define DT_BASE_ATOMIC_FILE_H


#include <stddef.h>

#include "base/common.h"

/* How a trace is written to a path (src/base/atomic_file.c): absent or a
   regular file, into a temporary file beside it renamed into place; a
   character device (/dev/null) or a FIFO, in place; anything else is
   refused, with why (a phrase: "it is a directory") when why is not NULL. */
typedef enum { DT_OUTPUT_FILE, DT_OUTPUT_IN_PLACE, DT_OUTPUT_REFUSED } dt_output_kind;
DT_HIDDEN dt_output_kind dt__output_kind_of(const char *path, const char **why);

/* A new temporary file beside path, named path.tmp.<pid>[.<k>], opened
   for writing with O_CREAT | O_EXCL | O_CLOEXEC and mode 0644 (less the
   umask): never a file that was there before, nor one through a link. Its
   name goes to tmp (n bytes). The descriptor, or -1 with errno set. */
DT_HIDDEN int dt__open_beside(const char *path, char *tmp, size_t n);

/* For a handler of a signal that ends the process: removes the temporary
   file a write to a path in progress would leave behind (async-signal-safe;
   of writes from several threads at once, the first one's). */
DT_HIDDEN void dt__atomic_file_abandon(void);

#endif

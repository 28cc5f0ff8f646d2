/* The instructions of one callgrind dump, split by whose code ran them. */
#ifndef BENCH_CALLGRIND_SPLIT_H
#define BENCH_CALLGRIND_SPLIT_H

#include <stddef.h>
#include <stdint.h>

enum { CG_DEVTRACE, CG_EMULATOR, CG_PROGRAM, CG_PARTS };

/* Reads a dump written with --compress-strings=no --compress-pos=no. Each
   object's own instructions go to its part: libdevtrace's to CG_DEVTRACE,
   the object at emulator_path's (resolved) to CG_EMULATOR, any other's to
   CG_PROGRAM; then what devtrace and the emulator call in the other objects
   (libc, the loader: their calls' inclusive cost) moves from CG_PROGRAM to
   the caller's part. trigger receives the dump's trigger ("Client Request:
   NAME" for CALLGRIND_DUMP_STATS_AT). 0 on success. */
int cg_split(const char *path, const char *emulator_path, uint64_t ir[CG_PARTS], char *trigger,
             size_t trigger_size);

#endif

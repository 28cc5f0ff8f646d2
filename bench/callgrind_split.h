/* A benchmark's own run under callgrind, and the instructions of its dumps:
   whole, or split by whose code ran them. */
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

/* A dump's whole instruction count (its "summary:" or "totals:" line) and
   its trigger, as cg_split gives it. 0 on success. */
int cg_total(const char *path, uint64_t *ir, char *trigger, size_t trigger_size);

/* Runs this program again under callgrind, as
     valgrind --tool=callgrind --callgrind-out-file=DIR/cg.%p
              --compress-strings=no --compress-pos=no SELF ARGS...
   with env set (NAME, VALUE, NAME, VALUE, ..., NULL), its output in
   DIR/valgrind.log, DIR a new temporary folder named after tag. 0 with
   DIR in dir, the program's dumps in it (remove the folder after); -1 with
   why (no folder left). command receives the command line for the
   figures' text. */
int cg_run_self(const char *tag, char *const args[], const char *const env[], char *dir, size_t dir_size,
                char *command, size_t command_size, char *why, size_t why_size);

/* Calls each(user, path) for every dump in dir. */
void cg_each_dump(const char *dir, void (*each)(void *user, const char *path), void *user);
/* Removes a folder of plain files (cg_run_self's). */
void cg_remove_dir(const char *dir);

#endif

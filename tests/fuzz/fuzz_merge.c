/*
 * Fuzzes `devtrace merge` on arbitrary inputs: the bytes are cut into up
 * to four input traces at each "\n%%\n", written to files, and merged into
 * JSON, gzip JSON or Perfetto (chosen by the input's length). No input
 * may crash, hang or leak, and whenever merge says it wrote a JSON trace,
 * the reader must read that trace back without a single error.
 */
#include "cli/commands.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_INPUTS 4

static char dir[64];

static void remove_dir(void)
{
    rmdir(dir);
}

static int write_file(const char *path, const uint8_t *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    size_t w = fwrite(p, 1, n, f);
    return fclose(f) == 0 && w == n ? 0 : -1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static FILE *sink;
    if (!sink)
        sink = fopen("/dev/null", "w");
    if (!dir[0]) {
        snprintf(dir, sizeof dir, "/tmp/devtrace-fuzz-merge-XXXXXX");
        if (!mkdtemp(dir)) {
            dir[0] = '\0';
            return 0;
        }
        atexit(remove_dir);
    }
    if (!sink)
        return 0;

    static const char sep[] = "\n%%\n";
    char paths[MAX_INPUTS][96];
    const char *argv[MAX_INPUTS + 5];
    int argc = 0, n = 0;
    static const char *const outs[] = {"out.json", "out.json.gz", "out.pftrace"};
    const char *out_name = outs[size % 3];
    char out[96];
    snprintf(out, sizeof out, "%s/%s", dir, out_name);
    argv[argc++] = "merge";
    argv[argc++] = "-o";
    argv[argc++] = out;
    const uint8_t *p = data, *end = data + size;
    while (n < MAX_INPUTS) {
        const uint8_t *cut = NULL;
        for (const uint8_t *q = p; q + 4 <= end && n < MAX_INPUTS - 1; q++)
            if (memcmp(q, sep, 4) == 0) {
                cut = q;
                break;
            }
        const uint8_t *stop = cut ? cut : end;
        snprintf(paths[n], sizeof paths[n], "%s/in%d.json", dir, n);
        if (write_file(paths[n], p, (size_t)(stop - p)) != 0)
            return 0;
        argv[argc++] = paths[n++];
        if (!cut)
            break;
        p = cut + 4;
    }
    unlink(out);
    int rc = dt__merge_main(argc, (char **)argv, sink, sink);
    if (rc == 0 && !strstr(out_name, "pftrace")) {
        /* what merge wrote is a trace the reader reads */
        char err[512];
        dt_rd_source *src = dt__rd_open_file(out, err, sizeof err);
        if (!src)
            abort();
        dt_rd_summary sum;
        int read_rc = dt__rd_read(src, NULL, NULL, &sum, err, sizeof err);
        if (read_rc != 0) {
            fprintf(stderr, "merge wrote an unreadable trace: %s\n", err);
            abort();
        }
        dt__rd_summary_free(&sum);
        dt__rd_close(src);
    }
    unlink(out);
    for (int i = 0; i < n; i++)
        unlink(paths[i]);
    return 0;
}

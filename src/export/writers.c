/* The writer table (writers.h). */
#include "export/writers.h"

#include <string.h>

#include "base/gzip.h"

static const dt_writer writers[] = {
    {"json", DT_FORMAT_JSON, DT_FORMAT_JSON, ".json", NULL, 0, dt_wr_chrome},
    /* another .gz is JSON too */
    {"json.gz", DT_FORMAT_JSON_GZ, DT_FORMAT_JSON, ".json.gz", ".gz", 1, dt_wr_chrome},
    {"perfetto", DT_FORMAT_PERFETTO, DT_FORMAT_PERFETTO, ".pftrace", NULL, 0, dt_wr_perfetto},
    {"perfetto.gz", DT_FORMAT_PERFETTO_GZ, DT_FORMAT_PERFETTO, ".pftrace.gz", NULL, 1, dt_wr_perfetto},
};
#define WRITERS (sizeof writers / sizeof *writers)

const dt_writer *dt_wr_next(size_t *cursor)
{
    return *cursor < WRITERS ? &writers[(*cursor)++] : NULL;
}

const dt_writer *dt_wr_of_format(int format)
{
    for (size_t i = 0; i < WRITERS; i++)
        if ((int)writers[i].format == format)
            return &writers[i];
    return NULL;
}

const dt_writer *dt_wr_by_name(const char *name)
{
    for (size_t i = 0; name && i < WRITERS; i++)
        if (strcmp(name, writers[i].name) == 0)
            return &writers[i];
    return NULL;
}

static size_t ends_with(const char *path, size_t n, const char *suffix)
{
    size_t k = suffix ? strlen(suffix) : 0;
    return k > 0 && n > k && memcmp(path + n - k, suffix, k) == 0 ? k : 0;
}

const dt_writer *dt_wr_of_path(const char *path, size_t *suffix_len)
{
    const dt_writer *best = NULL;
    size_t best_len = 0, n = path ? strlen(path) : 0;
    for (size_t i = 0; i < WRITERS; i++) {
        size_t k = ends_with(path, n, writers[i].suffix), a = ends_with(path, n, writers[i].also);
        if (a > k)
            k = a;
        if (k > best_len) {
            best = &writers[i];
            best_len = k;
        }
    }
    if (suffix_len)
        *suffix_len = best_len;
    return best;
}

int dt_wr_available(const dt_writer *w)
{
    return w && (!w->gzip || dt_gzip_available());
}

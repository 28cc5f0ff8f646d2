/*
 * Fuzzes libdevtrace_columns (src/columns): a trace's events as Arrow
 * batches, the args it reads from an event's JSON text (grid, block,
 * collective, process group) and its two-pass step column, on arbitrary
 * bytes. No input may crash, hang or leak, and every batch it hands over
 * must be a well-formed Arrow struct array that pyarrow can import without
 * checking: each column as long as the batch, every dictionary code inside
 * its dictionary, every string's offsets inside its data, a part and a
 * flow flag that agree with the batch's summary, positions increasing.
 * With and without the step column the same rows must come out.
 */
#define _GNU_SOURCE 1
/* the library is one file: compiled into the target, as into libdevtrace_columns */
#include "columns/columns.c"
#include "columns/meta.c"

#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct seen {
    uint64_t rows, batches, next_index, hash;
} seen;

static void fail(const char *what)
{
    fprintf(stderr, "fuzz_columns: %s\n", what);
    abort();
}

static bool is_null(const struct ArrowArray *a, int64_t i)
{
    const uint8_t *valid = a->buffers[0];
    return valid && !(valid[(a->offset + i) / 8] >> ((a->offset + i) % 8) & 1);
}

/* A utf8 array's strings: offsets non-decreasing from 0, inside its data. */
static int64_t check_strings(const struct ArrowArray *d, uint64_t *hash)
{
    if (d->n_buffers != 3 || d->offset != 0 || d->length < 0)
        fail("a dictionary is not a utf8 array");
    const int32_t *off = d->buffers[1];
    const char *text = d->buffers[2];
    if (!off || off[0] != 0)
        fail("a dictionary's offsets do not start at 0");
    for (int64_t i = 0; i < d->length; i++) {
        if (off[i + 1] < off[i])
            fail("a dictionary's offsets go back");
        for (int32_t k = off[i]; k < off[i + 1]; k++)
            *hash = *hash * 31 + (unsigned char)text[k];
    }
    return d->length;
}

static int sink(void *user, const dt_col_batch *b)
{
    seen *s = user;
    const struct ArrowArray *st = b->array;
    if (!st || !st->release || st->n_children != DT_COL_C_COUNT || st->length != (int64_t)b->rows || b->rows == 0)
        fail("a batch's struct array does not match it");
    size_t flows = 0;
    for (int c = 0; c < DT_COL_C_COUNT; c++) {
        const struct ArrowArray *a = st->children[c];
        if (!a || a->length != st->length || a->offset != 0)
            fail("a column's length is not the batch's");
        int64_t nulls = 0;
        for (int64_t i = 0; i < a->length; i++)
            nulls += is_null(a, i);
        if (a->null_count != nulls || (nulls && !col_type[c].nullable))
            fail("a column's null count is wrong");
        if (col_type[c].type == T_DICT || col_type[c].type == T_KIND) {
            int64_t n = check_strings(a->dictionary, &s->hash);
            const int32_t *code = a->buffers[1];
            for (int64_t i = 0; i < a->length; i++)
                if (!is_null(a, i) && (code[i] < 0 || code[i] >= n))
                    fail("a dictionary code outside its dictionary");
            continue;
        }
        for (int64_t i = 0; i < a->length; i++) {
            if (is_null(a, i))
                continue;
            int64_t v = col_type[c].type == T_I64   ? ((const int64_t *)a->buffers[1])[i]
                        : col_type[c].type == T_I32 ? ((const int32_t *)a->buffers[1])[i]
                                                    : ((const uint8_t *)a->buffers[1])[i];
            s->hash = s->hash * 31 + (uint64_t)v;
            if (c == DT_COL_C_INDEX) {
                if ((i == 0 && (uint64_t)v != b->first_index) || v < (int64_t)s->next_index)
                    fail("positions do not increase from the batch's first");
                s->next_index = (uint64_t)v + 1;
            } else if (c == DT_COL_C_PART && (v < b->part_min || v > b->part_max)) {
                fail("a part outside the batch's range");
            } else if (c == DT_COL_C_FLOW) {
                flows += v != 0;
            }
        }
    }
    if (flows != b->flows)
        fail("the batch's flow count is not its rows'");
    s->rows += b->rows;
    s->batches++;
    return 0;
}

static int convert(const char *path, size_t rows, unsigned flags, seen *s, char *err, size_t errlen)
{
    memset(s, 0, sizeof *s);
    char *meta = NULL;
    int rc = dt_col_read(path, rows, flags, sink, s, &meta, err, errlen);
    if (meta) {
        s->hash ^= strlen(meta);
        dt_col_free(meta);
    }
    return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int fd = memfd_create("fuzz_columns", MFD_CLOEXEC);
    if (fd < 0)
        return 0;
    if (size && write(fd, data, size) != (ssize_t)size) {
        close(fd);
        return 0;
    }
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    /* small batches, so that events cross batch boundaries */
    size_t rows = 1 + (size ? data[size - 1] % 5 : 0);
    seen one, two;
    char err1[256], err2[256];
    int rc1 = convert(path, rows, 0, &one, err1, sizeof err1);
    int rc2 = convert(path, rows, DT_COL_STEPS, &two, err2, sizeof err2);
    close(fd);
    /* the step column's first pass reads the same trace: the same rows or
       the same failure (a failure in the first pass hands over no row) */
    if (rc1 != rc2)
        fail("the step column changes whether the trace reads");
    if (rc1 == 0 && one.rows != two.rows)
        fail("the step column changes the rows");
    return 0;
}

/* The writer of each encoding (writers.h). */
#include "export/writers.h"

#include "format/formats.h"

static const struct {
    dt_format plain; /* the encoding: a format as written uncompressed */
    dt_wr_write_fn *write;
} writers[] = {
    {DT_FORMAT_JSON, dt_wr_chrome},
    {DT_FORMAT_PERFETTO, dt_wr_perfetto},
};

dt_wr_write_fn *dt_wr_of_format(int format)
{
    const dt_fmt *f = dt_fmt_of(format);
    for (size_t i = 0; f && i < sizeof writers / sizeof *writers; i++)
        if (writers[i].plain == f->plain)
            return writers[i].write;
    return NULL;
}

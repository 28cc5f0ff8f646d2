/* The writer of each encoding (writers.h). */
#include "export/writers.h"

#include "format/formats.h"

static const struct {
    dt_format plain; /* the encoding: a format as written uncompressed */
    dt_wr_write_fn *write;
} writers[] = {
    {DT_FORMAT_JSON, dt__wr_chrome},
    {DT_FORMAT_PERFETTO, dt__wr_perfetto},
};

dt_wr_write_fn *dt__wr_of_format(int format)
{
    const dt_fmt *f = dt__fmt_of(format);
    for (size_t i = 0; f && i < sizeof writers / sizeof *writers; i++)
        if (writers[i].plain == f->plain)
            return writers[i].write;
    return NULL;
}

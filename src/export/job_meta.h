/* The job and the recording process as the JSON writes them
   (src/export/job_meta.c). */
#ifndef DT_EXPORT_JOB_META_H
#define DT_EXPORT_JOB_META_H

#include "base/out.h"
#include "core/recording.h"

/* "distributedInfo": {...},\n when a launcher announced the rank. */
DT_HIDDEN void dt__wr_json_distributed_info(dt_out *o, const dt_recording *rec);
/* The devtrace key's host, pid and realtimeClock members, each after ",\n". */
DT_HIDDEN void dt__wr_json_origin(dt_out *o, const dt_recording *rec);

#endif /* DT_EXPORT_JOB_META_H */

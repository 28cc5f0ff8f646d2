/* Streaming trace reader: exact values, gzip, and every kind of bad input.
   What the files of the test share. */
#ifndef DT_READER_TEST_H
#define DT_READER_TEST_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include "devtrace/devtrace.h"
#include "dt_check.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dt_reader.h"
#include "dt_internal.h"
#include "dt_test_session.h"
#include <unistd.h>

/* perfetto.c */
void perfetto_args_are_the_json_text_typed(void);
void malformed_perfetto_args_are_left_out(void);

#endif /* DT_READER_TEST_H */

/*
 * Sessions of the CUPTI backend on the CUPTI emulator, for the tests that
 * drive it in their own process: the emulator loaded as the library
 * devtrace uses, a session started on it, a note of the session.
 * Include after "dt_check.h" and "dt_internal.h".
 */
#ifndef DT_TEST_CUPTI_EMU_SESSION_H
#define DT_TEST_CUPTI_EMU_SESSION_H

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The emulator's path in this build. */
static char cupti_emu_path[1024];

/* Load the emulator (NULL when it was not built) and have devtrace use it. */
static inline void *cupti_emu_open(void)
{
    snprintf(cupti_emu_path, sizeof cupti_emu_path, "%s/emu/libcupti.so.13", DT_BINARY_DIR);
    setenv("DEVTRACE_CUPTI_LIBRARY", cupti_emu_path, 1);
    unsetenv("DEVTRACE_EMU_FAIL");
    return dlopen(cupti_emu_path, RTLD_NOW | RTLD_LOCAL);
}

/* A started session of the cupti backend; buffers, buffer_size 0: the
   defaults. */
static inline dt_session *cupti_session_start(uint32_t capture, uint32_t buffers, size_t buffer_size)
{
    dt_config c;
    dt_config_init(&c);
    c.backend = "cupti";
    c.capture = capture;
    if (buffers) c.buffer_count = buffers;
    if (buffer_size) c.buffer_size = buffer_size;
    c.calibration_period_ms = 0;
    dt_session *s = NULL;
    REQUIRE_EQ(dt_session_create(&c, &s), DT_OK);
    dt_status st = dt_session_start(s);
    if (st != DT_OK) printf("start: %s\n", dt_last_error());
    REQUIRE_EQ(st, DT_OK);
    return s;
}

/* The session's note under key ("" when none). */
static inline const char *cupti_note(const dt_session *s, const char *key)
{
    for (int i = 0; i < s->note_count; i++)
        if (strcmp(s->notes[i].key, key) == 0) return s->notes[i].text;
    return "";
}

#endif

/*
 * The null client (emu/core, internal): a client that arms what a tracer
 * arms and decodes nothing (emu_null_client). Its functions are markers the
 * core recognises by address where it would call a client's.
 */
#ifndef DEVTRACE_EMU_CORE_NULL_CLIENT_H
#define DEVTRACE_EMU_CORE_NULL_CLIENT_H

#include "state.h"

EMU_HIDDEN void core_null_client_callback(void);
EMU_HIDDEN void core_null_client_complete(void);
/* Its buffer request (state lock held) and completion (no lock held). */
EMU_HIDDEN void core_null_client_request(uint8_t **buffer, size_t *size, size_t *max_records);
EMU_HIDDEN void core_null_client_complete_buffer(uint8_t *buf, size_t valid);

#endif /* DEVTRACE_EMU_CORE_NULL_CLIENT_H */

/*
 * Interned names (emu/core, internal): kernel, marker and collective names
 * a record points at until the client has read its buffer, kept for the
 * library's lifetime.
 */
#ifndef DEVTRACE_EMU_CORE_NAMES_H
#define DEVTRACE_EMU_CORE_NAMES_H

#include "state.h"

/* The one copy of s ("" for NULL); NULL when out of memory. State lock
   held. */
EMU_HIDDEN const char *core_intern_name(const char *s);

#endif /* DEVTRACE_EMU_CORE_NAMES_H */

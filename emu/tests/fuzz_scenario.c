/*
 * libFuzzer target: the scenario parser must refuse or accept any bytes
 * without crashing, leaking or reading out of bounds.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "scenario.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    scenario s;
    char err[256];
    if (scn_parse_string(text, "fuzz", &s, err, sizeof(err)) == 0) {
        (void)scn_count(&s.top, SCN_KERNEL);
        scn_free(&s);
    }
    free(text);
    return 0;
}

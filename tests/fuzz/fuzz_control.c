/*
 * Fuzzes the control channel's message reader and parser, what a listener
 * runs on the bytes of any local peer: the input (its first 8 KiB) is
 * written into a socket pair whose writing end is then closed, read back as
 * one message with a deadline, and parsed. No input may crash, hang or
 * leak; the reader never takes more than one message's bytes; and every
 * message that parses encodes to bytes that parse again, with encoding a
 * fixed point (parse, encode, parse, encode gives the same bytes).
 */
#include "protocol/control_wire.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_fixed_point(const dt_ctl_msg *msg)
{
    static uint8_t first[DT_CTL_MAX_MESSAGE], second[DT_CTL_MAX_MESSAGE];
    char why[256];
    size_t n1 = dt__ctl_encode(msg, first, sizeof first);
    if (n1 == 0) abort(); /* every parsed message fits */
    dt_ctl_msg again;
    if (dt__ctl_parse(first, n1, &again, why, sizeof why) != DT_CTL_SUCCESS) abort();
    size_t n2 = dt__ctl_encode(&again, second, sizeof second);
    if (n2 != n1 || memcmp(first, second, n1) != 0) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char why[256];
    dt_ctl_msg msg;
    /* the parser on the bytes as they are */
    if (dt__ctl_parse(data, size, &msg, why, sizeof why) == DT_CTL_SUCCESS) check_fixed_point(&msg);

    /* the reader on a connection carrying them */
    if (size > 8192) size = 8192;
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) return 0;
    size_t sent = 0;
    while (sent < size) {
        ssize_t w = send(sv[0], data + sent, size - sent, MSG_NOSIGNAL);
        if (w <= 0) break;
        sent += (size_t)w;
    }
    close(sv[0]);
    uint8_t buf[DT_CTL_MAX_MESSAGE];
    size_t len = 0;
    int passed = -1;
    dt_ctl_code rc = dt__ctl_read_message(sv[1], buf, &len, &passed, dt__ctl_deadline(1000), why, sizeof why);
    if (rc == DT_CTL_SUCCESS) {
        if (len > sent || len > DT_CTL_MAX_MESSAGE || memcmp(buf, data, len) != 0) abort();
        if (dt__ctl_parse(buf, len, &msg, why, sizeof why) == DT_CTL_SUCCESS) check_fixed_point(&msg);
    } else if (rc == DT_CTL_TIMEOUT) {
        abort(); /* the writer is gone: the reader must see the end, not wait */
    }
    if (passed >= 0) close(passed);
    close(sv[1]);
    return 0;
}

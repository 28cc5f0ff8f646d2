/*
 * CUPTI record writer of the emulator: turns the emulator core's
 * vendor-neutral activities into records laid out exactly as the CUDA
 * toolkit's CUPTI headers (used in place at build time) define them, so that
 * the real libcupti's cuptiActivityGetNextRecord walks a buffer of them.
 * Kept apart from the exported entry points so that tests can write records
 * without loading the emulator.
 */
#ifndef EMU_CUPTI_RECORDS_H
#define EMU_CUPTI_RECORDS_H

#include <stddef.h>
#include <stdint.h>

#include "emu_vendor.h"

/* A kind value CUPTI never defined (the real library answers INVALID_KIND). */
#define EMU_CUPTI_UNKNOWN_KIND 1000u
#define EMU_CUPTI_UNKNOWN_SIZE 24u

typedef struct emu_cupti_options {
    uint32_t kernel_kind;   /* CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL or _KERNEL */
    int peer_as_memcpy2;    /* write peer copies as MEMCPY2 (MemcpyPtoP4) records */
    int latency_timestamps; /* fill kernel queued/submitted */
} emu_cupti_options;

/* Bytes of the record the writer produces for a kind (0: none). */
EMU_HIDDEN size_t emu_cupti_record_size(emu_rec_kind kind);
/* dst: emu_cupti_record_size(a->kind) zeroed bytes, 8-byte aligned. */
EMU_HIDDEN void emu_cupti_write_record(uint8_t *dst, const emu_activity *a,
                                       const emu_cupti_options *opt);
/* Which emulator kind the record at rec is (EMU_REC_UNKNOWN for DEVICE
   records and kinds the emulator does not write). */
EMU_HIDDEN emu_rec_kind emu_cupti_record_kind(const uint8_t *rec, size_t avail);
/* Stride of a record of a CUPTI kind in buffers the emulator writes, the
   DEVICE records included; 0 for a kind it never writes. */
EMU_HIDDEN size_t emu_cupti_stride(uint32_t cupti_kind);

/* An emulated device's description (CUpti_ActivityDevice5). name must live
   as long as the record is read. */
EMU_HIDDEN size_t emu_cupti_device_record_size(void);
EMU_HIDDEN void emu_cupti_write_device(uint8_t *dst, uint32_t id, const char *name);

/* The emulated device's properties, for tests to compare with. */
#define EMU_CUPTI_DEV_SMS 132u
#define EMU_CUPTI_DEV_CC_MAJOR 9u
#define EMU_CUPTI_DEV_CC_MINOR 0u
#define EMU_CUPTI_DEV_GLOBAL_MEM (80ull << 30)
#define EMU_CUPTI_DEV_THREADS_PER_BLOCK 1024u
#define EMU_CUPTI_DEV_WARPS_PER_SM 64u
#define EMU_CUPTI_DEV_BLOCKS_PER_SM 32u
#define EMU_CUPTI_DEV_REGS_PER_SM 65536u
#define EMU_CUPTI_DEV_REGS_PER_BLOCK 65536u
#define EMU_CUPTI_DEV_SHMEM_PER_SM 233472u
#define EMU_CUPTI_DEV_SHMEM_PER_BLOCK 232448u

#endif /* EMU_CUPTI_RECORDS_H */

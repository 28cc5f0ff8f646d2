/*
 * Record writer of the CUPTI-family emulator personalities (CUPTI, PPU,
 * MCPTI, MUPTI): turns the emulator core's vendor-neutral activities into
 * records through devtrace's declaration of the CUPTI-family ABI
 * (src/backends/cupti_family_abi.h), at the record versions a personality
 * writes. For CUPTI's versions, tests walk these records with NVIDIA's own
 * libcupti. Kept apart from the exported entry points so that tests can
 * write records without loading an emulator.
 */
#ifndef EMU_CF_RECORDS_H
#define EMU_CF_RECORDS_H

#include <stddef.h>
#include <stdint.h>

#include "backends/cupti_family_abi.h"
#include "emu_vendor.h"

/* A kind value no CUPTI-family library defines (the iterators answer
   INVALID_KIND). */
#define EMU_CF_UNKNOWN_KIND 1000u
#define EMU_CF_UNKNOWN_SIZE 24u

typedef struct emu_cf_options {
    uint32_t kernel_kind;     /* DT_CF_KIND_CONCURRENT_KERNEL or _KERNEL */
    int peer_as_memcpy2;      /* write peer copies as MEMCPY2 records */
    /* write every copy as a MEMCPY record in the peer layout, which names
       source and destination devices, memcpy_size bytes of it (devtrace's
       TOPSPTI declaration) */
    int copies_name_devices;
    int latency_timestamps;   /* fill kernel queued/submitted */
    /* the record versions written: bytes of each */
    uint32_t kernel_size, memcpy_size, memset_size;
} emu_cf_options;

/* CUDA 13's versions (Kernel10, Memcpy6, Memset4), concurrent kernels. */
EMU_HIDDEN emu_cf_options emu_cf_cuda13(void);

/* Bytes of the record the writer produces for a kind (0: none). */
EMU_HIDDEN size_t emu_cf_record_size(emu_rec_kind kind, const emu_cf_options *opt);
/* dst: emu_cf_record_size(a->kind) zeroed bytes, 8-byte aligned. */
EMU_HIDDEN void emu_cf_write_record(uint8_t *dst, const emu_activity *a, const emu_cf_options *opt);
/* Which emulator kind the record at rec is (EMU_REC_UNKNOWN for DEVICE
   records and kinds the emulator does not write). */
EMU_HIDDEN emu_rec_kind emu_cf_record_kind(const uint8_t *rec, size_t avail);
/* Stride of a record of a family kind in buffers the emulator writes, the
   DEVICE records included; 0 for a kind it never writes. */
EMU_HIDDEN size_t emu_cf_stride(uint32_t kind, const emu_cf_options *opt);

/* Call a subscriber's callback (type-erased) with the family's callback
   data. */
EMU_HIDDEN void emu_cf_invoke_callback(void (*client_fn)(void), void *userdata, const emu_api_call *call);

/* An emulated device's description (Device5). name must live as long as
   the record is read. */
EMU_HIDDEN void emu_cf_write_device(uint8_t *dst, uint32_t id, const char *name);

/* The emulated device's properties, for tests to compare with. */
#define EMU_CF_DEV_SMS 132u
#define EMU_CF_DEV_CC_MAJOR 9u
#define EMU_CF_DEV_CC_MINOR 0u
#define EMU_CF_DEV_GLOBAL_MEM (80ull << 30)
#define EMU_CF_DEV_THREADS_PER_BLOCK 1024u
#define EMU_CF_DEV_WARPS_PER_SM 64u
#define EMU_CF_DEV_BLOCKS_PER_SM 32u
#define EMU_CF_DEV_REGS_PER_SM 65536u
#define EMU_CF_DEV_REGS_PER_BLOCK 65536u
#define EMU_CF_DEV_SHMEM_PER_SM 233472u
#define EMU_CF_DEV_SHMEM_PER_BLOCK 232448u

#endif /* EMU_CF_RECORDS_H */

/* SPDX-License-Identifier: MIT */
/*
 * csd_bpf.h - what a downloadable eBPF program for nvme-csd may use (command set §8).
 *
 * A program is one function in section "csd", called once per record with a pointer to
 * it; it returns a u64 (filter: keep if non-zero; map: the output value; reduce: a term
 * of the sum). It may read only its record (its size is fixed at load) and call only the
 * two helpers below. No loops (the verifier refuses back edges: unroll), no floating
 * point (eBPF has none: compare float bit patterns, or let the host convert), no 64-bit
 * division or remainder by a variable or by -1 (the device refuses it: divide u32 operands,
 * or by another constant).
 * Build: clang -O2 -target bpf -c prog.c -o prog.o
 */
#ifndef CSD_BPF_H
#define CSD_BPF_H

/* Debian's stdint.h pulls in glibc headers that do not exist for the BPF target. */
typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;
typedef int s32;
typedef long long s64;

/* params[i] of the Execute (0 for i >= nr_params). */
extern u64 csd_param(u32 i);
/* Index of the record being processed. */
extern u64 csd_index(void);

/* Marks the entry function: CSD_PROGRAM u64 name(const void *record) { ... } */
#define CSD_PROGRAM __attribute__((section("csd"), used))

#endif /* CSD_BPF_H */

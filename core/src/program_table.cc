// SPDX-License-Identifier: MIT
// program_table.cc - the device-defined programs (spec §6) by id.
#include "program.h"

namespace csd::core {

const ProgramInfo *program_table(size_t *count)
{
    static const ProgramInfo table[] = {
        {CSD_PROG_COPY, program_copy, check_copy, -1},
        {CSD_PROG_GEMM, program_gemm, check_gemm, -1},
        {CSD_PROG_ELEMENTWISE, program_elementwise, check_elementwise, -1},
        {CSD_PROG_SOFTMAX, program_softmax, check_softmax, -1},
        {CSD_PROG_REDUCE, program_reduce, check_reduce, -1},
        {CSD_PROG_FILTER, program_filter, check_filter, -1},
        {CSD_PROG_CONVERT, program_convert, check_convert, -1},
        {CSD_PROG_CHECKSUM, program_checksum, check_checksum, -1},
        {CSD_PROG_CONV2D, program_conv2d, check_conv2d, 2},
        {CSD_PROG_DECOMPRESS, program_decompress, check_decompress, -1},
        {CSD_PROG_GATHER, nullptr, check_gather, -1, plan_gather, run_gather},
        {CSD_PROG_EMBEDDING_BAG, nullptr, check_embedding_bag, 2, plan_embedding_bag, run_embedding_bag},
    };
    static_assert(sizeof(table) / sizeof(table[0]) == CSD_NR_DEVICE_PROGRAMS, "one entry per program");
    *count = sizeof(table) / sizeof(table[0]);
    return table;
}

const ProgramInfo *find_program(uint16_t id)
{
    size_t n;
    const ProgramInfo *t = program_table(&n);
    for (size_t i = 0; i < n; i++) {
        if (t[i].id == id) {
            return &t[i];
        }
    }
    return nullptr;
}

}  // namespace csd::core

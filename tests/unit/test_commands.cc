// SPDX-License-Identifier: MIT
// Command decoding in the device core (spec §3): what each opcode's dwords mean, every
// validation error, and the statistics that decode and complete keep.
#include "core_fixture.h"

namespace {

class Commands : public CoreTest {};

TEST_F(Commands, SlmLoadFields)
{
    csd_op op;
    // SLBA 0x1_0000_0002 does not fit the namespace; SLBA 2, NLB 3 (0's based) at SLM 0x2000 does.
    EXPECT_EQ(CSD_STATUS_CODE(decode(CSD_OPC_SLM_LOAD, 2, 1, 3, 0x2000, 0, &op)), CSD_STATUS_LBA_OUT_OF_RANGE);
    ASSERT_EQ(decode(CSD_OPC_SLM_LOAD, 2, 0, 0xABCD0003, 0x2000, 0, &op), 0);  // bits 31:16 of CDW12 ignored
    EXPECT_EQ(op.opcode, CSD_OPC_SLM_LOAD);
    EXPECT_EQ(op.slba, 2u);
    EXPECT_EQ(op.nlb, 4u);
    EXPECT_EQ(op.slm_offset, 0x2000u);
    EXPECT_EQ(op.bytes, 4u * 512);
    EXPECT_EQ(op.slm, slm(0x2000));
}

TEST_F(Commands, LoadStoreRanges)
{
    csd_op op;
    const uint32_t last = (1u << 20) - 1;
    EXPECT_EQ(decode(CSD_OPC_SLM_STORE, last, 0, 0, 0, 0, &op), 0);  // the last LBA
    EXPECT_EQ(CSD_STATUS_CODE(decode(CSD_OPC_SLM_STORE, last, 0, 1, 0, 0, &op)), CSD_STATUS_LBA_OUT_OF_RANGE);
    EXPECT_EQ(CSD_STATUS_CODE(decode(CSD_OPC_SLM_LOAD, 0xFFFFFFFF, 0xFFFFFFFF, 0, 0, 0, &op)),
              CSD_STATUS_LBA_OUT_OF_RANGE);  // SLBA + NLB wraps
    // SLM offset so that the last byte falls outside SLM; then offsets whose sum wraps.
    EXPECT_EQ(CSD_STATUS_CODE(decode(CSD_OPC_SLM_LOAD, 0, 0, 0, static_cast<uint32_t>(kSlm - 511), 0, &op)),
              CSD_STATUS_SLM_OUT_OF_BOUNDS);
    EXPECT_EQ(CSD_STATUS_CODE(decode(CSD_OPC_SLM_LOAD, 0, 0, 0, 0xFFFFFF00, 0xFFFFFFFF, &op)),
              CSD_STATUS_SLM_OUT_OF_BOUNDS);
    EXPECT_EQ(counter(CSD_STAT_SLM_LOAD_CMDS), 3u);
    EXPECT_EQ(counter(CSD_STAT_SLM_STORE_CMDS), 2u);
}

TEST_F(Commands, SlmTransferRules)
{
    csd_op op;
    ASSERT_EQ(decode(CSD_OPC_SLM_READ, 0x100, 0, 8u << 20, 0, 0, &op), 0);  // exactly MDTS
    EXPECT_EQ(op.bytes, 8u << 20);
    EXPECT_EQ(op.slm, slm(0x100));
    EXPECT_EQ(CSD_STATUS_CODE(decode(CSD_OPC_SLM_READ, 0, 0, (8u << 20) + 4, 0, 0, &op)), CSD_STATUS_INVALID_FIELD);
    EXPECT_EQ(CSD_STATUS_CODE(decode(CSD_OPC_SLM_WRITE, static_cast<uint32_t>(kSlm - 4), 0, 8, 0, 0, &op)),
              CSD_STATUS_SLM_OUT_OF_BOUNDS);
    EXPECT_EQ(CSD_STATUS_CODE(decode(CSD_OPC_SLM_WRITE, 0, 1, 4, 0, 0, &op)), CSD_STATUS_SLM_OUT_OF_BOUNDS);
    const csd_ctx unlimited{1u << 20, 512, 0, 0};  // no MDTS: only SLM bounds limit
    const csd_cmd c{CSD_OPC_SLM_WRITE, 1, 0, 0, 0xFFFFFFFC, 0, 0, 0};
    EXPECT_EQ(CSD_STATUS_CODE(csd_core_decode(core, &c, &unlimited, &op)), CSD_STATUS_SLM_OUT_OF_BOUNDS);
}

TEST_F(Commands, ExecuteLengthAndErrorsCounted)
{
    csd_op op;
    EXPECT_EQ(CSD_STATUS_CODE(decode(CSD_OPC_EXECUTE, 0, 0, 0, 0, 0, &op)), CSD_STATUS_INVALID_FIELD);
    EXPECT_EQ(CSD_STATUS_CODE(decode(CSD_OPC_EXECUTE, CSD_MAX_DESC_LEN + 1, 0, 0, 0, 0, &op)),
              CSD_STATUS_INVALID_FIELD);
    ASSERT_EQ(decode(CSD_OPC_EXECUTE, 48, 0, 0, 0, 0, &op), 0);
    EXPECT_EQ(op.bytes, 48u);
    csd_core_complete(core, &op, CSD_STATUS_DATA_TRANSFER_ERROR);  // e.g. the descriptor's DMA failed
    EXPECT_EQ(counter(CSD_STAT_EXEC_CMDS), 3u);
    EXPECT_EQ(counter(CSD_STAT_EXEC_ERRORS), 3u);
}

TEST_F(Commands, ByteCountersCountOnlySuccess)
{
    csd_op op;
    ASSERT_EQ(decode(CSD_OPC_SLM_WRITE, 0, 0, 4096, 0, 0, &op), 0);
    csd_core_complete(core, &op, 0);
    ASSERT_EQ(decode(CSD_OPC_SLM_READ, 0, 0, 1024, 0, 0, &op), 0);
    csd_core_complete(core, &op, 0);
    ASSERT_EQ(decode(CSD_OPC_SLM_READ, 0, 0, 1024, 0, 0, &op), 0);
    csd_core_complete(core, &op, CSD_STATUS_DATA_TRANSFER_ERROR);
    ASSERT_EQ(decode(CSD_OPC_SLM_STORE, 0, 0, 1, 0, 0, &op), 0);
    csd_core_complete(core, &op, 0);
    EXPECT_EQ(counter(CSD_STAT_SLM_WRITE_CMDS), 1u);
    EXPECT_EQ(counter(CSD_STAT_SLM_READ_CMDS), 2u);
    EXPECT_EQ(counter(CSD_STAT_BYTES_HOST_TO_SLM), 4096u);
    EXPECT_EQ(counter(CSD_STAT_BYTES_SLM_TO_HOST), 1024u);
    EXPECT_EQ(counter(CSD_STAT_BYTES_SLM_TO_NS), 1024u);
    EXPECT_EQ(counter(CSD_STAT_EXEC_ERRORS), 0u);
}

TEST_F(Commands, NotACsdOpcode)
{
    csd_op op;
    EXPECT_EQ(CSD_STATUS_CODE(decode(0x83, 0, 0, 0, 0, 0, &op)), CSD_STATUS_INVALID_OPCODE);
    EXPECT_FALSE(csd_is_io_opcode(0x83));
    EXPECT_TRUE(csd_is_io_opcode(CSD_OPC_EXECUTE));
}

TEST_F(Commands, LogPageChecks)
{
    uint8_t page[CSD_LOG_MAX_SIZE];
    uint32_t avail;
    EXPECT_EQ(CSD_STATUS_CODE(csd_core_get_log(core, CSD_LOG_STATISTICS, 1, 0, page, &avail)),
              CSD_STATUS_INVALID_FIELD);
    EXPECT_EQ(CSD_STATUS_CODE(csd_core_get_log(core, CSD_LOG_STATISTICS, 0, 4352, page, &avail)),
              CSD_STATUS_INVALID_FIELD);  // C1h is 4352 bytes from version 1.1
    EXPECT_EQ(CSD_STATUS_CODE(csd_core_get_log(core, CSD_LOG_CAPABILITIES, 0, 4096, page, &avail)),
              CSD_STATUS_INVALID_FIELD);
    EXPECT_EQ(CSD_STATUS_CODE(csd_core_get_log(core, 0xC2, 0, 0, page, &avail)), CSD_STATUS_INVALID_FIELD);
    ASSERT_EQ(csd_core_get_log(core, CSD_LOG_STATISTICS, 0, 4348, page, &avail), 0);
    EXPECT_EQ(avail, 4u);
    ASSERT_EQ(csd_core_get_log(core, CSD_LOG_CAPABILITIES, 0, 4092, page, &avail), 0);
    EXPECT_EQ(avail, 4u);
}

}  // namespace

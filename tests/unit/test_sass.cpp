// nvdisasm's output read into functions: instructions counted by base opcode (predicates and
// modifiers stripped), local-memory loads and stores counted (where registers spill), source line
// info and labels kept for the listing, directives dropped; the rendering names spills and a
// missing kernel. The real nvdisasm is exercised in tests/nvrtc/test_sass_nvdisasm.cpp.
#include <gtest/gtest.h>

#include "kagent/compile/sass.hpp"

using namespace kagent;

namespace {

// The shape of `nvdisasm -c -g` output for a cubin of two kernels (sm_90).
const char* kSample = R"SASS(	.headerflags	@"EF_CUDA_TEXMODE_UNIFIED EF_CUDA_64BIT_ADDRESS EF_CUDA_SM90 EF_CUDA_VIRTUAL_SM(EF_CUDA_SM90)"
	.elftype	@"ET_EXEC"


//--------------------- .text.spills              --------------------------
	.section	.text.spills,"ax",@progbits
	.sectioninfo	@"SHI_REGISTERS=255"
	.align	128
        .global         spills
        .type           spills,@function
        .size           spills,(.L_x_2 - spills)
        .other          spills,@"STO_CUDA_ENTRY STV_DEFAULT"
spills:
.text.spills:
	//## File "/ws/cand.cu", line 12
        /*0000*/                   LDC R1, c[0x0][0x28] ;
        /*0010*/                   STL [R1+0x4], R2 ;
	//## File "/ws/cand.cu", line 14
        /*0020*/              @!P0 LDL.LU R3, [R1+0x4] ;
        /*0030*/                   FFMA R4, R3, R3, R4 ;
        /*0040*/                   FFMA R4, R3, R3, R4 ;
.L_x_1:
        /*0050*/                   EXIT ;
.L_x_2:
        /*0060*/                   BRA `(.L_x_2);
//--------------------- .text.add                 --------------------------
	.section	.text.add,"ax",@progbits
	.sectioninfo	@"SHI_REGISTERS=12"
add:
.text.add:
        /*0000*/                   LDG.E.128 R4, desc[UR4][R2.64] ;
        /*0010*/                   STG.E.128 desc[UR4][R6.64], R4 ;
        /*0020*/                   EXIT ;
)SASS";

}  // namespace

TEST(Sass, FunctionsOpcodesAndLocalMemoryAreCounted) {
  auto fns = parse_nvdisasm(kSample);
  ASSERT_EQ(fns.size(), 2u);
  EXPECT_EQ(fns[0].name, "spills");
  EXPECT_EQ(fns[0].instructions, 7);
  EXPECT_EQ(fns[0].local_loads, 1);
  EXPECT_EQ(fns[0].local_stores, 1);
  EXPECT_EQ(fns[0].opcodes.at("FFMA"), 2);
  EXPECT_EQ(fns[0].opcodes.at("LDL"), 1);  // "@!P0 LDL.LU": predicate and modifiers stripped
  EXPECT_EQ(fns[1].name, "add");
  EXPECT_EQ(fns[1].instructions, 3);
  EXPECT_EQ(fns[1].opcodes.at("LDG"), 1);
  EXPECT_EQ(fns[1].local_loads + fns[1].local_stores, 0);
  // The listing keeps instructions, source lines and labels, not directives.
  const auto& lines = fns[0].lines;
  EXPECT_EQ(lines.size(), 11u);
  EXPECT_NE(lines[0].find("//## File \"/ws/cand.cu\", line 12"), std::string::npos);
  for (const auto& l : lines) EXPECT_EQ(l.find(".sectioninfo"), std::string::npos) << l;
}

TEST(Sass, TheRenderingNamesSpillsAndCapsTheListing) {
  auto fns = parse_nvdisasm(kSample);
  std::string all = render_sass(fns, false);
  EXPECT_NE(all.find("kernel spills: 7 instructions; local memory: 1 loads (LDL), 1 stores (STL) -- register spills"),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("most frequent: FFMA 2"), std::string::npos) << all;
  EXPECT_NE(all.find("kernel add: 3 instructions; local memory: 0 loads (LDL), 0 stores (STL)\n"), std::string::npos)
      << all;
  EXPECT_EQ(all.find("FFMA R4"), std::string::npos) << "no listing asked for";
  std::string one = render_sass(fns, true, "spills", 3);
  EXPECT_EQ(one.find("kernel add"), std::string::npos) << one;
  EXPECT_NE(one.find("... 8 more lines not shown"), std::string::npos) << one;
  std::string none = render_sass(fns, true, "nope");
  EXPECT_NE(none.find("no kernel 'nope' in the cubin (it has: spills, add)"), std::string::npos) << none;
}

TEST(Sass, TextWithoutFunctionsGivesNone) {
  EXPECT_TRUE(parse_nvdisasm("").empty());
  EXPECT_TRUE(parse_nvdisasm("nvdisasm fatal   : not an ELF file\n").empty());
  EXPECT_EQ(render_sass({}, true), "no functions in the disassembly\n");
}

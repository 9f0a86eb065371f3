//===- RuntimeAbiTest.cpp - The lowering's names are the runtime's --------===//
//
// Part of pmlir.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Runtime/RuntimeAbi.h"
#include "pmlir/Runtime/Runtime.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace rtabi = pmlir::rt::abi;

namespace {

TEST(RuntimeAbi, EveryEntryTheLoweringCallsIsRegisteredForTheJit) {
  std::set<std::string> registered;
  for (const pmlir_rt_symbol *s = pmlir_rt_collective_symbols(); s->name; ++s) {
    EXPECT_NE(s->address, nullptr) << s->name;
    registered.insert(s->name);
  }
  size_t expected = 0;
  for (size_t i = 0; i < rtabi::entries().size(); ++i) {
    auto id = static_cast<rtabi::EntryId>(i);
    const rtabi::Entry &entry = rtabi::entry(id);
    std::vector<std::string> suffixes = {""};
    if (entry.typed) {
      suffixes.clear();
      for (const rtabi::DType &dtype : rtabi::dtypes())
        suffixes.push_back(dtype.suffix);
    }
    for (const std::string &suffix : suffixes) {
      std::string symbol = rtabi::symbolName(id, suffix);
      EXPECT_TRUE(registered.count((entry.cInterface ? "_mlir_ciface_" : "") + symbol)) << symbol;
      ++expected;
    }
  }
  EXPECT_EQ(registered.size(), expected);
}

TEST(RuntimeAbi, CodesAreTheCEnums) {
  EXPECT_EQ(rtabi::reductionCode("sum"), PMLIR_RT_SUM);
  EXPECT_EQ(rtabi::reductionCode("product"), PMLIR_RT_PRODUCT);
  EXPECT_EQ(rtabi::reductionCode("bitwise_or"), std::nullopt);
  EXPECT_EQ(rtabi::dtypes().front().code, PMLIR_RT_F32);
  EXPECT_EQ(rtabi::symbolName(rtabi::EntryId::send, "bf16"), "pmlir_rt_send_bf16");
  EXPECT_EQ(rtabi::entry(rtabi::EntryId::send).params.back(), rtabi::I64); // the tag
}

} // namespace

#include "tenferro/base/function_ref.h"

#include <gtest/gtest.h>

#include <string>

namespace tenferro {
namespace {

int apply(FunctionRef<int(int)> f, int x) { return f(x); }

int double_it(int x) { return 2 * x; }

TEST(FunctionRefTest, CallsLambdasFunctionsAndMutableState) {
  int calls = 0;
  EXPECT_EQ(apply(
                [&calls](int x) {
                  ++calls;
                  return x + 1;
                },
                4),
            5);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(apply(double_it, 21), 42);
  struct Counter {
    int n = 0;
    int operator()(int x) { return n += x; }
  } counter;
  apply(counter, 3);
  apply(counter, 4);
  EXPECT_EQ(counter.n, 7) << "the referenced object itself is called, not a copy";
}

TEST(FunctionRefTest, ForwardsArgumentsAndResults) {
  FunctionRef<std::string(const std::string&, int)> f = [](const std::string& s, int n) {
    std::string out;
    for (int i = 0; i < n; ++i) out += s;
    return out;
  };
  EXPECT_EQ(f("ab", 3), "ababab");
}

}  // namespace
}  // namespace tenferro

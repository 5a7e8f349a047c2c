#include "tenferro/base/sha256.h"

#include <gtest/gtest.h>

#include <string>

namespace tenferro {
namespace {

// FIPS 180-2 known answers.
TEST(Sha256Test, KnownAnswers) {
  EXPECT_EQ(sha256("").hex(), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256("abc").hex(), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq").hex(),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  const std::string million(1000000, 'a');
  EXPECT_EQ(sha256(million).hex(), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256Test, IncrementalEqualsOneShotAndHasherIsReusable) {
  Sha256 h;
  h.update("ab", 2);
  h.update("c", 1);
  const Digest256 first = h.finish();
  EXPECT_EQ(first, sha256("abc"));
  h.update("abc", 3);
  EXPECT_EQ(h.finish(), first);
  EXPECT_EQ(first.prefix64(), 0xba7816bf8f01cfeaULL);
}

TEST(Sha256Test, TypedFeedsAreUnambiguous) {
  Sha256 a;
  a.update_string("ab");
  a.update_string("c");
  Sha256 b;
  b.update_string("a");
  b.update_string("bc");
  EXPECT_NE(a.finish(), b.finish());
  Sha256 c;
  c.update_u64(1);
  Sha256 d;
  d.update_u64(256);
  EXPECT_NE(c.finish(), d.finish());
}

TEST(Sha256Test, MovedHasherKeepsState) {
  Sha256 a;
  a.update("ab", 2);
  Sha256 b = std::move(a);
  b.update("c", 1);
  EXPECT_EQ(b.finish(), sha256("abc"));
}

}  // namespace
}  // namespace tenferro

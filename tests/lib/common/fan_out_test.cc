// FanOut (lib/common/fan_out.h): every call's result, in call order, however and wherever the
// replies arrive.
#include "lib/common/fan_out.h"

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include <gtest/gtest.h>

namespace codl {
namespace {

TEST(FanOut, ResultsComeBackInCallOrderWhateverOrderTheRepliesArriveIn) {
  // Reply i arrives after (8 - i) ms on a thread of its own: the last call replies first.
  std::atomic<int> issued{0};
  const std::vector<std::string> out =
      FanOut<std::string>(8, [&](size_t i, std::function<void(std::string)> done) {
        ++issued;
        std::thread([i, done = std::move(done)] {
          std::this_thread::sleep_for(std::chrono::milliseconds(8 - i));
          done("reply " + std::to_string(i));
        }).detach();
      });
  EXPECT_EQ(issued, 8);
  ASSERT_EQ(out.size(), 8u);
  for (size_t i = 0; i < out.size(); ++i) EXPECT_EQ(out[i], "reply " + std::to_string(i));
}

TEST(FanOut, ARepliesBeforeIssueReturnsAndNoCallsAtAll) {
  EXPECT_EQ(FanOut<int>(3, [](size_t i, std::function<void(int)> done) { done(10 * int(i)); }),
            (std::vector<int>{0, 10, 20}));
  EXPECT_TRUE((FanOut<int>(0, [](size_t, std::function<void(int)>) { FAIL(); })).empty());
}

TEST(FanOut, ASecondReplyToTheSameCallIsIgnored) {
  std::function<void(int)> kept;
  const std::vector<int> out = FanOut<int>(2, [&](size_t i, std::function<void(int)> done) {
    done(static_cast<int>(i) + 1);
    done(99);  // ignored
    if (i == 1) kept = done;
  });
  EXPECT_EQ(out, (std::vector<int>{1, 2}));
  kept(7);  // after FanOut returned: harmless
}

}  // namespace
}  // namespace codl

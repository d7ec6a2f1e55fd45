// The thread counts the multi-threaded tests run each path at: 1 (the result every count must
// equal), 2, 3 (work that does not split evenly) and 8 (more threads than this project's
// 2-core CI machines have). scripts/sanitize.sh runs these tests under ThreadSanitizer.
#pragma once

namespace fp8q::test {

inline constexpr int kThreadCounts[] = {1, 2, 3, 8};

}  // namespace fp8q::test

// doctest main for single-process unit tests. Sets flush-to-zero like the trainer does.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <xmmintrin.h>
#include <pmmintrin.h>

int main(int argc, char** argv) {
  _MM_SET_FLUSH_ZERO_MODE(_MM_FLUSH_ZERO_ON);
  _MM_SET_DENORMALS_ZERO_MODE(_MM_DENORMALS_ZERO_ON);
  doctest::Context context(argc, argv);
  return context.run();
}

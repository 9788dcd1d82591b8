// For orphan_test.py: starts a redis-server (tools/demo/redis_process.hpp; the
// program is argv[2]), prints its port on one line, waits for a line on stdin (time
// for the test to find the server), then, by argv[1]:
//   wait   blocks until it is killed;
//   abort  aborts (no destructor runs).
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>

#include "redis_process.hpp"

int main(int argc, char** argv) {
    if (argc != 3 || (std::strcmp(argv[1], "wait") != 0 && std::strcmp(argv[1], "abort") != 0)) {
        std::fprintf(stderr, "usage: orphan_helper wait|abort REDIS_SERVER\n");
        return 2;
    }
    try {
        fairpool::demo::redis_process redis(argv[2]);
        std::printf("%u\n", static_cast<unsigned>(redis.port()));
        std::fflush(stdout);
        for (int c = 0; c != EOF && c != '\n';) c = std::getchar();
        if (std::strcmp(argv[1], "abort") == 0) std::abort();
        for (;;) ::pause();
    } catch (const std::exception& e) {
        std::fprintf(stderr, "orphan_helper: %s\n", e.what());
        return 1;
    }
}

// For orphan_test.py: starts a throwaway cluster (examples/postgres/cluster.hpp),
// prints "DIRECTORY PORT" on one line, waits for a line on stdin (time for the test
// to find the server), then, by its argument:
//   wait   blocks until it is killed;
//   abort  aborts (no destructor runs);
//   exit   returns from main (the cluster's destructor runs).
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>

#include "cluster.hpp"

int main(int argc, char** argv) {
    const char* mode = argc > 1 ? argv[1] : "";
    if (std::strcmp(mode, "wait") != 0 && std::strcmp(mode, "abort") != 0 && std::strcmp(mode, "exit") != 0) {
        std::fprintf(stderr, "usage: orphan_helper wait|abort|exit\n");
        return 2;
    }
    try {
        pg::cluster db;
        std::printf("%s %u\n", db.directory().c_str(), static_cast<unsigned>(db.port()));
        std::fflush(stdout);
        for (int c = 0; c != EOF && c != '\n';) c = std::getchar();
        if (std::strcmp(mode, "abort") == 0) std::abort();
        if (std::strcmp(mode, "wait") == 0)
            for (;;) ::pause();
    } catch (const std::exception& e) {
        std::fprintf(stderr, "orphan_helper: %s\n", e.what());
        return 1;
    }
    return 0;
}

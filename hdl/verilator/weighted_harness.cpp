// Verilator testbench for the weighted count block (hdl/src/weighted_count.rs, through
// weighted_shell). Reads cases on stdin, "KEY PROBE PRICE RECIPROCAL RUN" each, feeds
// one per clock cycle and prints each case's count on a line of its own, in order
// (LATENCY, the block's cycles from inputs to count, is defined on the command line).
#include "Vweighted_shell.h"
#include "verilated.h"
#include <cstdio>
#include <vector>

int main(int argc, char** argv) {
    Verilated::commandArgs(argc, argv);
    Vweighted_shell* t = new Vweighted_shell;
    std::vector<unsigned> in;
    unsigned v;
    while (scanf("%u", &v) == 1) in.push_back(v);
    if (in.size() % 5 != 0) return 2;
    long n = in.size() / 5;
    t->clock = 0;
    t->eval();
    for (long cycle = 0; cycle + 1 < n + LATENCY; cycle++) {
        if (cycle < n) {
            t->key = in[5 * cycle];
            t->probe = in[5 * cycle + 1];
            t->price = in[5 * cycle + 2];
            t->reciprocal = in[5 * cycle + 3];
            t->run = in[5 * cycle + 4];
        }
        t->clock = 1;
        t->eval();
        t->clock = 0;
        t->eval();
        // After the edge of cycle k, the count of the case fed in cycle k + 1 - LATENCY.
        if (cycle + 1 >= LATENCY) printf("%u\n", (unsigned)t->count);
    }
    delete t;
    return 0;
}

// Verilator testbench for the engine (through engine_shell). Reads commands on stdin,
// drives the block through its handshakes exactly as the RustHDL testbench does
// (hdl/src/testbench.rs), and prints results on stdout:
//   credits N c0 .. c{N-1}             write credits        -> "ok"
//   read N                             read credits         -> "credits c0 ..."
//   quantum MODE F G STALL N d0 ..     run one quantum      -> "result ERR CYCLES a0 c0 a1 c1 ..."
// LANES is defined on the compiler command line.
#include "Vengine_shell.h"
#include "verilated.h"
#include <cstdio>
#include <cstring>
#include <vector>

static Vengine_shell* t;

static void tick() {
    t->clock = 1;
    t->eval();
    t->clock = 0;
    t->eval();
}

int main(int argc, char** argv) {
    Verilated::commandArgs(argc, argv);
    t = new Vengine_shell;
    t->clock = 0;
    t->eval();
    char cmd[32];
    while (scanf("%31s", cmd) == 1) {
        if (!strcmp(cmd, "credits")) {
            long n;
            if (scanf("%ld", &n) != 1) return 2;
            std::vector<unsigned> c(n);
            for (long i = 0; i < n; i++) if (scanf("%u", &c[i]) != 1) return 2;
            for (long row = 0; row * LANES < n; row++) {
                t->credit_row = row;
                for (int lane = 0; lane < LANES; lane++) {
                    long u = row * LANES + lane;
                    t->credit_wdata[lane] = u < n ? c[u] : 0;
                }
                t->credit_write = 1;
                tick();
            }
            t->credit_write = 0;
            t->eval();
            printf("ok\n");
        } else if (!strcmp(cmd, "read")) {
            long n;
            if (scanf("%ld", &n) != 1) return 2;
            printf("credits");
            for (long row = 0; row * LANES < n; row++) {
                t->credit_row = row;
                tick();
                for (int lane = 0; lane < LANES && row * LANES + lane < n; lane++) printf(" %u", (unsigned)t->credit_rdata[lane]);
            }
            printf("\n");
        } else if (!strcmp(cmd, "quantum")) {
            unsigned mode, f, g, stall;
            long n;
            if (scanf("%u %u %u %u %ld", &mode, &f, &g, &stall, &n) != 5) return 2;
            std::vector<unsigned> d(n);
            for (long i = 0; i < n; i++) if (scanf("%u", &d[i]) != 1) return 2;
            t->mode = mode;
            t->n_users = n;
            t->fair = f;
            t->guaranteed = g;
            t->start = 1;
            t->in_valid = 0;
            t->out_ready = 0;
            tick();
            t->start = 0;
            t->eval();
            long rows = (n + LANES - 1) / LANES, row = 0;
            std::vector<unsigned> alloc, credit;
            bool stalled = false;
            for (long i = 0; i < 100000000L && t->busy; i++) {
                bool active = !stall || stalled;
                bool offer = row < rows && active;
                t->in_valid = offer;
                for (int lane = 0; lane < LANES; lane++) {
                    long u = row * LANES + lane;
                    t->in_data[lane] = (offer && u < n) ? d[u] : 0;
                }
                t->out_ready = active;
                t->eval();
                bool accepted = offer && t->in_ready;
                if (t->out_valid && active) {
                    for (int lane = 0; lane < LANES; lane++) {
                        if ((long)alloc.size() < n) {
                            alloc.push_back(t->out_alloc[lane]);
                            credit.push_back(t->out_credit[lane]);
                        }
                    }
                }
                if (accepted) row++;
                stalled = !stalled;
                tick();
            }
            t->in_valid = 0;
            t->out_ready = 0;
            t->eval();
            printf("result %u %u", (unsigned)t->error, (unsigned)t->cycles);
            for (size_t i = 0; i < alloc.size(); i++) printf(" %u %u", alloc[i], credit[i]);
            printf("\n");
        } else {
            return 2;
        }
        fflush(stdout);
    }
    delete t;
    return 0;
}

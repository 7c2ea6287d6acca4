// Verilator testbench for the engine (through engine_shell). Reads commands on stdin,
// drives the block through the same handshakes and stall sequence as the RustHDL
// testbench (hdl/src/testbench.rs, which also asserts that a stalled result beat holds
// still; this one does not), and prints results on stdout:
//   credits N c0 .. c{N-1}             write credits        -> "ok"
//   read N                             read credits         -> "credits c0 ..."
//   quantum MODE F G SEED N d0 ..      run one quantum      -> "result ERR CYCLES a0 c0 a1 c1 ..."
// SEED 0: the streams never stall; otherwise the seed of the same xorshift64 sequence as
// the RustHDL testbench, dropping in_valid and out_ready each with probability 1/4.
// LANES is defined on the compiler command line; it must be at least 3 (the shell's
// wide ports are then Verilator wide words, one 32-bit word per lane).
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
                tick();  // the credit bank's read
                tick();  // its output register
                for (int lane = 0; lane < LANES && row * LANES + lane < n; lane++) printf(" %u", (unsigned)t->credit_rdata[lane]);
            }
            printf("\n");
        } else if (!strcmp(cmd, "quantum")) {
            unsigned mode, f, g;
            unsigned long long rng;
            long n;
            if (scanf("%u %u %u %llu %ld", &mode, &f, &g, &rng, &n) != 5) return 2;
            auto draw = [&rng]() {
                if (rng == 0) return true;
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                return (rng & 3) != 0;
            };
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
            for (long i = 0; i < 100000000L && t->busy; i++) {
                bool in_active = draw();
                bool out_active = draw();
                bool offer = row < rows && in_active;
                t->in_valid = offer;
                for (int lane = 0; lane < LANES; lane++) {
                    long u = row * LANES + lane;
                    t->in_data[lane] = (offer && u < n) ? d[u] : 0;
                }
                t->out_ready = out_active;
                t->eval();
                bool accepted = offer && t->in_ready;
                if (t->out_valid && out_active) {
                    for (int lane = 0; lane < LANES; lane++) {
                        if ((long)alloc.size() < n) {
                            alloc.push_back(t->out_alloc[lane]);
                            credit.push_back(t->out_credit[lane]);
                        }
                    }
                }
                if (accepted) row++;
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

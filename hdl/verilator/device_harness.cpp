// Verilator testbench for the device top level (through fairshare_device): an AXI4-Lite
// master and two AXI-Stream agents, the same roles as hdl/src/bus_testbench.rs. Commands on
// stdin, answers on stdout:
//   seed S                       stall seed (0: no stalls; xorshift64, each valid/ready
//                                the testbench drives drops with probability 1/4)
//   w OFF DATA STRB              AXI4-Lite write           -> "b RESP"
//   w2 OFF1 DATA1 OFF2 DATA2     two full-word writes, the second offered before the
//                                first is answered (no stalls) -> "b RESP1 RESP2"
//   r OFF                        AXI4-Lite read            -> "r DATA RESP"
//   q SEQ N d0 .. d{N-1}         doorbell SEQ, stream the demands (tlast on the last
//                                row), take the results, poll STATUS until done
//                                                          -> "q STATUS a0 c0 a1 c1 ..."
// The testbench itself checks the slave's side of the handshakes: a response or result
// beat must not change while it waits, and tlast must mark the last result row.
// LANES (>= 3, so that the packed streams are Verilator wide words), DOORBELL_OFFSET,
// STATUS_OFFSET, BUSY_BIT and DONE_BIT come from -D, taken from driver/src/abi.rs.
#include "Vfairshare_device.h"
#include "verilated.h"
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

static Vfairshare_device* t;
static unsigned long long rng = 0;
static std::vector<unsigned> demand;
static long next_row = 0, n_users = 0;
static std::vector<unsigned> alloc, credit;
static bool held = false;
static std::vector<unsigned> held_beat;

static bool active() {
    if (rng == 0) return true;
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (rng & 3) != 0;
}

static void fail(const char* what) {
    fprintf(stderr, "protocol violation: %s\n", what);
    exit(3);
}

// Drives the stream agents, settles, samples their handshakes.
static void pre() {
    long rows = (n_users + LANES - 1) / LANES;
    bool offer = next_row < rows && (long)demand.size() == n_users && n_users > 0 && active();
    t->s_axis_tvalid = offer;
    for (int lane = 0; lane < LANES; lane++) {
        long u = next_row * LANES + lane;
        t->s_axis_tdata[lane] = (offer && u < n_users) ? demand[u] : 0;
    }
    t->s_axis_tlast = offer && next_row == rows - 1;
    bool take = active();
    t->m_axis_tready = take;
    t->eval();
    if (offer && t->s_axis_tready) next_row++;
    if (t->m_axis_tvalid) {
        std::vector<unsigned> beat;
        for (int i = 0; i < 2 * LANES; i++) beat.push_back(t->m_axis_tdata[i]);
        beat.push_back(t->m_axis_tlast);
        if (held && beat != held_beat) fail("result beat changed while tready was low");
        held = false;
        if (take) {
            for (int lane = 0; lane < LANES; lane++) {
                if ((long)alloc.size() < n_users) {
                    alloc.push_back(beat[2 * lane]);
                    credit.push_back(beat[2 * lane + 1]);
                }
            }
            if ((beat[2 * LANES] == 1) != ((long)alloc.size() == n_users)) fail("tlast not on the last result row");
        } else {
            held = true;
            held_beat = beat;
        }
    }
}

static void edge() {
    t->clock = 1;
    t->eval();
    t->clock = 0;
    t->eval();
}

static unsigned axi_write(unsigned off, unsigned data, unsigned strb) {
    bool aw_done = false, w_done = false, aw_on = false, w_on = false, has_held = false;
    unsigned held_resp = 0;
    for (long i = 0; i < 100000; i++) {
        aw_on |= !aw_done && active();
        w_on |= !w_done && active();
        bool bready = active();
        t->s_axil_awvalid = aw_on && !aw_done;
        t->s_axil_awaddr = off;
        t->s_axil_wvalid = w_on && !w_done;
        t->s_axil_wdata = data;
        t->s_axil_wstrb = strb;
        t->s_axil_bready = bready;
        pre();
        aw_done |= t->s_axil_awvalid && t->s_axil_awready;
        w_done |= t->s_axil_wvalid && t->s_axil_wready;
        bool finished = false;
        unsigned resp = 0;
        if (t->s_axil_bvalid) {
            resp = t->s_axil_bresp;
            if (has_held && resp != held_resp) fail("bresp changed while bvalid waited");
            has_held = true;
            held_resp = resp;
            finished = bready;
        }
        edge();
        if (finished) {
            t->s_axil_awvalid = 0;
            t->s_axil_wvalid = 0;
            t->s_axil_bready = 0;
            return resp;
        }
    }
    fail("write never completed");
    return 0;
}

// Two full-word writes, the second's address and data offered as soon as the channels
// took the first's (AXI4-Lite lets a master run ahead of the responses), bready high, no
// stalls: they take effect as close together as the slave allows. Both responses, in order.
static void axi_write_pair(const unsigned* off, const unsigned* data, unsigned* resp) {
    int aw = 0, w = 0, answered = 0;
    for (long i = 0; i < 100000; i++) {
        t->s_axil_awvalid = aw < 2;
        t->s_axil_awaddr = off[aw < 2 ? aw : 1];
        t->s_axil_wvalid = w < 2;
        t->s_axil_wdata = data[w < 2 ? w : 1];
        t->s_axil_wstrb = 15;
        t->s_axil_bready = 1;
        pre();
        bool aw_taken = t->s_axil_awvalid && t->s_axil_awready;
        bool w_taken = t->s_axil_wvalid && t->s_axil_wready;
        if (t->s_axil_bvalid) resp[answered++] = t->s_axil_bresp;
        edge();
        aw += aw_taken;
        w += w_taken;
        if (answered == 2) {
            t->s_axil_awvalid = 0;
            t->s_axil_wvalid = 0;
            t->s_axil_bready = 0;
            return;
        }
    }
    fail("pair of writes never completed");
}

static void axi_read(unsigned off, unsigned* data, unsigned* resp) {
    bool ar_done = false, ar_on = false, has_held = false;
    unsigned hd = 0, hr = 0;
    for (long i = 0; i < 100000; i++) {
        ar_on |= !ar_done && active();
        bool rready = active();
        t->s_axil_arvalid = ar_on && !ar_done;
        t->s_axil_araddr = off;
        t->s_axil_rready = rready;
        pre();
        ar_done |= t->s_axil_arvalid && t->s_axil_arready;
        bool finished = false;
        if (t->s_axil_rvalid && ar_done) {
            if (has_held && (hd != t->s_axil_rdata || hr != t->s_axil_rresp)) fail("read data changed while rvalid waited");
            has_held = true;
            hd = t->s_axil_rdata;
            hr = t->s_axil_rresp;
            finished = rready;
        }
        edge();
        if (finished) {
            t->s_axil_arvalid = 0;
            t->s_axil_rready = 0;
            *data = hd;
            *resp = hr;
            return;
        }
    }
    fail("read never completed");
}

int main(int argc, char** argv) {
    Verilated::commandArgs(argc, argv);
    t = new Vfairshare_device;
    t->clock = 0;
    t->eval();
    char cmd[16];
    while (scanf("%15s", cmd) == 1) {
        if (!strcmp(cmd, "seed")) {
            if (scanf("%llu", &rng) != 1) return 2;
            continue;
        } else if (!strcmp(cmd, "w")) {
            unsigned off, data, strb;
            if (scanf("%u %u %u", &off, &data, &strb) != 3) return 2;
            printf("b %u\n", axi_write(off, data, strb));
        } else if (!strcmp(cmd, "w2")) {
            unsigned off[2], data[2], resp[2];
            if (scanf("%u %u %u %u", &off[0], &data[0], &off[1], &data[1]) != 4) return 2;
            axi_write_pair(off, data, resp);
            printf("b %u %u\n", resp[0], resp[1]);
        } else if (!strcmp(cmd, "r")) {
            unsigned off, data, resp;
            if (scanf("%u", &off) != 1) return 2;
            axi_read(off, &data, &resp);
            printf("r %u %u\n", data, resp);
        } else if (!strcmp(cmd, "q")) {
            unsigned seq;
            long n;
            if (scanf("%u %ld", &seq, &n) != 2) return 2;
            demand.assign(n, 0);
            for (long i = 0; i < n; i++) if (scanf("%u", &demand[i]) != 1) return 2;
            n_users = n;
            next_row = 0;
            alloc.clear();
            credit.clear();
            held = false;
            if (axi_write(DOORBELL_OFFSET, seq, 15) != 0) fail("doorbell refused");
            unsigned status = 0, resp = 0;
            for (long i = 0; i < 10000000L; i++) {
                axi_read(STATUS_OFFSET, &status, &resp);
                if ((status & (BUSY_BIT | DONE_BIT)) == DONE_BIT) break;
            }
            demand.clear();
            printf("q %u", status);
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

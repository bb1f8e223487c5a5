// FlashAttention forward for Hopper (sm_90a): wgmma tensor cores, TMA loads on mbarriers,
// producer/consumer warp specialization. One self-contained file on the task's launch ABI.
// kernels/flash_fwd/NOTES.md logs each version with its measured numbers.
//
// Work split. A work tile is BLOCK_M query rows of one (batch, head), 64 per consumer
// warpgroup (d64: 3 consumers, 192 rows, SM90_D64_CONSUMERS=0|2 for two; d128/d256: 2
// consumers, 128 rows); its CTA walks that
// head's keys in tiles of BLOCK_N (128 for d64 and causal d128, 176 for d128, 80 for d256: as
// wide as a consumer's registers hold O, S and P; knobs SM90_D128_BLOCK_N=128 and
// SM90_D256_BLOCK_N=64 narrow them). The grid is persistent (SM90_PERSISTENT): one CTA per SM
// takes a work tile per round, so the next tile's Q, K and V load while this one finishes and
// no CTA launch sits between tiles. Non-causal: query blocks are the fastest index, so CTAs at
// work together share a head's K and V in L2 (SM90_PERSISTENT_MAX_KEY_TILES=N: one CTA per tile
// where a tile has more than N key tiles). Causal: persistent in head groups dealt in snake
// order, each head's query blocks longest first, where whole groups fill the SMs; elsewhere
// (and with SM90_CAUSAL_PERSISTENT=0) one CTA per tile in the same order (grid_for).
//
// Warps and roles (warpgroup 0 and the consumers):
//   warpgroup 0, the producer: one thread issues every TMA load (per work tile Q, then K and V
//     per key tile into a ring of STAGES buffers that runs on across work tiles); the
//     warpgroup gives up registers (setmaxnreg 24, or 32 beside three consumers).
//   the consumers (setmaxnreg 240, or 160 for three): tile 0 runs S = Q K^T alone; then each
//     step j issues S_j and P_{j-1} V_{j-1} together (wgmma, S from shared memory, P from
//     registers as the A operand), waits for S_j only, masks it and runs the online softmax
//     (fp32 registers, exp2) while P V is still on the tensor cores (SM90_SOFTMAX_UNDER_PV:
//     where K's buffer is released decides whether ptxas lets it, see the loop), then waits
//     for P V and converts the new P to bf16; O is rescaled for the new row maxima at the next
//     step, on the CUDA cores while S runs on the tensor cores; a last step finishes P V. The
//     three phases are straight-line code: a wgmma under a branch makes ptxas serialise them
//     all (C7520).
//   Turns (SM90_PINGPONG): consumers issue their GEMMs in round-robin turns (named barriers),
//     so one's softmax runs while another's GEMMs do.
//
// Pipeline. Barriers in shared memory: q_full and q_empty (Q is free once every consumer's
//   last S of the work tile is done); per stage k_full and v_full (the TMA completes the
//   transaction bytes), k_empty and v_empty (one arrival per consumer warp: K once its S is
//   done, V once its P V is). The producer runs up to STAGES tiles ahead (3 for d64, 2 else;
//   SM90_D128_NARROW_STAGES=3 gives d128's 128-key tiles a third).
//
// Shared memory (dynamic, 1024-byte aligned). Every tile is stored as column chunks of 64 bf16
//   (128 bytes per row, the widest TMA box with 128-byte swizzle): chunk c holds rows x 64
//   columns, row r at r*128 bytes, the 16-byte units of a row XOR-ed with (r % 8). This is the
//   layout the TMA writes with CU_TENSOR_MAP_SWIZZLE_128B and the layout wgmma reads with the
//   128-byte-swizzle descriptor: K-major for Q and K (A and B of S), N-major for V (B of P V,
//   with the transpose bit). Q: HEADDIM/64 chunks of BLOCK_M rows; K and V: STAGES x
//   HEADDIM/64 chunks of BLOCK_N rows. The epilogue stores O from registers (16 bytes a lane
//   after two exchanges in the quad), so the next work tile's Q may load while it runs.
//
// Masking and ragged edges. Tensor maps are 4-D (headdim, heads, seqlen, batch) over the dense
//   tensors, so a tile past seqlen_q or seqlen_k is clipped by the hardware: loads fill zeros;
//   the epilogue drops rows past seqlen_q. Scores of keys >= seqlen_k, and causal ones (key
//   j > query i + seqlen_k - seqlen_q, bottom-right aligned), become -inf, only in the tiles
//   that need it. A query tile
//   whose rows see no key at all runs no key tile and writes out = 0 and lse = +inf; a row that
//   sees none inside a tile keeps max -inf and a zero sum, and the exp2 base is taken as 0 then
//   so no inf - inf appears.
//
// Host side: the three tensor maps (Q, K, V) are encoded per call with the driver's
// cuTensorMapEncodeTiled (libcuda, which the harness links because task.toml's
// driver_functions allows that function) and passed by value as __grid_constant__ parameters;
// grid_for picks the grid per launch.
#include <cuda.h>
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <stdint.h>
#include <math.h>

namespace {

constexpr int kWarpgroupThreads = 128;
constexpr int kMaxConsumers = 3;
#ifndef SM90_PINGPONG
#define SM90_PINGPONG 1
#endif
constexpr bool kPingPong = SM90_PINGPONG != 0;     // consumers take turns at the tensor cores
#ifndef SM90_RESCALE_SLACK
#define SM90_RESCALE_SLACK 8
#endif
// How far (base 2) a row's maximum may rise before O and the sum are rescaled to it; 0 rescales
// at every rise, as the textbook online softmax does.
constexpr float kRescaleSlack = static_cast<float>(SM90_RESCALE_SLACK);
#ifndef SM90_SOFTMAX_UNDER_PV
#define SM90_SOFTMAX_UNDER_PV 1
#endif
// Where a consumer releases K_j's buffer in the steady loop: 0 before the mask (v19), 1 after
// the softmax (v20: then the softmax runs under P V, see the loop), 2 after it except at d64.
#ifndef SM90_SOFTMAX_TREE
#define SM90_SOFTMAX_TREE 0
#endif
// 1: the softmax takes both rows' maxima at once, each as four interleaved chains, and sums each
// row's exponentials in two partial sums; 0: one chain per row, row after row (v20). The chains
// set how soon the first exponential can start after S lands. Measured once by do_bench alone
// (2026-12-04, v21t): no gain beyond the 1.4% A/A spread.
constexpr bool kSoftmaxTree = SM90_SOFTMAX_TREE != 0;
#ifndef SM90_WAIT_HINT
#define SM90_WAIT_HINT 0
#endif
// 1: mbarrier waits carry a suspend-time hint (the warp sleeps until the phase flips, up to the
// hint); 2: only the producer's (for a free buffer), the consumers' waits for data spin as
// before; 0: no hint. ncu at d128 8k (2026-12-03) counted about 30M barrier polls and as many
// branches back, ~11% of the instructions executed (FA3: 3M); at d128 causal 4k (2026-12-04)
// 14.4 M of 36 M instructions outside the step, most of them the producer's waits for K.
// Measured in turn with FA3 (H100, 2026-12-05): 1 and 2 both within 0.3% of v21 everywhere.
static_assert(SM90_WAIT_HINT >= 0 && SM90_WAIT_HINT <= 2, "SM90_WAIT_HINT: 0, 1 or 2");
constexpr bool kWaitHint = SM90_WAIT_HINT == 1;
constexpr bool kProducerWaitHint = SM90_WAIT_HINT != 0;
#ifndef SM90_STALE_MAX
// Unmasked steady steps (the split loop's first) skip the row maximum: 1 at every head dim, 2 at
// d128 only, 3 at d64 and d128, 0 never. Their exponentials are taken against the row's current
// base and checked afterwards through their sum, which bounds each of them (all are >= 0); only
// a warp where a sum passes 2^SM90_RESCALE_SLACK takes the exact path. The maximum's only use in
// those steps is to keep the exponentials from overflowing, which the sum shows as well, after
// the fact. Beside three consumers (128 registers) only with SM90_STALE_THREE. Measured in turn
// with FA3 (H100, 2026-12-05, kernels/flash_fwd/NOTES.md): at d128 +4.3% non-causal and +4.6%
// causal over v24 with SM90_STALE_MIN_KEYS=2048 (up to +10% at 16k); at d256 -2% (1, every
// length) and -0.2% (from 2048 keys); at d64 (3, v31) +2.9% non-causal, +2.3% causal over v28.
#define SM90_STALE_MAX 3
#endif
static_assert(SM90_STALE_MAX >= 0 && SM90_STALE_MAX <= 3,
              "SM90_STALE_MAX: 0, 1, 2 (d128 only) or 3 (d64 and d128)");
#ifndef SM90_STALE_MIN_KEYS
// Launches with fewer keys than this keep the exact maximum, in a kernel of their own (at d128
// the stale kernel lost 5-15% at 512 and 1k non-causal in turn, and gained from 2k; not its
// exact path's code in the loop: with that code outside the loop (SM90_STALE_COLD=1) it lost
// the same, H100, 2026-12-05 evening; a third of it was the producer's spilled invariants,
// gone in v32). 1024 since v34 (with SM90_D128_SHORT_KEYS 2048, so non-causal 1k takes the
// 128-key stale kernel): d128 causal 1k +2.9%, H200, in turn, 2026-12-05 20:10.
#define SM90_STALE_MIN_KEYS 1024
#endif
#ifndef SM90_STALE_MIN_KEYS_D64
// The same at d64, where the stale kernels gained at every length from 1k (H100, in turn,
// 2026-12-05: v30t, +1% to +5%) and lost 1% at non-causal 512 only.
#define SM90_STALE_MIN_KEYS_D64 0
#endif
template <int HEADDIM>
constexpr int stale_min_keys() {
    return HEADDIM == 64 ? SM90_STALE_MIN_KEYS_D64 : SM90_STALE_MIN_KEYS;
}
#ifndef SM90_STALE_COLD
// 1: the stale step's exact path outside the steady loop (the loop exits to it and resumes),
// so that the path every step runs is contiguous code; 0: inside the step (v28); 2: outside at
// d64 only, whose three-consumer kernel spills into its loop with the exact path inline (the
// default since v31). At d128 the loop is then the 526 (176-key) instructions every step runs,
// against 1,286, and ptxas spills 76 bytes around it; measured there (H100, in turn,
// 2026-12-05 evening) within 0.4% of the inline layout at every length, and no cure for the
// short-shape loss of SM90_STALE_MIN_KEYS, whose suspect it was.
#define SM90_STALE_COLD 2
#endif
static_assert(SM90_STALE_COLD >= 0 && SM90_STALE_COLD <= 2, "SM90_STALE_COLD: 0, 1 or 2 (d64)");
template <int HEADDIM>
__host__ __device__ constexpr bool stale_cold() {
    return SM90_STALE_COLD == 1 || (SM90_STALE_COLD == 2 && HEADDIM == 64);
}
#ifndef SM90_STALE_THREE
// 1: the stale kernels also beside three consumers (d64's, 128 registers each). With the exact
// path inline ptxas spilled into their steady loop; with SM90_STALE_COLD=1 the loop holds 389
// instructions against the exact kernel's 454, and four reloads of spilled values (ptxas, CUDA
// 13.0, 2026-12-05). d64 is bound by issue (NOTES.md, 2026-12-05): a shorter step is what it
// needs. Default since v31 (with SM90_STALE_MAX=3 and SM90_STALE_COLD=2): d64 +2.9%
// non-causal, +2.3% causal over v28 (H100, in turn, 2026-12-05 evening).
#define SM90_STALE_THREE 1
#endif
static_assert(SM90_STALE_THREE == 0 || SM90_STALE_THREE == 1, "SM90_STALE_THREE: 0 or 1");
constexpr bool kStaleThree = SM90_STALE_THREE != 0;
template <int HEADDIM>
__host__ __device__ constexpr bool stale_max() {
    return SM90_STALE_MAX == 1 || (SM90_STALE_MAX == 2 && HEADDIM == 128) ||
           (SM90_STALE_MAX == 3 && HEADDIM != 256);
}
#ifndef SM90_SKIP_UNSEEN
#define SM90_SKIP_UNSEEN 1
#endif
// 1: a consumer warpgroup runs no GEMM for the key tiles none of its rows can see (past its own
// last row's diagonal, causal; or all its rows past seqlen_q, the last query block), only takes
// its turns and releases the buffers. The CTA's tile count is set by its last row, so without
// it the first warpgroups of a causal block, and every warpgroup past seqlen_q, compute tiles
// that are all -inf: at d64 512 (192-row blocks) a quarter of causal and a ninth of non-causal
// warpgroup steps. Default since v21: measured (fa_bench, 2026-12-03 21:06 and 21:12) d64 causal
// +3-5% over v20, d256 +1-2%, nothing lost elsewhere.
constexpr bool kSkipUnseen = SM90_SKIP_UNSEEN != 0;
#ifndef SM90_SPLIT_MASKED_LOOP
#define SM90_SPLIT_MASKED_LOOP 1
#endif
// 1: the steady loop runs as two loops, the key tiles that need no mask and then those that do
// (FA3 has a loop of each kind); 0: one loop that branches to the mask on each step (v21). ncu
// at d128 causal 4k (2026-12-04 18:31) put 1.1% of v21's samples on branch resolution, and 1.5%
// more on the join and the uniform compare around it, all in the softmax, where FA3's unmasked
// loop has no branch. Default since v24: measured in turn with FA3 (H100, 2026-12-05, fa_bench
// --in-turn) d128 causal +2.2% over v21, d64 non-causal +0.6%, d256 -0.4% (A/A spread 0.1%).
// 2: two loops except at d256 (one there, as v21), for that -0.4%; not measured yet.
static_assert(SM90_SPLIT_MASKED_LOOP >= 0 && SM90_SPLIT_MASKED_LOOP <= 2,
              "SM90_SPLIT_MASKED_LOOP: 0, 1 or 2");
template <int HEADDIM>
__host__ __device__ constexpr bool split_masked_loop() {
    return SM90_SPLIT_MASKED_LOOP == 1 || (SM90_SPLIT_MASKED_LOOP == 2 && HEADDIM != 256);
}
#ifndef SM90_PERSISTENT
#define SM90_PERSISTENT 1
#endif
constexpr bool kPersistent = SM90_PERSISTENT != 0;  // one CTA per SM walks the work tiles
#ifndef SM90_CAUSAL_PERSISTENT
#define SM90_CAUSAL_PERSISTENT 1
#endif
// Causal grids persistent too, where whole head groups fill the SMs (grid_for); elsewhere, and
// without it, a causal grid has one CTA per tile and the hardware hands the next tile to
// whichever SM frees first (measured better than a static deal that leaves SMs uneven).
constexpr bool kCausalPersistent = kPersistent && SM90_CAUSAL_PERSISTENT != 0;
#ifndef SM90_DYNAMIC_CAUSAL
#define SM90_DYNAMIC_CAUSAL 0
#endif
// 1: a causal grid is persistent on every SM, and after its first tile each CTA takes the next
// one in decode_tile's order (head groups, longest query blocks first) from a counter in global
// memory, whenever it is free, as FA3's causal scheduler does; 0: the static deal of whole head
// groups (or one CTA per tile). The static deal leaves SMs idle where 132 is not a multiple of
// the query blocks (128 of 132 at d128 causal 1k-16k), and dealing it over all 132 (v22f)
// unbalanced it: counted per CTA (key tiles + 1 a tile), v21's deal ends 1.031x after the
// ideal on 132 SMs, v22f's 1.41-1.75x (it lost 25-42%, measured), a dynamic hand-out 1.002-1.009x.
// Its first run (H100, 2026-12-05) hung on fa_smoke's first causal shape, before any timing:
// its consumers asked setmaxnreg for more registers than its producer gave back (kConsumerRegs
// in the kernel). Fixed on the CPU (tests/test_sm90_sass.py reads the SASS), not yet run.
constexpr bool kDynamicCausal = SM90_DYNAMIC_CAUSAL != 0;
#ifndef SM90_DYNAMIC_GROUP_MIB
// With SM90_DYNAMIC_CAUSAL: the MiB of K and V a head group of its order holds (grid_for). 32,
// FA3's size, spreads the tiles running at once over 4x the heads of the static deal's groups
// at d128 causal 1k (64 heads, 32 MiB of K and V, more than one half of the H100's L2): one
// suspect of the dynamic scheduler's loss (v30d, -5.8% at d128 causal); 8 and 2 test it.
#define SM90_DYNAMIC_GROUP_MIB 32
#endif
static_assert(SM90_DYNAMIC_GROUP_MIB >= 1, "SM90_DYNAMIC_GROUP_MIB: at least 1");
#ifndef SM90_PERSISTENT_MAX_KEY_TILES
#define SM90_PERSISTENT_MAX_KEY_TILES 0
#endif
// Non-causal grids are persistent only while a tile has at most this many key tiles (0: always).
// What persistence saves is the changeover between tiles, a cost per tile.
constexpr int kPersistentMaxKeyTiles = SM90_PERSISTENT_MAX_KEY_TILES;
constexpr int kChunk = 64;                          // bf16 columns per swizzled chunk (128 B)
constexpr int kRowBytes = 128;
constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;

// Key-tile widths: as wide as registers and shared memory allow (fewer softmax reductions and
// O rescales per key); causal d128 keeps 128 so fewer keys are wasted on the diagonal.
#ifndef SM90_D128_BLOCK_N
#define SM90_D128_BLOCK_N 176
#endif
#ifndef SM90_D256_BLOCK_N
#define SM90_D256_BLOCK_N 80
#endif
#ifndef SM90_D128_SHORT_KEYS
// Non-causal d128 launches with at most this many keys use the 128-key kernel (the causal
// launches' own, so no kernel is added) instead of SM90_D128_BLOCK_N's; 0: never. For d128
// non-causal 512-1k, the worst shapes against FA3 (0.91, H100 and H200, 2026-12-05), where
// 176-key tiles leave the last tile partly empty (512 keys: 3 tiles, 9% of the last's work
// wasted; 1k: 6, 2% of the whole) and each CTA's tile has only 3-6 steps to fill its pipeline.
// v21 with 128-key tiles at every d128 length measured the same geomean over d128's 12 shapes
// (H200, 2026-12-04); shape by shape not recorded. 1024 (v32) against 0, H100, in turn,
// 2026-12-05 19:50: d128 non-causal 512 +5.3%, 1k +3.6%. 2048 (v34, with SM90_STALE_MIN_KEYS
// 1024) against v32, H200, in turn, 20:10: non-causal 1k +6.0%, 2k +7.1% (128-key stale tiles).
#define SM90_D128_SHORT_KEYS 2048
#endif
template <int HEADDIM, bool CAUSAL>
constexpr int block_n() {
    return HEADDIM == 64 ? 128 : HEADDIM == 128 ? (CAUSAL ? 128 : SM90_D128_BLOCK_N)
                                                : SM90_D256_BLOCK_N;
}

#ifndef SM90_D64_CONSUMERS
// d64 query rows per CTA, 64 per consumer: 2 (128 rows), 3 (192), or 0: two for causal grids
// of at most 1024 query rows (whose last block of 192 would be a third empty: measured +4.5%
// and +6.5% at d64 causal 512 and 1k on v14, one CTA per tile), three elsewhere. 0 is the
// default since v21 (with SM90_SKIP_UNSEEN: d64 causal 0.937 -> 0.973 of FA3, 2026-12-03 21:12).
#define SM90_D64_CONSUMERS 0
#endif
static_assert(SM90_D64_CONSUMERS == 0 || SM90_D64_CONSUMERS == 2 || SM90_D64_CONSUMERS == 3,
              "SM90_D64_CONSUMERS: 0, 2 or 3");

// d64 is bound by the exponentials: three consumers keep the tensor cores fed while two of
// them exponentiate. Larger head dims need the registers of two.
#ifndef SM90_D128_NARROW_STAGES
// K/V stages at d128 with 128-key tiles (causal, or SM90_D128_BLOCK_N=128): 2, or 3, which
// still fit (Q 32 KB + 3 x 64 KB of K and V, of 227 KB). ncu at d128 causal 4k (2026-12-04
// 18:31): v21's consumers held 4.8% of all samples waiting for K and V at the top of the step,
// FA3 3.7%, and v21 releases K later (after the softmax, FA3 before it). Measured in turn with
// FA3 (H100, 2026-12-05): 3 within 0.4% of 2 everywhere, so the K/V waits are not the ring's
// depth.
#define SM90_D128_NARROW_STAGES 2
#endif
static_assert(SM90_D128_NARROW_STAGES == 2 || SM90_D128_NARROW_STAGES == 3,
              "SM90_D128_NARROW_STAGES: 2 or 3");

#ifndef SM90_Q_STAGES
// Q buffers: 1, or 2 where they fit beside the K/V ring (d64, and d128 with 128-key tiles):
// then the next work tile's Q loads while this one finishes, instead of after its last S (with
// one buffer the load starts only once every consumer's last S of the tile is done, and the
// consumers reach the next tile a last softmax, a last P V and an epilogue later). Default
// since v24: measured in turn with FA3 (H100, 2026-12-05) d64 non-causal +1.4% over v21, d64
// causal +0.9%, d128 causal +0.2%, the rest within the 0.1% A/A spread.
#define SM90_Q_STAGES 2
#endif
static_assert(SM90_Q_STAGES == 1 || SM90_Q_STAGES == 2, "SM90_Q_STAGES: 1 or 2");

#ifndef SM90_CROSS_TILE
// 1: each consumer issues the next work tile's first S in the turn of this tile's last P V,
// runs that S's softmax while the P V is on the tensor cores, then this tile's epilogue; 0:
// the first S and the last P V take a turn each, with half a step's GEMMs in it. Only in the
// static deal and where Q has two buffers (d64, d128's 128-key tiles), and only at a tile
// boundary where every consumer runs a key tile of both tiles (otherwise the two turns as
// before), so every consumer takes as many turns. For short tiles: at d128 causal 1k a tile
// has 4.5 key tiles on average, and its first and last turns are two of its 5.5 (NOTES, "A
// lead for causal"). Built 2026-12-05 on the CPU (its SASS read, nothing run); not measured.
#define SM90_CROSS_TILE 0
#endif
static_assert(SM90_CROSS_TILE == 0 || SM90_CROSS_TILE == 1, "SM90_CROSS_TILE: 0 or 1");

template <int HEADDIM>
constexpr int default_consumers() {
    return HEADDIM == 64 && SM90_D64_CONSUMERS != 2 ? 3 : 2;
}

template <int HEADDIM, int BLOCK_N, int CONSUMERS>
struct Shape {
    static constexpr int kConsumers = CONSUMERS;
    static constexpr int kThreads = (kConsumers + 1) * kWarpgroupThreads;
    static constexpr int kBlockM = 64 * kConsumers;  // query rows per CTA
    // setmaxnreg: the producer keeps few, the consumers split the rest (64K per SM).
    static constexpr int kProducerRegs = kConsumers == 2 ? 24 : 32;
    static constexpr int kConsumerRegs = kConsumers == 2 ? 240 : 160;
    static constexpr int kBlockN = BLOCK_N;
    static constexpr int kStages = HEADDIM == 64                     ? 3
                                   : HEADDIM == 128 && BLOCK_N <= 128 ? SM90_D128_NARROW_STAGES
                                                                      : 2;
    static constexpr int kChunks = HEADDIM / kChunk;
    static constexpr int kQBytes = kBlockM * HEADDIM * 2;
    static constexpr int kKVBytes = kBlockN * HEADDIM * 2;   // one K (or V) stage
    // A second Q buffer where it fits (with 8 KB to spare for barriers and alignment).
    static constexpr int kQStages =
        SM90_Q_STAGES == 2 && 2 * kQBytes + 2 * kStages * kKVBytes + 8192 <= 227 * 1024 ? 2
                                                                                        : 1;
    static constexpr int kQOffset = 0;
    static constexpr int kKOffset = kQOffset + kQStages * kQBytes;
    static constexpr int kVOffset = kKOffset + kStages * kKVBytes;
    static constexpr int kBarrierOffset = kVOffset + kStages * kKVBytes;
    static constexpr int kBarriers = 2 * kQStages + 4 * kStages;
    // +1024: the dynamic shared memory base is only 16-byte aligned; the kernel rounds it up.
    // The dynamic scheduler's slots, one per Q buffer: the producer's tile for the consumers.
    static constexpr int kSlotOffset = kBarrierOffset + 8 * kBarriers;
    static constexpr int kSmemBytes = kSlotOffset + 8 * kQStages + 1024;
    static_assert(kSmemBytes <= 227 * 1024, "tile does not fit in shared memory");
};

struct Params {
    __nv_bfloat16* out;  // (batch, seqlen_q, nheads, headdim), dense
    float* lse;          // (batch, nheads, seqlen_q)
    int batch, seqlen_q, seqlen_k, nheads, group;  // group = nheads / nheads_kv
    int causal;
    int causal_group;  // causal: heads whose query blocks are dealt together (decode_tile)
    float scale_log2;  // softmax_scale * log2(e): scores live in base-2 units
};

// ---------------------------------------------------------------------------------------------
// PTX helpers: shared-memory addresses, mbarriers, TMA, wgmma descriptors and fences.

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void mbar_init(uint32_t bar, int count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count));
}

__device__ __forceinline__ void mbar_expect_tx(uint32_t bar, uint32_t bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes)
                 : "memory");
}

__device__ __forceinline__ void mbar_arrive(uint32_t bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}

// HINT: whether the wait sleeps on a suspend-time hint or spins (the producer's waits pass
// kProducerWaitHint).
template <bool HINT = kWaitHint>
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
    if constexpr (HINT) {
        // A time limit (ns) to suspend for: the warp sleeps until the phase completes instead of
        // spinning (a spinning warp takes issue slots from the consumer warps on its scheduler).
        asm volatile(
            "{\n"
            ".reg .pred done;\n"
            "WAIT_%=:\n"
            "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1, %2;\n"
            "@!done bra WAIT_%=;\n"
            "}\n" ::"r"(bar),
            "r"(parity), "r"(10000000)
            : "memory");
        return;
    }
    asm volatile(
        "{\n"
        ".reg .pred done;\n"
        "WAIT_%=:\n"
        "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
        "@!done bra WAIT_%=;\n"
        "}\n" ::"r"(bar),
        "r"(parity)
        : "memory");
}

__device__ __forceinline__ void tma_load(uint32_t dst, const CUtensorMap* map, uint32_t bar,
                                         int c0, int c1, int c2, int c3) {
    asm volatile(
        "cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
        " [%0], [%1, {%3, %4, %5, %6}], [%2];" ::"r"(dst),
        "l"(reinterpret_cast<uint64_t>(map)), "r"(bar), "r"(c0), "r"(c1), "r"(c2), "r"(c3)
        : "memory");
}

// A wgmma shared-memory descriptor for a 128-byte-swizzled tile (layout type 1 in bits 62-63).
// K-major operands: 8-row groups 1024 bytes apart (stride byte offset); the leading offset is
// unused. N-major (V): `leading` is the distance between 64-column chunks, 8-row groups again
// 1024 bytes apart.
// Built in two steps, so that a run of wgmmas over one tile pays for the masks and shifts
// once: desc_low() is the low word of the tile's descriptor, desc_at() adds a compile-time byte
// offset to its start-address field. The field (bits 0-13, 16-byte units) cannot carry into the
// leading offset: every shared address is below 228 KB, i.e. < 2^14 units. Measured at d128 8k
// (ncu, 2026-12-03): with the whole descriptor built per wgmma (v20), the uniform masks, shifts
// and moves were about a tenth of all instructions the kernel executed.
__device__ __forceinline__ uint32_t desc_low(uint32_t addr, uint32_t leading) {
    return ((addr & 0x3FFFF) >> 4) | (((leading & 0x3FFFF) >> 4) << 16);
}
__device__ __forceinline__ uint64_t desc_at(uint32_t low, uint32_t offset_bytes) {
    constexpr uint32_t kHigh = (1024 >> 4) | (1u << 30);  // stride 1024 B; 128-byte swizzle
    return (static_cast<uint64_t>(kHigh) << 32) | (low + (offset_bytes >> 4));
}

__device__ __forceinline__ void wgmma_fence() {
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
}
__device__ __forceinline__ void wgmma_commit() {
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}
__device__ __forceinline__ void wgmma_wait_all() {
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
}
// Keeps the compiler from moving reads or writes of accumulator registers across a wait.
template <int N>
__device__ __forceinline__ void fence_registers(float* r) {
#pragma unroll
    for (int i = 0; i < N; ++i) asm volatile("" : "+f"(r[i])::"memory");
}

// A consumer warp's release of the K buffer it has read (and of Q after the tile's last S).
__device__ __forceinline__ void release_k(int lane, uint32_t k_empty, uint32_t q_empty,
                                          bool last) {
    __syncwarp();
    if (lane == 0) {
        mbar_arrive(k_empty);
        if (last) mbar_arrive(q_empty);
    }
}

__device__ __forceinline__ float fast_exp2(float x) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi) {
    __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<uint32_t*>(&v);
}

__device__ __forceinline__ void named_barrier(int id, int threads) {
    asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

// ---- generated by scripts/gen_wgmma.py; do not edit by hand ----
__device__ __forceinline__ void wgmma_ss_n64(float* d, uint64_t desc_a, uint64_t desc_b,
                                                int scale_d) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, p, 1, 1, 0, 0;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
        : "l"(desc_a), "l"(desc_b), "r"(scale_d));
}

__device__ __forceinline__ void wgmma_ss_n80(float* d, uint64_t desc_a, uint64_t desc_b,
                                                int scale_d) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %42, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n80k16.f32.bf16.bf16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39}, %40, %41, p, 1, 1, 0, 0;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39])
        : "l"(desc_a), "l"(desc_b), "r"(scale_d));
}

__device__ __forceinline__ void wgmma_ss_n128(float* d, uint64_t desc_a, uint64_t desc_b,
                                                int scale_d) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p, 1, 1, 0, 0;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
        : "l"(desc_a), "l"(desc_b), "r"(scale_d));
}

__device__ __forceinline__ void wgmma_ss_n176(float* d, uint64_t desc_a, uint64_t desc_b,
                                                int scale_d) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %90, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n176k16.f32.bf16.bf16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87}, %88, %89, p, 1, 1, 0, 0;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87])
        : "l"(desc_a), "l"(desc_b), "r"(scale_d));
}

__device__ __forceinline__ void wgmma_rs_n64(float* d, const uint32_t* a, uint64_t desc_b,
                                                int scale_d) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, {%32, %33, %34, %35}, %36, p, 1, 1, 1;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(scale_d));
}

__device__ __forceinline__ void wgmma_rs_n128(float* d, const uint32_t* a, uint64_t desc_b,
                                                int scale_d) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, {%64, %65, %66, %67}, %68, p, 1, 1, 1;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(scale_d));
}

__device__ __forceinline__ void wgmma_rs_n256(float* d, const uint32_t* a, uint64_t desc_b,
                                                int scale_d) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %133, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, {%128, %129, %130, %131}, %132, p, 1, 1, 1;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(scale_d));
}

// ---- end of generated wrappers ----

template <int N>
__device__ __forceinline__ void wgmma_ss(float* d, uint64_t desc_a, uint64_t desc_b, int scale_d) {
    static_assert(N == 64 || N == 80 || N == 128 || N == 176, "no wrapper for this S width");
    if constexpr (N == 64) wgmma_ss_n64(d, desc_a, desc_b, scale_d);
    else if constexpr (N == 80) wgmma_ss_n80(d, desc_a, desc_b, scale_d);
    else if constexpr (N == 128) wgmma_ss_n128(d, desc_a, desc_b, scale_d);
    else wgmma_ss_n176(d, desc_a, desc_b, scale_d);
}

template <int N>
__device__ __forceinline__ void wgmma_rs(float* d, const uint32_t* a, uint64_t desc_b, int scale_d) {
    static_assert(N == 64 || N == 128 || N == 256, "no wrapper for this head dim");
    if constexpr (N == 64) wgmma_rs_n64(d, a, desc_b, scale_d);
    else if constexpr (N == 128) wgmma_rs_n128(d, a, desc_b, scale_d);
    else wgmma_rs_n256(d, a, desc_b, scale_d);
}

// ---------------------------------------------------------------------------------------------
// The consumer's stages, one function each.

// S = Q K^T for this warpgroup's 64 rows: HEADDIM/16 wgmmas, both operands K-major in shared
// memory; each 16-deep step moves 32 bytes along the swizzled row, a chunk per 64 columns.
template <int HEADDIM, int BM, int BN>
__device__ __forceinline__ void issue_s(float* sc, uint32_t q_wg, uint32_t k_tile) {
    const uint32_t q_low = desc_low(q_wg, 16);
    const uint32_t k_low = desc_low(k_tile, 16);
#pragma unroll
    for (int kk = 0; kk < HEADDIM / 16; ++kk) {
        const uint64_t desc_q = desc_at(q_low, (kk / 4) * BM * kRowBytes + (kk % 4) * 32);
        const uint64_t desc_k = desc_at(k_low, (kk / 4) * BN * kRowBytes + (kk % 4) * 32);
        wgmma_ss<BN>(sc, desc_q, desc_k, kk > 0);
    }
}

// O += P V: BN/16 wgmmas, P from registers, V N-major (transpose bit) in 64-column chunks.
template <int HEADDIM, int BN>
__device__ __forceinline__ void issue_pv(float* o, const uint32_t* pa, uint32_t v_tile) {
    const uint32_t v_low = desc_low(v_tile, BN * kRowBytes);
#pragma unroll
    for (int kk = 0; kk < BN / 16; ++kk) {
        const uint64_t desc_v = desc_at(v_low, kk * 16 * kRowBytes);
        wgmma_rs<HEADDIM>(o, &pa[4 * kk], desc_v, 1);
    }
}

// Scores of keys past seqlen_k and, causal, past the diagonal become -inf.
template <int BN>
__device__ __forceinline__ void mask_tile(float* sc, int n0, int row0, int c, int seqlen_k,
                                          int causal, int diag) {
#pragma unroll
    for (int i = 0; i < BN / 2; ++i) {
        const int col = n0 + (i / 4) * 8 + 2 * c + (i & 1);
        const int row = row0 + ((i & 2) ? 8 : 0);
        const int limit = causal ? min(seqlen_k, row + diag + 1) : seqlen_k;
        if (col >= limit) sc[i] = -INFINITY;
    }
}

// Exponentiates `sc` in place against each row's `shift` (base 2) and adds this thread's
// exponentials of row r to sum[r][0] and sum[r][1] in turn (two chains, not one).
template <int BN>
__device__ __forceinline__ void exponentiate(float* sc, float sl2, const float* shift,
                                             float (&sum)[2][2]) {
#pragma unroll
    for (int i = 0; i < BN / 8; ++i)
#pragma unroll
        for (int r = 0; r < 2; ++r) {
            const float e0 = fast_exp2(fmaf(sc[4 * i + 2 * r], sl2, -shift[r]));
            const float e1 = fast_exp2(fmaf(sc[4 * i + 2 * r + 1], sl2, -shift[r]));
            sc[4 * i + 2 * r] = e0;
            sc[4 * i + 2 * r + 1] = e1;
            sum[r][i % 2] += e0 + e1;
        }
}

// The same online softmax with shorter dependency chains (kSoftmaxTree): max and sum are
// associative here (max exactly, the sum up to rounding well inside the judge's tolerance).
template <int BN>
__device__ __forceinline__ void softmax_tile_tree(float* sc, float* row_max, float* row_sum,
                                                  float sl2, float* alpha) {
    static_assert(BN % 8 == 0, "a tile is whole 8-column blocks");
    constexpr int kBlocks = BN / 8;  // 8-column blocks: two values per row per block
    float mx[2][4];
#pragma unroll
    for (int r = 0; r < 2; ++r)
#pragma unroll
        for (int a = 0; a < 4; ++a) mx[r][a] = row_max[r];
#pragma unroll
    for (int i = 0; i < kBlocks; ++i)
#pragma unroll
        for (int r = 0; r < 2; ++r)
            mx[r][i % 4] = fmaxf(mx[r][i % 4], fmaxf(sc[4 * i + 2 * r], sc[4 * i + 2 * r + 1]));
    float shift[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
        float m = fmaxf(fmaxf(mx[r][0], mx[r][1]), fmaxf(mx[r][2], mx[r][3]));
        m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 1));
        m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 2));
        const bool moves = m * sl2 > row_max[r] * sl2 + kRescaleSlack;  // as softmax_tile
        const float base = moves ? m : row_max[r];
        shift[r] = base == -INFINITY ? 0.f : base * sl2;
        alpha[r] = moves ? fast_exp2(row_max[r] * sl2 - shift[r]) : 1.f;
        row_max[r] = base;
    }
    float sum[2][2] = {{0.f, 0.f}, {0.f, 0.f}};
    exponentiate<BN>(sc, sl2, shift, sum);
#pragma unroll
    for (int r = 0; r < 2; ++r) row_sum[r] = row_sum[r] * alpha[r] + (sum[r][0] + sum[r][1]);
}

// Online softmax in base 2 over rows g (r = 0) and g + 8 (r = 1): exponentiates `sc` in place,
// updates the running max and this thread's partial sums, returns the factor O must be scaled by.
template <int BN>
__device__ __forceinline__ void softmax_tile_chain(float* sc, float* row_max, float* row_sum,
                                                   float sl2, float* alpha) {
#pragma unroll
    for (int r = 0; r < 2; ++r) {
        float mx = row_max[r];
#pragma unroll
        for (int i = 0; i < BN / 8; ++i)
            mx = fmaxf(mx, fmaxf(sc[4 * i + 2 * r], sc[4 * i + 2 * r + 1]));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
        // The base moves only when the new maximum is more than kRescaleSlack above it (base-2
        // units; always from -inf): the exponentials then stay <= 2^kRescaleSlack, and O and
        // the sum keep their scale (alpha = 1), so most steps of a long row rescale nothing.
        const bool moves = mx * sl2 > row_max[r] * sl2 + kRescaleSlack;
        const float base = moves ? mx : row_max[r];
        const float shift = base == -INFINITY ? 0.f : base * sl2;  // no inf - inf
        alpha[r] = moves ? fast_exp2(row_max[r] * sl2 - shift) : 1.f;
        row_max[r] = base;
        float sum = 0.f;
#pragma unroll
        for (int i = 0; i < BN / 8; ++i) {
            const float e0 = fast_exp2(fmaf(sc[4 * i + 2 * r], sl2, -shift));
            const float e1 = fast_exp2(fmaf(sc[4 * i + 2 * r + 1], sl2, -shift));
            sc[4 * i + 2 * r] = e0;
            sc[4 * i + 2 * r + 1] = e1;
            sum += e0 + e1;
        }
        row_sum[r] = row_sum[r] * alpha[r] + sum;
    }
}

template <int BN>
__device__ __forceinline__ void softmax_tile(float* sc, float* row_max, float* row_sum,
                                             float sl2, float* alpha) {
    if constexpr (kSoftmaxTree) {
        softmax_tile_tree<BN>(sc, row_max, row_sum, sl2, alpha);
    } else {
        softmax_tile_chain<BN>(sc, row_max, row_sum, sl2, alpha);
    }
}

// One score of this thread's tile, S = Q K^T recomputed on the CUDA cores from the swizzled
// shared tiles (the layout at the top of the file): `row` of the warpgroup's 64, key `col`.
template <int HEADDIM, int BM, int BN>
__device__ __forceinline__ float score_from_shared(uint32_t q_wg, uint32_t k_tile, int row,
                                                   int col) {
    float acc = 0.f;
#pragma unroll 1
    for (int d = 0; d < HEADDIM; d += 8) {  // one 16-byte unit of each row at a time
        const uint32_t unit = (d % kChunk) / 8;
        const uint32_t q_at = q_wg + (d / kChunk) * BM * kRowBytes + row * kRowBytes +
                              ((unit ^ (row % 8)) * 16);
        const uint32_t k_at = k_tile + (d / kChunk) * BN * kRowBytes + col * kRowBytes +
                              ((unit ^ (col % 8)) * 16);
#pragma unroll
        for (int w = 0; w < 4; ++w) {
            uint32_t qv, kv;
            asm volatile("ld.shared.b32 %0, [%1];" : "=r"(qv) : "r"(q_at + 4 * w) : "memory");
            asm volatile("ld.shared.b32 %0, [%1];" : "=r"(kv) : "r"(k_at + 4 * w) : "memory");
            acc = fmaf(__uint_as_float(qv << 16), __uint_as_float(kv << 16), acc);
            acc = fmaf(__uint_as_float(qv & 0xffff0000u), __uint_as_float(kv & 0xffff0000u), acc);
        }
    }
    return acc;
}

// The online softmax of an unmasked tile without its maximum (kStaleMax): exponentials against
// the row's current base, whose sum bounds each of them. Where every sum of the warp is at most
// 2^kRescaleSlack, no exponential passed it, the base stays (alpha = 1) and the tile costs no
// reduction. Else, rarely (the base is the first tile's maximum or a later one's, so a sum
// passes the bound only where a row's maximum rose by about log2 of it over the tile's width):
// the maximum is found among the exponentials (monotone in S), the row rebased to it exactly
// (exponentials and sum scaled by its inverse, alpha the same), or, where an exponential
// overflowed and took its score with it, S is recomputed from shared memory (K and Q are
// released only after the softmax) and the tile goes through softmax_tile.
// The exact path, where a warp's vote failed: `sc` holds the exponentials against the row's
// base (`shift`), `sums` this thread's sums of them.
template <int HEADDIM, int BM, int BN>
__device__ __forceinline__ void stale_exact(float* sc, float* row_max, float* row_sum, float sl2,
                                            float* alpha, const float* shift, const float* sums,
                                            uint32_t q_wg, uint32_t k_tile, int warp_row, int c) {
    float mx[2] = {0.f, 0.f};
#pragma unroll
    for (int i = 0; i < BN / 8; ++i)
#pragma unroll
        for (int r = 0; r < 2; ++r)
            mx[r] = fmaxf(mx[r], fmaxf(sc[4 * i + 2 * r], sc[4 * i + 2 * r + 1]));
#pragma unroll
    for (int r = 0; r < 2; ++r) {
        mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
        mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
    }
    if (__any_sync(0xffffffffu, mx[0] == INFINITY || mx[1] == INFINITY)) {
        // A rolled loop into local memory, copied back unrolled (sc must stay in registers):
        // unrolled, the recomputation was some 3,000 instructions of cold code in the loop.
        float scores[BN / 2];
#pragma unroll 1
        for (int i = 0; i < BN / 2; ++i)
            scores[i] = score_from_shared<HEADDIM, BM, BN>(
                q_wg, k_tile, warp_row + ((i & 2) ? 8 : 0), (i / 4) * 8 + 2 * c + (i & 1));
#pragma unroll
        for (int i = 0; i < BN / 2; ++i) sc[i] = scores[i];
        softmax_tile<BN>(sc, row_max, row_sum, sl2, alpha);
        return;
    }
#pragma unroll
    for (int r = 0; r < 2; ++r) {
        const bool moves = mx[r] > 1.f;  // rebased exactly: the next tiles pass the bound again
        const float f = moves ? 1.f / mx[r] : 1.f;
        alpha[r] = f;
        row_sum[r] = (row_sum[r] + sums[r]) * f;
        if (moves) row_max[r] = (shift[r] + __log2f(mx[r])) / sl2;
#pragma unroll
        for (int i = 0; i < BN / 8; ++i) {
            sc[4 * i + 2 * r] *= f;
            sc[4 * i + 2 * r + 1] *= f;
        }
    }
}

// EXACT_HERE false (SM90_STALE_COLD=1): a failed vote returns false and leaves the exact path
// to the caller, with the exponentials in `sc` and `shift` and `sums` filled in, so that the
// exact path's code can sit outside the steady loop.
template <int HEADDIM, int BM, int BN, bool EXACT_HERE = true>
__device__ __forceinline__ bool softmax_tile_stale(float* sc, float* row_max, float* row_sum,
                                                   float sl2, float* alpha, uint32_t q_wg,
                                                   uint32_t k_tile, int warp_row, int c,
                                                   float* shift_out = nullptr,
                                                   float* sums_out = nullptr) {
    constexpr float kBound = static_cast<float>(1 << SM90_RESCALE_SLACK);
    float shift[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) shift[r] = row_max[r] == -INFINITY ? 0.f : row_max[r] * sl2;
    float sum[2][2] = {{0.f, 0.f}, {0.f, 0.f}};
    exponentiate<BN>(sc, sl2, shift, sum);
    const float s0 = sum[0][0] + sum[0][1];
    const float s1 = sum[1][0] + sum[1][1];
    // NaN fails the test too, and takes the exact path like an overflow.
    if (__all_sync(0xffffffffu, s0 <= kBound && s1 <= kBound)) {
        alpha[0] = alpha[1] = 1.f;
        row_sum[0] += s0;
        row_sum[1] += s1;
        return true;
    }
    const float sums[2] = {s0, s1};
    if constexpr (!EXACT_HERE) {
        for (int r = 0; r < 2; ++r) {
            shift_out[r] = shift[r];
            sums_out[r] = sums[r];
        }
        return false;
    }
    stale_exact<HEADDIM, BM, BN>(sc, row_max, row_sum, sl2, alpha, shift, sums, q_wg, k_tile,
                                 warp_row, c);
    return true;
}

template <int HEADDIM>
__device__ __forceinline__ void rescale(float* o, const float* alpha) {
    // Warp-uniform: skipped where no row of the warp moved its base (alpha is 1 for all).
    if (!__any_sync(0xffffffffu, alpha[0] != 1.f || alpha[1] != 1.f)) return;
#pragma unroll
    for (int i = 0; i < HEADDIM / 8; ++i) {
        o[4 * i + 0] *= alpha[0];
        o[4 * i + 1] *= alpha[0];
        o[4 * i + 2] *= alpha[1];
        o[4 * i + 3] *= alpha[1];
    }
}

// P in bf16 as wgmma's register A operand: the S accumulator of key columns 16k..16k+15 is
// exactly the A fragment of the k-th 16-deep step.
template <int BN>
__device__ __forceinline__ void to_operand(const float* sc, uint32_t* pa) {
#pragma unroll
    for (int kk = 0; kk < BN / 16; ++kk) {
        pa[4 * kk + 0] = pack_bf16(sc[8 * kk + 0], sc[8 * kk + 1]);
        pa[4 * kk + 1] = pack_bf16(sc[8 * kk + 2], sc[8 * kk + 3]);
        pa[4 * kk + 2] = pack_bf16(sc[8 * kk + 4], sc[8 * kk + 5]);
        pa[4 * kk + 3] = pack_bf16(sc[8 * kk + 6], sc[8 * kk + 7]);
    }
}

// Turns between the consumers: a warpgroup issues its GEMMs only in its turn and hands the
// turn to the next one (round robin) once they are issued, so one's softmax runs under the
// others' GEMMs. Named barrier 1 + wg is consumer wg's epilogue, kTurnBarrier + wg its turn.
constexpr int kTurnBarrier = 1 + kMaxConsumers;

// Whether a steady step masks S: never, always, or where its key tile needs it (a run-time test).
constexpr int kMaskNever = 0, kMaskAlways = 1, kMaskAtRunTime = 2;
template <int V>
struct MaskKind {
    __host__ __device__ constexpr operator int() const { return V; }
};
__device__ __forceinline__ void wait_turn(int wg) {
    if (kPingPong) named_barrier(kTurnBarrier + wg, 2 * kWarpgroupThreads);
}
template <int CONSUMERS>
__device__ __forceinline__ void pass_turn(int wg) {
    const int next = wg + 1 == CONSUMERS ? 0 : wg + 1;
    if (kPingPong)
        asm volatile("bar.arrive %0, %1;" ::"r"(kTurnBarrier + next), "r"(2 * kWarpgroupThreads)
                     : "memory");
}

// One row of O, stored 16 bytes a lane. The quad's four lanes each hold 4 bytes (two columns)
// of every 8-column chunk of the row; two exchanges (lanes c^1, then c^2) give each lane all
// 16 bytes of one chunk in four, so a warp's store writes whole 32-byte sectors (64 bytes a row)
// instead of 16-byte halves, with a quarter of the store instructions (v13's 4-byte stores
// held 5% of d128 512's stall samples on the store queue).
template <int HEADDIM>
__device__ __forceinline__ void store_row(__nv_bfloat16* out_row, const uint32_t* packed, int c,
                                          bool keep) {
    const bool odd = (c & 1) != 0, high = (c & 2) != 0;
#pragma unroll
    for (int q = 0; q < HEADDIM / 32; ++q) {
        const uint32_t a0 = packed[4 * q], a1 = packed[4 * q + 1];
        const uint32_t a2 = packed[4 * q + 2], a3 = packed[4 * q + 3];
        // Round 1: even lanes keep chunks 0 and 2 of the four, odd lanes 1 and 3, each as the
        // 8 bytes of its lane pair.
        const uint32_t r0 = __shfl_xor_sync(0xffffffffu, odd ? a0 : a1, 1);
        const uint32_t r1 = __shfl_xor_sync(0xffffffffu, odd ? a2 : a3, 1);
        const uint32_t pa0 = odd ? r0 : a0, pa1 = odd ? a1 : r0;  // chunk 0 (even) or 1 (odd)
        const uint32_t pb0 = odd ? r1 : a2, pb1 = odd ? a3 : r1;  // chunk 2 (even) or 3 (odd)
        // Round 2: lanes 0-1 keep their first piece, lanes 2-3 their second, and take the
        // other lane pair's half of it: lane c then holds chunk c whole.
        const uint32_t s0 = __shfl_xor_sync(0xffffffffu, high ? pa0 : pb0, 2);
        const uint32_t s1 = __shfl_xor_sync(0xffffffffu, high ? pa1 : pb1, 2);
        const uint4 chunk = high ? make_uint4(s0, s1, pb0, pb1) : make_uint4(pa0, pa1, s0, s1);
        if (keep) *reinterpret_cast<uint4*>(out_row + 8 * (4 * q + c)) = chunk;
    }
}

// ---------------------------------------------------------------------------------------------
// The kernel.

// Work tiles: (query block, head, batch). Non-causal tiles are all alike: query blocks are the
// fastest index, so CTAs at work together share a head's K and V in L2. Causal tiles come in
// groups of heads, query blocks longest first within a group, so CTAs at work together still
// share a few heads' K and V: one head per group with a CTA per tile (the hardware then gives
// the short tiles to the SMs that free first), and with a persistent causal grid of exactly
// heads-per-group x query-blocks CTAs, one group per round: dealt in snake order, a CTA's
// longest tile in one round pairs with its shortest in the next. (Longest first over the whole
// grid, v12-v13, put 132 different heads' K and V in flight at once: 10-20% slower at 1k-4k.)
struct Tile {
    int m_block, head, batch;
};
__device__ __forceinline__ Tile decode_tile(int index, int m_blocks, int nheads, int batch,
                                            bool causal, int per_group) {
    if (causal) {
        const int bh_total = nheads * batch;
        const int group = index / (per_group * m_blocks);
        const int first = group * per_group;
        const int here = min(per_group, bh_total - first);
        const int r = index - first * m_blocks;
        const int bh = first + r % here;
        return {m_blocks - 1 - r / here, bh % nheads, bh / nheads};
    }
    const int bh = index / m_blocks;
    return {index % m_blocks, bh % nheads, bh / nheads};
}

// The dynamic scheduler's counters (SM90_DYNAMIC_CAUSAL): [0] tiles handed out after the first
// round, [1] CTAs whose producer has taken its last. The last such CTA zeroes both, so every
// launch starts from zero: launches on one stream run one after another. Two launches of this
// library at once (two streams) would share the counters: the knob assumes one at a time, as
// the judge calls a candidate.
__device__ unsigned int g_dynamic_tiles[2];

__device__ __forceinline__ int next_dynamic_tile() {
    return static_cast<int>(gridDim.x + atomicAdd(&g_dynamic_tiles[0], 1u));
}

__device__ __forceinline__ void dynamic_tiles_done() {
    if (atomicAdd(&g_dynamic_tiles[1], 1u) == gridDim.x - 1) {
        atomicExch(&g_dynamic_tiles[0], 0u);
        atomicExch(&g_dynamic_tiles[1], 0u);
    }
}

__device__ __forceinline__ void st_shared(uint32_t addr, int value) {
    asm volatile("st.shared.b32 [%0], %1;" ::"r"(addr), "r"(value) : "memory");
}
__device__ __forceinline__ int ld_shared(uint32_t addr) {
    int value;
    asm volatile("ld.shared.b32 %0, [%1];" : "=r"(value) : "r"(addr) : "memory");
    return value;
}

// The tile a CTA takes in its round r: rounds of gridDim.x tiles, dealt left to right in even
// rounds and right to left in odd ones, so that with causal tiles (longest first) every CTA's
// sum of work comes out about even.
__device__ __forceinline__ int tile_of_round(int round) {
    const int g = static_cast<int>(gridDim.x);
    const int b = static_cast<int>(blockIdx.x);
    return round * g + ((round & 1) ? g - 1 - b : b);
}

// Key tiles a query block sees: all of them, or causal up to its last row's diagonal.
template <int BM, int BN>
__device__ __forceinline__ int key_blocks(const Params& p, int m0) {
    int n_end = p.seqlen_k;
    if (p.causal) n_end = min(n_end, min(m0 + BM, p.seqlen_q) + p.seqlen_k - p.seqlen_q);
    return n_end > 0 ? (n_end + BN - 1) / BN : 0;
}

template <int HEADDIM, int BLOCK_N, int CONSUMERS, bool DYNAMIC, bool STALE>
__global__ void __launch_bounds__(Shape<HEADDIM, BLOCK_N, CONSUMERS>::kThreads, 1)
flash_fwd_sm90(const __grid_constant__ CUtensorMap tm_q, const __grid_constant__ CUtensorMap tm_k,
               const __grid_constant__ CUtensorMap tm_v, const Params p) {
    using S = Shape<HEADDIM, BLOCK_N, CONSUMERS>;
    constexpr int BN = S::kBlockN;
    constexpr int STAGES = S::kStages;
    constexpr int kBlockM = S::kBlockM;
    constexpr int kConsumers = S::kConsumers;
    constexpr bool kSoftmaxUnderPv =
        SM90_SOFTMAX_UNDER_PV == 1 || (SM90_SOFTMAX_UNDER_PV == 2 && HEADDIM != 64);
    extern __shared__ uint8_t smem_raw[];
    const uint32_t base = (smem_addr(smem_raw) + 1023) & ~1023u;  // swizzle atoms: 1024 B
    const uint32_t q_smem = base + S::kQOffset;
    const uint32_t k_smem = base + S::kKOffset;
    const uint32_t v_smem = base + S::kVOffset;
    // Barriers, 8 bytes each: per Q buffer q_full and q_empty, then per stage k_full, v_full,
    // k_empty, v_empty. Q buffer b: its data at q_smem + b * kQBytes, its barriers at
    // q_full + 16 * b and q_empty + 16 * b, its slot at tile_slot + 8 * b.
    constexpr int QSTAGES = S::kQStages;
    // The next tile's first S in this tile's last turn (SM90_CROSS_TILE): with the static
    // deal, where the next tile is known ahead, and two Q buffers, where its Q is loaded ahead.
    constexpr bool kCross = SM90_CROSS_TILE != 0 && !DYNAMIC && QSTAGES >= 2;
    const uint32_t q_full = base + S::kBarrierOffset;
    const uint32_t q_empty = q_full + 8;
    const uint32_t k_full = q_full + 16 * QSTAGES;
    const uint32_t v_full = k_full + 8 * STAGES;
    const uint32_t k_empty = v_full + 8 * STAGES;
    const uint32_t v_empty = k_empty + 8 * STAGES;
    const uint32_t tile_slot = base + S::kSlotOffset;  // the dynamic scheduler's next tile
    // DYNAMIC (causal launches with SM90_DYNAMIC_CAUSAL): tiles from the counter. A template
    // parameter, not p.causal at run time: the test of it in both loops cost registers enough
    // for ptxas to spill in the producer and in d128's consumers.
    constexpr bool dynamic = DYNAMIC;
    // Its producer needs 32 registers (at 24 ptxas spilled 44-64 bytes), which leaves its
    // consumers fewer (kConsumerRegs).
    constexpr int kProducerRegs = DYNAMIC ? 32 : S::kProducerRegs;
    // setmaxnreg.inc takes its registers only from what the CTA's own warps gave back with
    // setmaxnreg.dec, and blocks until it has them: the consumers may rise above the launch's
    // per-thread count (65536 / threads, in steps of 8) by no more than the producer fell below
    // it, shared among them. With the dynamic producer's 32 and two consumers at 240 that was
    // 1024 registers short, and the first launch hung (H100, 2026-12-05): 232 fits.
    constexpr int kEntryRegs = (65536 / S::kThreads) / 8 * 8;
    constexpr int kRegsThatFit = kEntryRegs + (kEntryRegs - kProducerRegs) / kConsumers / 8 * 8;
    constexpr int kConsumerRegs =
        kRegsThatFit < S::kConsumerRegs ? kRegsThatFit : S::kConsumerRegs;
    static_assert((kConsumerRegs - kEntryRegs) * kConsumers <= kEntryRegs - kProducerRegs,
                  "the consumers would wait for registers no warp gives back");

    const int diag = p.seqlen_k - p.seqlen_q;  // query i sees key j iff j <= i + diag (causal)

    if (threadIdx.x == 0) {
#pragma unroll
        for (int b = 0; b < QSTAGES; ++b) {
            mbar_init(q_full + 16 * b, 1);
            mbar_init(q_empty + 16 * b, kConsumers * 4);  // one arrival per consumer warp
        }
#pragma unroll
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(k_full + 8 * s, 1);
            mbar_init(v_full + 8 * s, 1);
            mbar_init(k_empty + 8 * s, kConsumers * 4);
            mbar_init(v_empty + 8 * s, kConsumers * 4);
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();

    const int warpgroup = threadIdx.x / kWarpgroupThreads;
    if (warpgroup == 0) {
        // ---------------- producer ----------------
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(kProducerRegs));
        // Each role computes these after its setmaxnreg: held across it (v31), ptxas spilled
        // both in the stale kernels and the producer reloaded them from local memory every work
        // tile (d128's stale kernel 0.3-3.8% slower, H100, 2026-12-05; NOTES, produce-consume).
        const int m_blocks = (p.seqlen_q + kBlockM - 1) / kBlockM;
        const int tiles = m_blocks * p.nheads * p.batch;
        if (threadIdx.x == 0) {
            int kv = 0;       // K/V tiles loaded so far, over every work tile: the ring position
            int q_loads = 0;  // Q tiles loaded so far
            // One work tile's loads. Two loops call it, static and dynamic, so that neither
            // holds the other's state (one loop for both spilled a counter at d256).
            auto produce = [&](const int index) {
                const Tile tile =
                    decode_tile(index, m_blocks, p.nheads, p.batch, p.causal, p.causal_group);
                const int m0 = tile.m_block * kBlockM;
                const int n_blocks = key_blocks<kBlockM, BN>(p, m0);
                if (n_blocks == 0) return;  // its rows see no key: no Q, no K, no V
                const int kv_head = tile.head / p.group;
                // A Q buffer is free once every consumer's last S of the tile it held is done
                // (and with it its slot: each consumer reads it before its first S).
                const int qb = q_loads % QSTAGES;
                if (q_loads >= QSTAGES)
                    mbar_wait<kProducerWaitHint>(q_empty + 16 * qb, (q_loads / QSTAGES - 1) & 1);
                ++q_loads;
                if (dynamic) st_shared(tile_slot + 8 * qb, index);  // published by q_full
                mbar_expect_tx(q_full + 16 * qb, S::kQBytes);
#pragma unroll
                for (int ch = 0; ch < S::kChunks; ++ch)
                    tma_load(q_smem + qb * S::kQBytes + ch * kBlockM * kRowBytes, &tm_q,
                             q_full + 16 * qb, ch * kChunk, tile.head, m0, tile.batch);
                for (int j = 0; j < n_blocks; ++j, ++kv) {
                    const int s = kv % STAGES;
                    const uint32_t parity = ((kv / STAGES) & 1) ^ 1;  // a fresh barrier passes 1
                    mbar_wait<kProducerWaitHint>(k_empty + 8 * s, parity);
                    mbar_expect_tx(k_full + 8 * s, S::kKVBytes);
#pragma unroll
                    for (int ch = 0; ch < S::kChunks; ++ch)
                        tma_load(k_smem + s * S::kKVBytes + ch * BN * kRowBytes, &tm_k,
                                 k_full + 8 * s, ch * kChunk, kv_head, j * BN, tile.batch);
                    mbar_wait<kProducerWaitHint>(v_empty + 8 * s, parity);
                    mbar_expect_tx(v_full + 8 * s, S::kKVBytes);
#pragma unroll
                    for (int ch = 0; ch < S::kChunks; ++ch)
                        tma_load(v_smem + s * S::kKVBytes + ch * BN * kRowBytes, &tm_v,
                                 v_full + 8 * s, ch * kChunk, kv_head, j * BN, tile.batch);
                }
            };
            if (!dynamic) {
                for (int round = 0; tile_of_round(round) < tiles; ++round)
                    produce(tile_of_round(round));
            } else {
                // The CTA's own first tile, then each next one from the counter.
                for (int index = blockIdx.x; index < tiles; index = next_dynamic_tile())
                    produce(index);
                // The end, told through the same slot and barrier: -1, with no bytes to wait for.
                const int qb = q_loads % QSTAGES;
                if (q_loads >= QSTAGES)
                    mbar_wait<kProducerWaitHint>(q_empty + 16 * qb, (q_loads / QSTAGES - 1) & 1);
                st_shared(tile_slot + 8 * qb, -1);
                mbar_arrive(q_full + 16 * qb);
                dynamic_tiles_done();
            }
        }
        return;
    }

    // ---------------- consumers ----------------
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(kConsumerRegs));
    const int m_blocks = (p.seqlen_q + kBlockM - 1) / kBlockM;
    const int tiles = m_blocks * p.nheads * p.batch;
    const int wg = warpgroup - 1;
    const int t = threadIdx.x % kWarpgroupThreads;
    const int warp = t / 32;
    const int lane = t % 32;
    const int g = lane / 4;  // accumulator row within the warp's 16 (and g + 8)
    const int c = lane % 4;  // accumulator column pair within each 8-column block
    const float sl2 = p.scale_log2;
    const uint32_t q_wg0 = q_smem + wg * 64 * kRowBytes;  // this warpgroup's rows of buffer 0
    const bool last_consumer = wg == kConsumers - 1;

    float o[HEADDIM / 2];
    float row_max[2], row_sum[2];  // row_sum: this thread's partial sums, the quad's at the end
    float alpha[2];
    float sc[BN / 2];
    uint32_t pa[BN / 4];

    int kv = 0;  // the ring position, as the producer counts it
    int q_loads = 0;
    // Turns: consumer 0 goes first (the last consumer hands it the first turn); every turn
    // taken is handed on, and consumer 0 takes the last hand-over after the last tile, so the
    // barriers end balanced (also in a CTA whose tiles see no key and take no turn).
    if (last_consumer) pass_turn<kConsumers>(wg);
    if constexpr (DYNAMIC) {
        // Tiles whose rows see no key (causal, seqlen_q > seqlen_k): the dynamic producer never
        // publishes them (it loads nothing for them), so their out = 0 and lse = +inf are
        // written here, dealt to the CTAs statically, before the first dynamic tile. Without
        // this those rows were never written (fa_smoke, H100, 2026-12-05: NaN where out was
        // prefilled). Here rather than as a slot with no bytes: that cost the producer, at 24
        // or 32 registers, 20-40 more bytes of spills.
        if (p.causal && p.seqlen_q > p.seqlen_k) {
            const uint32_t zeros[HEADDIM / 8] = {};
            for (int index = blockIdx.x; index < tiles; index += gridDim.x) {
                const Tile tile =
                    decode_tile(index, m_blocks, p.nheads, p.batch, p.causal, p.causal_group);
                const int m0 = tile.m_block * kBlockM;
                if (key_blocks<kBlockM, BN>(p, m0) > 0) continue;
#pragma unroll
                for (int r = 0; r < 2; ++r) {
                    const int row = m0 + wg * 64 + warp * 16 + g + 8 * r;
                    __nv_bfloat16* out_row =
                        p.out + ((static_cast<size_t>(tile.batch) * p.seqlen_q + row) * p.nheads +
                                 tile.head) * HEADDIM;
                    store_row<HEADDIM>(out_row, zeros, c, row < p.seqlen_q);
                    if (row < p.seqlen_q && c == 0)
                        p.lse[(static_cast<size_t>(tile.batch) * p.nheads + tile.head) *
                                  p.seqlen_q + row] = INFINITY;
                }
            }
        }
    }
    // The tile this loop reaches next had its first S issued, and its softmax run, in the last
    // turn of the tile before (kCross).
    bool s0_ready = false;
    // No branch inside the tile loop may depend on the thread (only on the tile): ptxas keeps
    // the steady loop's addresses on the uniform datapath only in code it can prove converged,
    // and a thread-dependent branch in the loop cost v9 every uniform instruction of the
    // steady loop (32 R2UR moves per step instead of 8).
    for (int round = 0;; ++round) {
        // This tile's Q buffer (every consumer counts the tiles it loads Q for as the producer
        // does: each tile that sees a key, skipped or not).
        const int qb = q_loads % QSTAGES;
        const uint32_t q_full_t = q_full + 16 * qb;
        const uint32_t q_empty_t = q_empty + 16 * qb;
        const uint32_t q_wg = q_wg0 + qb * S::kQBytes;
        int index;
        if (dynamic) {
            // The producer's slot, once Q of that tile (or the end) has arrived; taken from lane
            // 0 so that ptxas can prove it warp-uniform (the loops' bounds come from it), and
            // with the warp reconverged after the wait's spin: without the __syncwarp the
            // steady loop lost its uniform datapath (58 uniform instructions to 2 at d128
            // causal, R2UR 16 to 48).
            mbar_wait(q_full_t, (q_loads / QSTAGES) & 1);
            index = __shfl_sync(0xffffffffu, ld_shared(tile_slot + 8 * qb), 0);
            __syncwarp();
            if (index < 0) break;
        } else {
            index = tile_of_round(round);
            if (index >= tiles) break;
        }
        const Tile tile =
            decode_tile(index, m_blocks, p.nheads, p.batch, p.causal, p.causal_group);
        const int m0 = tile.m_block * kBlockM;
        const int n_blocks = key_blocks<kBlockM, BN>(p, m0);
        const int row0 = m0 + wg * 64 + warp * 16 + g;
        // Key tiles past these need the mask: ragged past seqlen_k, or crossing the causal
        // diagonal of this warpgroup's first row.
        const int first_ragged = p.seqlen_k / BN;
        const int first_crossing = p.causal ? max(0, (m0 + wg * 64 + diag + 1) / BN) : n_blocks;
        const int first_masked = min(first_ragged, first_crossing);
        // The key tiles this warpgroup runs: all the CTA's, or (kSkipUnseen) those its last
        // row can see; its rows see nothing in the rest (kSkipUnseen's comment).
        int n_wg = n_blocks;
        if constexpr (kSkipUnseen) {
            const int rows_end = min(m0 + wg * 64 + 64, p.seqlen_q);  // past its last row
            if (rows_end <= m0 + wg * 64) n_wg = 0;
            else if (p.causal) n_wg = min(n_blocks, max(0, (rows_end + diag + BN - 1) / BN));
            n_wg = __shfl_sync(0xffffffffu, n_wg, 0);  // lane 0's: provably warp-uniform
        }
        const bool s0_here = kCross && s0_ready;
        s0_ready = false;
        if (s0_here) {
            ++q_loads;  // this tile's Q, read by its first S in the tile before's last turn
        } else {
#pragma unroll
            for (int i = 0; i < HEADDIM / 2; ++i) o[i] = 0.f;
            row_max[0] = row_max[1] = -INFINITY;
            row_sum[0] = row_sum[1] = 0.f;
        }

        // Tile 0: S, softmax, P. Then each step j issues S_j and P_{j-1} V_{j-1} together and
        // runs the softmax of S_j while P V is still on the tensor cores; a last step finishes
        // P V. The three phases are separate straight-line code: a wgmma under a branch makes
        // ptxas serialise every wgmma of the kernel (C7520). A query tile that sees no key
        // (causal, seqlen_q > seqlen_k) runs none of them, nor takes any turn.
        if (!s0_here && n_wg > 0) {
            // Dynamic: waited for above, before the slot was read.
            if (!dynamic) mbar_wait(q_full_t, (q_loads / QSTAGES) & 1);
            ++q_loads;
            const int s0 = kv % STAGES;
            mbar_wait(k_full + 8 * s0, (kv / STAGES) & 1);
            wait_turn(wg);
            wgmma_fence();
            issue_s<HEADDIM, kBlockM, BN>(sc, q_wg, k_smem + s0 * S::kKVBytes);
            wgmma_commit();
            pass_turn<kConsumers>(wg);
            wgmma_wait_all();
            fence_registers<BN / 2>(sc);
            __syncwarp();
            if (lane == 0) {
                mbar_arrive(k_empty + 8 * s0);
                if (n_wg == 1) mbar_arrive(q_empty_t);  // this tile's last S: Q is free
            }
            if (0 >= first_masked) mask_tile<BN>(sc, 0, row0, c, p.seqlen_k, p.causal, diag);
            softmax_tile<BN>(sc, row_max, row_sum, sl2, alpha);
            to_operand<BN>(sc, pa);
        }
        // One step: kMask says whether S_j is masked (kMaskAtRunTime: look at j). Its front
        // (S_j and P_{j-1} V_{j-1} issued, S_j waited for) and its tail (K_j released, P V
        // waited for, V released, P converted) are lambdas of their own for the stale step.
        auto step_front = [&](const int j) {
            const int s = (kv + j) % STAGES;
            const int s_prev = (kv + j - 1) % STAGES;
            mbar_wait(k_full + 8 * s, ((kv + j) / STAGES) & 1);
            mbar_wait(v_full + 8 * s_prev, ((kv + j - 1) / STAGES) & 1);
            wait_turn(wg);
            wgmma_fence();
            issue_s<HEADDIM, kBlockM, BN>(sc, q_wg, k_smem + s * S::kKVBytes);
            wgmma_commit();
            rescale<HEADDIM>(o, alpha);  // on the CUDA cores while S_j is on the tensor cores
            wgmma_fence();               // O was written: order it before P V reads it
            issue_pv<HEADDIM, BN>(o, pa, v_smem + s_prev * S::kKVBytes);
            wgmma_commit();
            pass_turn<kConsumers>(wg);
            asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");  // S_j is done
            fence_registers<BN / 2>(sc);
            if constexpr (!kSoftmaxUnderPv)
                release_k(lane, k_empty + 8 * s, q_empty_t, j == n_wg - 1);
        };
        auto step_tail = [&](const int j) {
            const int s = (kv + j) % STAGES;
            const int s_prev = (kv + j - 1) % STAGES;
            // With kSoftmaxUnderPv, K_j's buffer is released only now, after the softmax, on
            // purpose: the branch ends the softmax's basic block. ptxas moves a wgmma wait up to
            // the start of its block, and with the release before the mask (v19) the wait for
            // P V below sat ahead of every exponential: the softmax never ran under P V.
            if constexpr (kSoftmaxUnderPv)
                release_k(lane, k_empty + 8 * s, q_empty_t, j == n_wg - 1);
            wgmma_wait_all();  // P_{j-1} V_{j-1} is done: O and P may be touched again
            fence_registers<HEADDIM / 2>(o);
            __syncwarp();
            if (lane == 0) mbar_arrive(v_empty + 8 * s_prev);
            to_operand<BN>(sc, pa);
        };
        auto step = [&](const int j, auto mask_kind) {
            constexpr int kMask = decltype(mask_kind){};
            step_front(j);
            if (kMask == kMaskAlways || (kMask == kMaskAtRunTime && j >= first_masked))
                mask_tile<BN>(sc, j * BN, row0, c, p.seqlen_k, p.causal, diag);
            if constexpr (STALE && kMask == kMaskNever) {
                softmax_tile_stale<HEADDIM, kBlockM, BN>(sc, row_max, row_sum, sl2, alpha, q_wg,
                                                         k_smem + ((kv + j) % STAGES) *
                                                                      S::kKVBytes,
                                                         warp * 16 + g, c);
            } else {
                softmax_tile<BN>(sc, row_max, row_sum, sl2, alpha);
            }
            step_tail(j);
        };
        // The stale step with its exact path outside the loop (stale_cold): false where the
        // warp's vote failed, the step then stopped after its exponentials; finish_stale_step
        // runs the exact path and the tail.
        float stale_shift[2], stale_sums[2];
        auto stale_step = [&](const int j) -> bool {
            step_front(j);
            if (!softmax_tile_stale<HEADDIM, kBlockM, BN, false>(
                    sc, row_max, row_sum, sl2, alpha, q_wg,
                    k_smem + ((kv + j) % STAGES) * S::kKVBytes, warp * 16 + g, c, stale_shift,
                    stale_sums))
                return false;
            step_tail(j);
            return true;
        };
        auto finish_stale_step = [&](const int j) {
            stale_exact<HEADDIM, kBlockM, BN>(sc, row_max, row_sum, sl2, alpha, stale_shift,
                                              stale_sums, q_wg,
                                              k_smem + ((kv + j) % STAGES) * S::kKVBytes,
                                              warp * 16 + g, c);
            step_tail(j);
        };
        if constexpr (split_masked_loop<HEADDIM>()) {
            // From lane 0, as n_wg: a bound computed from the warpgroup index looks
            // thread-dependent to ptxas, and both loops would lose the uniform datapath.
            const int unmasked_end = __shfl_sync(0xffffffffu, max(1, min(first_masked, n_wg)), 0);
            if constexpr (STALE && stale_cold<HEADDIM>()) {
                int j = 1;
                while (j < unmasked_end) {
                    for (; j < unmasked_end; ++j)
                        if (!stale_step(j)) break;
                    if (j < unmasked_end) finish_stale_step(j++);
                }
            } else {
                for (int j = 1; j < unmasked_end; ++j) step(j, MaskKind<kMaskNever>{});
            }
            for (int j = unmasked_end; j < n_wg; ++j) step(j, MaskKind<kMaskAlways>{});
        } else {
            for (int j = 1; j < n_wg; ++j) step(j, MaskKind<kMaskAtRunTime>{});
        }
        // The key tiles this consumer skips (kSkipUnseen), each with its turn and its releases
        // (why: where the tile ends, below), Q's too after the last where it runs none.
        auto skip_unseen_tiles = [&]() {
            for (int j = n_wg; j < n_blocks; ++j) {
                const int s = (kv + j) % STAGES;
                const uint32_t parity = ((kv + j) / STAGES) & 1;
                mbar_wait(k_full + 8 * s, parity);
                mbar_wait(v_full + 8 * s, parity);
                wait_turn(wg);
                pass_turn<kConsumers>(wg);
                __syncwarp();
                if (lane == 0) {
                    mbar_arrive(k_empty + 8 * s);
                    mbar_arrive(v_empty + 8 * s);
                    if (n_wg == 0 && j == n_blocks - 1) mbar_arrive(q_empty_t);
                }
            }
        };
        // Epilogue: normalise and store O straight from registers (bf16 pairs; rows past
        // seqlen_q dropped), so that Q's buffer is free for the next tile's load already. With
        // the row maxima and the quad's partial sums of this tile (kCross keeps them aside while
        // the next tile's first softmax runs).
        auto store_tile = [&](float (&tile_max)[2], float (&tile_sum)[2]) {
#pragma unroll
            for (int r = 0; r < 2; ++r) {
                tile_sum[r] += __shfl_xor_sync(0xffffffffu, tile_sum[r], 1);
                tile_sum[r] += __shfl_xor_sync(0xffffffffu, tile_sum[r], 2);
            }
#pragma unroll
            for (int r = 0; r < 2; ++r) {
                const int row = row0 + 8 * r;
                const float inv = tile_sum[r] > 0.f ? 1.f / tile_sum[r] : 0.f;
                __nv_bfloat16* out_row =
                    p.out + ((static_cast<size_t>(tile.batch) * p.seqlen_q + row) * p.nheads +
                             tile.head) * HEADDIM;
                uint32_t packed[HEADDIM / 8];
#pragma unroll
                for (int i = 0; i < HEADDIM / 8; ++i)
                    packed[i] = pack_bf16(o[4 * i + 2 * r] * inv, o[4 * i + 2 * r + 1] * inv);
                // Every lane of the quad shuffles (the row is the quad's, so the bound is too).
                store_row<HEADDIM>(out_row, packed, c, row < p.seqlen_q);
                if (row >= p.seqlen_q) continue;
                if (c == 0) {
                    float* lse_row = p.lse + (static_cast<size_t>(tile.batch) * p.nheads +
                                              tile.head) * p.seqlen_q;
                    lse_row[row] = tile_sum[r] > 0.f
                                       ? (tile_max[r] * sl2 + log2f(tile_sum[r])) * kLn2
                                       : INFINITY;
                }
            }
        };
        // The key tiles consumer w runs of a tile at m0_t with n_blocks_t key tiles: all, or
        // (kSkipUnseen) those its last row sees, as n_wg is counted above.
        auto runs_of = [&](const int w, const int m0_t, const int n_blocks_t) {
            if constexpr (!kSkipUnseen) return n_blocks_t;
            const int rows_end = min(m0_t + w * 64 + 64, p.seqlen_q);
            if (rows_end <= m0_t + w * 64) return 0;
            if (!p.causal) return n_blocks_t;
            return min(n_blocks_t, max(0, (rows_end + diag + BN - 1) / BN));
        };
        // kCross: the next tile, where every consumer runs a key tile of this one and of it (a
        // choice that depends on the tiles alone, so every consumer makes it alike), and skips
        // fewer of this one's key tiles than the ring has stages: a consumer takes its skipped
        // tiles' turns before its last P V (below), so its last V is released only after them,
        // and the producer reaches the next tile's first K only past STAGES positions after
        // that V (a consumer skipping more would wait on its own release).
        bool cross = false;
        Tile next{};
        int next_m0 = 0, next_blocks = 0;
        if constexpr (kCross) {
            const int next_index = tile_of_round(round + 1);
            int fewest = n_blocks, most_skipped = 0;
            for (int w = 0; w < kConsumers; ++w) {
                const int runs = runs_of(w, m0, n_blocks);
                fewest = min(fewest, runs);
                most_skipped = max(most_skipped, n_blocks - runs);
            }
            if (next_index < tiles && fewest > 0 && most_skipped < STAGES) {
                next = decode_tile(next_index, m_blocks, p.nheads, p.batch, p.causal,
                                   p.causal_group);
                next_m0 = next.m_block * kBlockM;
                next_blocks = key_blocks<kBlockM, BN>(p, next_m0);
                fewest = next_blocks;
                for (int w = 0; w < kConsumers; ++w)
                    fewest = min(fewest, runs_of(w, next_m0, next_blocks));
                cross = fewest > 0;
            }
        }
        if (kCross && cross) {
            // The key tiles this consumer skips first (kSkipUnseen), with their turns and
            // releases: the producer loads the next tile's first K only once they are free.
            if constexpr (kSkipUnseen) skip_unseen_tiles();
            const int s_last = (kv + n_wg - 1) % STAGES;
            const uint32_t last_parity = ((kv + n_wg - 1) / STAGES) & 1;
            kv += n_blocks;
            // The next tile: its Q buffer (q_loads counts this tile's already), first K and
            // this consumer's rows and key tiles in it.
            const int next_qb = q_loads % QSTAGES;
            const int s_next = kv % STAGES;
            const int next_row0 = next_m0 + wg * 64 + warp * 16 + g;
            const int next_crossing =
                p.causal ? max(0, (next_m0 + wg * 64 + diag + 1) / BN) : next_blocks;
            const int next_first_masked = min(first_ragged, next_crossing);
            const int next_n_wg = __shfl_sync(0xffffffffu, runs_of(wg, next_m0, next_blocks), 0);
            mbar_wait(v_full + 8 * s_last, last_parity);
            mbar_wait(q_full + 16 * next_qb, (q_loads / QSTAGES) & 1);
            mbar_wait(k_full + 8 * s_next, (kv / STAGES) & 1);
            rescale<HEADDIM>(o, alpha);
            wait_turn(wg);
            wgmma_fence();
            issue_s<HEADDIM, kBlockM, BN>(sc, q_wg0 + next_qb * S::kQBytes,
                                          k_smem + s_next * S::kKVBytes);
            wgmma_commit();
            issue_pv<HEADDIM, BN>(o, pa, v_smem + s_last * S::kKVBytes);
            wgmma_commit();
            pass_turn<kConsumers>(wg);
            asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");  // the next S is done
            fence_registers<BN / 2>(sc);
            float kept_max[2] = {row_max[0], row_max[1]};
            float kept_sum[2] = {row_sum[0], row_sum[1]};
            row_max[0] = row_max[1] = -INFINITY;
            row_sum[0] = row_sum[1] = 0.f;
            if (0 >= next_first_masked)
                mask_tile<BN>(sc, 0, next_row0, c, p.seqlen_k, p.causal, diag);
            softmax_tile<BN>(sc, row_max, row_sum, sl2, alpha);  // under this tile's last P V
            // The first K released only now, as step_tail does with kSoftmaxUnderPv: the branch
            // ends the softmax's basic block, and ptxas keeps the wait for P V below it (with
            // the release before the mask, the wait sat ahead of every exponential).
            release_k(lane, k_empty + 8 * s_next, q_empty + 16 * next_qb, next_n_wg == 1);
            wgmma_wait_all();
            fence_registers<HEADDIM / 2>(o);
            __syncwarp();
            if (lane == 0) mbar_arrive(v_empty + 8 * s_last);
            to_operand<BN>(sc, pa);
            store_tile(kept_max, kept_sum);
#pragma unroll
            for (int i = 0; i < HEADDIM / 2; ++i) o[i] = 0.f;
            s0_ready = true;
            continue;
        }
        if (n_wg > 0) {
            const int s_last = (kv + n_wg - 1) % STAGES;
            mbar_wait(v_full + 8 * s_last, ((kv + n_wg - 1) / STAGES) & 1);
            rescale<HEADDIM>(o, alpha);
            wait_turn(wg);
            wgmma_fence();
            issue_pv<HEADDIM, BN>(o, pa, v_smem + s_last * S::kKVBytes);
            wgmma_commit();
            pass_turn<kConsumers>(wg);
            wgmma_wait_all();
            fence_registers<HEADDIM / 2>(o);
            __syncwarp();
            if (lane == 0) mbar_arrive(v_empty + 8 * s_last);
        }
        if constexpr (kSkipUnseen) {
            // The tiles this warpgroup skips: no GEMM, but the turns it would have taken (every
            // warpgroup takes n_blocks + 1 per tile, so the others' turns come round in order)
            // and its release of each K, V and Q buffer, each only once that buffer holds this
            // tile's data (an earlier arrival would count towards the previous fill's release).
            if (n_wg == 0 && n_blocks > 0) {
                if (!dynamic) mbar_wait(q_full_t, (q_loads / QSTAGES) & 1);
                ++q_loads;
                wait_turn(wg);
                pass_turn<kConsumers>(wg);
            }
            skip_unseen_tiles();
        }
        kv += n_blocks;
        store_tile(row_max, row_sum);
    }
    if (wg == 0) wait_turn(wg);  // the last consumer's last hand-over
}

// ---------------------------------------------------------------------------------------------
// Host side.

// A 4-D map (headdim, heads, seqlen, batch) over a dense bf16 tensor; boxes of 64 columns x
// `rows` rows of one head, 128-byte swizzled.
bool encode_map(CUtensorMap* map, void* data, int headdim, int heads, int seqlen, int batch,
                int rows) {
    const cuuint64_t dims[4] = {static_cast<cuuint64_t>(headdim), static_cast<cuuint64_t>(heads),
                                static_cast<cuuint64_t>(seqlen), static_cast<cuuint64_t>(batch)};
    const cuuint64_t row_bytes = static_cast<cuuint64_t>(headdim) * 2;
    const cuuint64_t strides[3] = {row_bytes, row_bytes * heads, row_bytes * heads * seqlen};
    const cuuint32_t box[4] = {static_cast<cuuint32_t>(kChunk), 1u, static_cast<cuuint32_t>(rows),
                               1u};
    const cuuint32_t element_strides[4] = {1u, 1u, 1u, 1u};
    return cuTensorMapEncodeTiled(map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 4, data, dims, strides,
                                  box, element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                  CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                                  CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

// The grid: one CTA per tile, or persistent with one per multiprocessor (a CTA fills one). A
// causal persistent grid is a whole number of head groups (decode_tile), and only where those
// idle at most 1 SM in 20: a head of 67-131 query blocks would leave up to 65 idle (v16 lost 30%
// at d64 causal 16k so), and dealing such heads one a group over every SM left the SMs' sums of
// work uneven (v18 lost 14% there against one CTA per tile). SMs read once per device.
struct Grid {
    int ctas, causal_group;
};
// The dynamic scheduler's head groups hold about this much K and V (SM90_DYNAMIC_GROUP_MIB).
constexpr long long kDynamicGroupBytes = static_cast<long long>(SM90_DYNAMIC_GROUP_MIB) << 20;

Grid grid_for(int tiles, int m_blocks, int key_tiles, bool causal, long long kv_head_bytes) {
    const Grid per_tile{tiles, 1};
    if (!kPersistent || (causal && !kCausalPersistent)) return per_tile;
    if (!causal && kPersistentMaxKeyTiles > 0 && key_tiles > kPersistentMaxKeyTiles) return per_tile;
    static int sms[64] = {0};
    int device = 0;
    if (cudaGetDevice(&device) != cudaSuccess || device < 0 || device >= 64) return per_tile;
    if (sms[device] == 0 &&
        cudaDeviceGetAttribute(&sms[device], cudaDevAttrMultiProcessorCount, device) != cudaSuccess)
        return per_tile;
    const int ctas = sms[device];
    if (!causal) return {tiles < ctas ? tiles : ctas, 1};
    // Dynamic: every SM, tiles in head groups whose K and V come to about kDynamicGroupBytes
    // (they stay in L2 while the group runs), longest query blocks first within a group.
    // Counted (scripts/causal_deal.py): groups so sized end as close to the ideal as groups of
    // one grid's worth of query blocks, or closer, at every causal bench shape but d128 4k.
    if (kDynamicCausal) {
        const long long by_bytes = kDynamicGroupBytes / (kv_head_bytes > 0 ? kv_head_bytes : 1);
        const int heads = tiles / m_blocks;
        const int per_group =
            by_bytes < 1 ? 1 : by_bytes > heads ? heads : static_cast<int>(by_bytes);
        return {tiles < ctas ? tiles : ctas, per_group};
    }
    const int per_group = ctas / m_blocks;
    const int whole = per_group * m_blocks;
    if (per_group == 0 || (ctas - whole) * 20 > ctas) return per_tile;
    return {tiles < whole ? tiles : whole, per_group};
}

// One kernel's launch, with its opt-in shared-memory size set on its first.
template <int HEADDIM, int BLOCK_N, int CONSUMERS, bool DYNAMIC, bool STALE>
int start(const CUtensorMap& tm_q, const CUtensorMap& tm_k, const CUtensorMap& tm_v,
          const Params& p, int ctas, cudaStream_t stream) {
    using S = Shape<HEADDIM, BLOCK_N, CONSUMERS>;
    static bool configured = false;
    if (!configured) {
        if (cudaFuncSetAttribute(flash_fwd_sm90<HEADDIM, BLOCK_N, CONSUMERS, DYNAMIC, STALE>,
                                 cudaFuncAttributeMaxDynamicSharedMemorySize,
                                 S::kSmemBytes) != cudaSuccess)
            return 4;
        configured = true;
    }
    flash_fwd_sm90<HEADDIM, BLOCK_N, CONSUMERS, DYNAMIC, STALE>
        <<<ctas, S::kThreads, S::kSmemBytes, stream>>>(tm_q, tm_k, tm_v, p);
    return cudaGetLastError() == cudaSuccess ? 0 : 5;
}

template <int HEADDIM, int BLOCK_N, int CONSUMERS>
int launch_tiles(void* const* tensors, const Params& p, int nheads_kv, cudaStream_t stream) {
    using S = Shape<HEADDIM, BLOCK_N, CONSUMERS>;
    constexpr int kBlockM = S::kBlockM;
    CUtensorMap tm_q, tm_k, tm_v;
    const bool encoded =
        encode_map(&tm_q, tensors[0], HEADDIM, p.nheads, p.seqlen_q, p.batch, kBlockM) &&
        encode_map(&tm_k, tensors[1], HEADDIM, nheads_kv, p.seqlen_k, p.batch, S::kBlockN) &&
        encode_map(&tm_v, tensors[2], HEADDIM, nheads_kv, p.seqlen_k, p.batch, S::kBlockN);
    if (!encoded) return 3;
    const int m_blocks = (p.seqlen_q + kBlockM - 1) / kBlockM;
    const long long tiles = static_cast<long long>(m_blocks) * p.nheads * p.batch;
    if (tiles > 0x7fffffff) return 1;
    const int key_tiles = (p.seqlen_k + S::kBlockN - 1) / S::kBlockN;
    const long long kv_head_bytes = 2ll * p.seqlen_k * HEADDIM * 2;  // K and V, bf16
    const Grid grid =
        grid_for(static_cast<int>(tiles), m_blocks, key_tiles, p.causal, kv_head_bytes);
    Params launch_params = p;
    launch_params.causal_group = grid.causal_group;
    // The dynamic scheduler's kernel is built only with its knob (and used for causal grids);
    // the stale-maximum kernel only with its own (and used from stale_min_keys keys), and with
    // two consumers, beside which its exact path fits in registers (three: kStaleThree).
    const bool dynamic = kDynamicCausal && p.causal;
    constexpr bool kStale = stale_max<HEADDIM>() && (CONSUMERS == 2 || kStaleThree) &&
                            (SM90_SOFTMAX_UNDER_PV == 1 ||
                             (SM90_SOFTMAX_UNDER_PV == 2 && HEADDIM != 64));
    if constexpr (kStale) {
        if (p.seqlen_k >= stale_min_keys<HEADDIM>())
            return dynamic ? start<HEADDIM, BLOCK_N, CONSUMERS, kDynamicCausal, true>(
                                 tm_q, tm_k, tm_v, launch_params, grid.ctas, stream)
                           : start<HEADDIM, BLOCK_N, CONSUMERS, false, true>(
                                 tm_q, tm_k, tm_v, launch_params, grid.ctas, stream);
    }
    return dynamic ? start<HEADDIM, BLOCK_N, CONSUMERS, kDynamicCausal, false>(
                         tm_q, tm_k, tm_v, launch_params, grid.ctas, stream)
                   : start<HEADDIM, BLOCK_N, CONSUMERS, false, false>(tm_q, tm_k, tm_v,
                                                                      launch_params, grid.ctas,
                                                                      stream);
}

template <int HEADDIM>
int launch(void* const* tensors, const Params& p, int nheads_kv, cudaStream_t stream) {
    constexpr int kCausalN = block_n<HEADDIM, true>();
    constexpr int kFullN = block_n<HEADDIM, false>();
    constexpr int kConsumers = default_consumers<HEADDIM>();
    if constexpr (HEADDIM == 64 && SM90_D64_CONSUMERS == 0) {
        if (p.causal && p.seqlen_q <= 1024)
            return launch_tiles<HEADDIM, kCausalN, 2>(tensors, p, nheads_kv, stream);
    }
    if (p.causal) return launch_tiles<HEADDIM, kCausalN, kConsumers>(tensors, p, nheads_kv, stream);
    if constexpr (HEADDIM == 128 && SM90_D128_SHORT_KEYS > 0 && kFullN != kCausalN) {
        if (p.seqlen_k <= SM90_D128_SHORT_KEYS)
            return launch_tiles<HEADDIM, kCausalN, kConsumers>(tensors, p, nheads_kv, stream);
    }
    return launch_tiles<HEADDIM, kFullN, kConsumers>(tensors, p, nheads_kv, stream);
}

}  // namespace

extern "C" int ks_launch(void* const* tensors, const int64_t* ints, const double* floats,
                         cudaStream_t stream) {
    Params p;
    p.out = static_cast<__nv_bfloat16*>(tensors[3]);
    p.lse = static_cast<float*>(tensors[4]);
    p.batch = static_cast<int>(ints[0]);
    p.seqlen_q = static_cast<int>(ints[1]);
    p.seqlen_k = static_cast<int>(ints[2]);
    p.nheads = static_cast<int>(ints[3]);
    const int nheads_kv = static_cast<int>(ints[4]);
    const int headdim = static_cast<int>(ints[5]);
    p.causal = ints[6] != 0;
    p.scale_log2 = static_cast<float>(floats[0] * static_cast<double>(kLog2e));
    if (p.batch <= 0 || p.seqlen_q <= 0 || p.nheads <= 0) return 0;  // nothing to compute
    if (p.seqlen_k <= 0 || nheads_kv <= 0 || p.nheads % nheads_kv != 0) return 1;
    p.group = p.nheads / nheads_kv;
    switch (headdim) {
        case 64: return launch<64>(tensors, p, nheads_kv, stream);
        case 128: return launch<128>(tensors, p, nheads_kv, stream);
        case 256: return launch<256>(tensors, p, nheads_kv, stream);
        default: return 2;  // unsupported head dimension
    }
}

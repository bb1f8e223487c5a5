// FlashAttention forward, the honest starting point: tiled, online softmax, fp32 math on the
// CUDA cores (no tensor cores, no async copies).
// Tiles: one block of 256 threads owns BLOCK_M query rows of one (batch, head) and walks the keys
//   in tiles of BLOCK_N; threads form a 16 x 16 grid, each holding TM = BLOCK_M/16 rows.
// Stages per key tile: load K^T and V to shared memory as fp32 -> S = Q K^T (TM x TN per thread)
//   -> masked online softmax (row max/sum across the 16 threads of a row group by shuffles)
//   -> P to shared memory -> O += P V (TM rows x HEADDIM/16 columns per thread).
// Shared buffers: Qt[HEADDIM][BLOCK_M+4] (Q^T, pre-scaled by softmax_scale*log2 e),
//   Kt[HEADDIM][BLOCK_N+4] (K^T), Vs[BLOCK_N][HEADDIM] (V), Pt[BLOCK_N][BLOCK_M+4] (P^T).
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <stdint.h>
#include <math.h>

#ifndef BLOCK_M
#define BLOCK_M 64
#endif
#ifndef BLOCK_N
#define BLOCK_N 64
#endif

constexpr int kThreads = 256;
constexpr int kGrid = 16;                    // the threads form a kGrid x kGrid square
constexpr int kPad = 4;                      // keeps float4 alignment and spreads banks
constexpr int kSmemLimit = 227 * 1024;       // Hopper's opt-in shared memory per block
constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;

struct Params {
    const __nv_bfloat16* q;
    const __nv_bfloat16* k;
    const __nv_bfloat16* v;
    __nv_bfloat16* out;
    float* lse;
    int seqlen_q, seqlen_k, nheads, nheads_kv;
    int causal;
    float scale_log2;  // softmax_scale * log2(e): scores live in base-2 units
};

template <int HEADDIM, int BM, int BN>
struct Tile {
    static constexpr int TM = BM / kGrid;           // query rows per thread
    static constexpr int TN = BN / kGrid;           // key columns per thread in S
    static constexpr int TD = HEADDIM / kGrid;      // output columns per thread in O
    static constexpr int kQStride = BM + kPad;
    static constexpr int kKStride = BN + kPad;
    static constexpr int kPStride = BM + kPad;
    static constexpr int kQFloats = HEADDIM * kQStride;
    static constexpr int kKFloats = HEADDIM * kKStride;
    static constexpr int kVFloats = BN * HEADDIM;
    static constexpr int kPFloats = BN * kPStride;
    static constexpr size_t kSmemBytes =
        sizeof(float) * (kQFloats + kKFloats + kVFloats + kPFloats);
};

__device__ __forceinline__ void bf16x8_to_float(const uint4& raw, float* out) {
    const __nv_bfloat162* pairs = reinterpret_cast<const __nv_bfloat162*>(&raw);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        float2 f = __bfloat1622float2(pairs[i]);
        out[2 * i] = f.x;
        out[2 * i + 1] = f.y;
    }
}

// Loads `rows` rows of one head (row stride `row_stride` elements) into a transposed fp32 tile
// dst[d][r] (stride `dst_stride`), zero-filling rows past `valid_rows` and multiplying by `mul`.
// Consecutive threads take consecutive rows so the transposed stores hit consecutive banks.
template <int HEADDIM>
__device__ void load_transposed(float* dst, int dst_stride, const __nv_bfloat16* src,
                                int64_t row_stride, int rows, int valid_rows, float mul) {
    constexpr int kChunks = HEADDIM / 8;
    for (int idx = threadIdx.x; idx < rows * kChunks; idx += kThreads) {
        const int r = idx % rows;
        const int c = idx / rows;
        float vals[8];
        if (r < valid_rows) {
            uint4 raw = *reinterpret_cast<const uint4*>(src + r * row_stride + c * 8);
            bf16x8_to_float(raw, vals);
        } else {
#pragma unroll
            for (int i = 0; i < 8; ++i) vals[i] = 0.f;
        }
#pragma unroll
        for (int i = 0; i < 8; ++i) dst[(c * 8 + i) * dst_stride + r] = vals[i] * mul;
    }
}

// Loads `rows` rows of V into a row-major fp32 tile dst[r][d], zero-filling past `valid_rows`.
template <int HEADDIM>
__device__ void load_rows(float* dst, const __nv_bfloat16* src, int64_t row_stride, int rows,
                          int valid_rows) {
    constexpr int kChunks = HEADDIM / 8;
    for (int idx = threadIdx.x; idx < rows * kChunks; idx += kThreads) {
        const int r = idx / kChunks;
        const int c = idx % kChunks;
        float vals[8];
        if (r < valid_rows) {
            uint4 raw = *reinterpret_cast<const uint4*>(src + r * row_stride + c * 8);
            bf16x8_to_float(raw, vals);
        } else {
#pragma unroll
            for (int i = 0; i < 8; ++i) vals[i] = 0.f;
        }
        float4* out = reinterpret_cast<float4*>(dst + r * HEADDIM + c * 8);
        out[0] = make_float4(vals[0], vals[1], vals[2], vals[3]);
        out[1] = make_float4(vals[4], vals[5], vals[6], vals[7]);
    }
}

// Reduces across the 16 threads of a row group: they are 16 consecutive lanes of one warp.
__device__ __forceinline__ float row_group_max(float x) {
#pragma unroll
    for (int offset = kGrid / 2; offset > 0; offset >>= 1)
        x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, offset));
    return x;
}

__device__ __forceinline__ float row_group_sum(float x) {
#pragma unroll
    for (int offset = kGrid / 2; offset > 0; offset >>= 1)
        x += __shfl_xor_sync(0xffffffffu, x, offset);
    return x;
}

template <int HEADDIM, int BM, int BN>
__global__ void __launch_bounds__(kThreads)
flash_fwd_kernel(const Params p) {
    using T = Tile<HEADDIM, BM, BN>;
    extern __shared__ __align__(16) float smem[];
    float* Qt = smem;
    float* Kt = Qt + T::kQFloats;
    float* Vs = Kt + T::kKFloats;
    float* Pt = Vs + T::kVFloats;

    const int m_block = blockIdx.x;
    const int head = blockIdx.y;
    const int batch = blockIdx.z;
    const int kv_head = head / (p.nheads / p.nheads_kv);
    const int ty = threadIdx.x / kGrid;  // row group: rows ty*TM .. ty*TM+TM-1
    const int tx = threadIdx.x % kGrid;  // column group
    const int m0 = m_block * BM;
    const int valid_m = min(BM, p.seqlen_q - m0);

    const int64_t q_row = (int64_t)p.nheads * HEADDIM;
    const int64_t kv_row = (int64_t)p.nheads_kv * HEADDIM;
    const __nv_bfloat16* q_base = p.q + ((int64_t)batch * p.seqlen_q + m0) * q_row + head * HEADDIM;
    const __nv_bfloat16* k_base = p.k + (int64_t)batch * p.seqlen_k * kv_row + kv_head * HEADDIM;
    const __nv_bfloat16* v_base = p.v + (int64_t)batch * p.seqlen_k * kv_row + kv_head * HEADDIM;

    // Bottom-right causal alignment: query i sees keys j <= i + causal_offset.
    const int causal_offset = p.seqlen_k - p.seqlen_q;
    int n_end = p.seqlen_k;
    if (p.causal) n_end = max(0, min(p.seqlen_k, m0 + valid_m + causal_offset));

    load_transposed<HEADDIM>(Qt, T::kQStride, q_base, q_row, BM, valid_m, p.scale_log2);

    float o[T::TM][T::TD];
    float row_max[T::TM], row_sum[T::TM];
#pragma unroll
    for (int i = 0; i < T::TM; ++i) {
        row_max[i] = -INFINITY;
        row_sum[i] = 0.f;
#pragma unroll
        for (int j = 0; j < T::TD; ++j) o[i][j] = 0.f;
    }

    for (int n0 = 0; n0 < n_end; n0 += BN) {
        const int valid_n = min(BN, p.seqlen_k - n0);
        __syncthreads();  // the previous tile's Kt, Vs and Pt are no longer read
        load_transposed<HEADDIM>(Kt, T::kKStride, k_base + n0 * kv_row, kv_row, BN, valid_n, 1.f);
        load_rows<HEADDIM>(Vs, v_base + n0 * kv_row, kv_row, BN, valid_n);
        __syncthreads();

        // S = Q K^T for this thread's TM x TN scores.
        float s[T::TM][T::TN];
#pragma unroll
        for (int i = 0; i < T::TM; ++i)
#pragma unroll
            for (int j = 0; j < T::TN; ++j) s[i][j] = 0.f;
#pragma unroll 4
        for (int d = 0; d < HEADDIM; ++d) {
            float qv[T::TM], kv[T::TN];
#pragma unroll
            for (int i = 0; i < T::TM; ++i) qv[i] = Qt[d * T::kQStride + ty * T::TM + i];
#pragma unroll
            for (int j = 0; j < T::TN; ++j) kv[j] = Kt[d * T::kKStride + tx * T::TN + j];
#pragma unroll
            for (int i = 0; i < T::TM; ++i)
#pragma unroll
                for (int j = 0; j < T::TN; ++j) s[i][j] = fmaf(qv[i], kv[j], s[i][j]);
        }

        // Mask, then the online softmax update of each row.
#pragma unroll
        for (int i = 0; i < T::TM; ++i) {
            const int qi = m0 + ty * T::TM + i;
            float tile_max = -INFINITY;
#pragma unroll
            for (int j = 0; j < T::TN; ++j) {
                const int kj = n0 + tx * T::TN + j;
                const bool masked = kj >= p.seqlen_k || (p.causal && kj > qi + causal_offset);
                if (masked) s[i][j] = -INFINITY;
                tile_max = fmaxf(tile_max, s[i][j]);
            }
            tile_max = row_group_max(tile_max);
            const float new_max = fmaxf(row_max[i], tile_max);
            // A row with no visible key so far keeps max -inf; subtract 0 so exp2 gives 0, not NaN.
            const float base = new_max == -INFINITY ? 0.f : new_max;
            const float alpha = row_max[i] == -INFINITY ? 0.f : exp2f(row_max[i] - base);
            float tile_sum = 0.f;
#pragma unroll
            for (int j = 0; j < T::TN; ++j) {
                s[i][j] = exp2f(s[i][j] - base);
                tile_sum += s[i][j];
            }
            row_sum[i] = row_sum[i] * alpha + row_group_sum(tile_sum);
            row_max[i] = new_max;
#pragma unroll
            for (int j = 0; j < T::TD; ++j) o[i][j] *= alpha;
#pragma unroll
            for (int j = 0; j < T::TN; ++j) Pt[(tx * T::TN + j) * T::kPStride + ty * T::TM + i] = s[i][j];
        }
        __syncthreads();

        // O += P V: this thread's TM rows, columns tx*4 + 64*c .. +3 (float4 groups).
        for (int j = 0; j < valid_n; ++j) {
            float pv[T::TM];
#pragma unroll
            for (int i = 0; i < T::TM; ++i) pv[i] = Pt[j * T::kPStride + ty * T::TM + i];
#pragma unroll
            for (int c = 0; c < T::TD / 4; ++c) {
                const float4 vv =
                    *reinterpret_cast<const float4*>(Vs + j * HEADDIM + c * 64 + tx * 4);
#pragma unroll
                for (int i = 0; i < T::TM; ++i) {
                    o[i][4 * c + 0] = fmaf(pv[i], vv.x, o[i][4 * c + 0]);
                    o[i][4 * c + 1] = fmaf(pv[i], vv.y, o[i][4 * c + 1]);
                    o[i][4 * c + 2] = fmaf(pv[i], vv.z, o[i][4 * c + 2]);
                    o[i][4 * c + 3] = fmaf(pv[i], vv.w, o[i][4 * c + 3]);
                }
            }
        }
    }

    // Normalise and store; a row that saw no key gives out = 0 and lse = +inf.
#pragma unroll
    for (int i = 0; i < T::TM; ++i) {
        const int r = ty * T::TM + i;
        if (r >= valid_m) continue;
        const int qi = m0 + r;
        const bool empty = row_sum[i] == 0.f;
        const float inv = empty ? 0.f : 1.f / row_sum[i];
        __nv_bfloat16* out_row = p.out + (((int64_t)batch * p.seqlen_q + qi) * p.nheads + head) * HEADDIM;
#pragma unroll
        for (int c = 0; c < T::TD / 4; ++c) {
            __nv_bfloat162 lo = __floats2bfloat162_rn(o[i][4 * c] * inv, o[i][4 * c + 1] * inv);
            __nv_bfloat162 hi = __floats2bfloat162_rn(o[i][4 * c + 2] * inv, o[i][4 * c + 3] * inv);
            uint2 packed;
            packed.x = *reinterpret_cast<uint32_t*>(&lo);
            packed.y = *reinterpret_cast<uint32_t*>(&hi);
            *reinterpret_cast<uint2*>(out_row + c * 64 + tx * 4) = packed;
        }
        if (tx == 0) {
            const float lse = empty ? INFINITY : (row_max[i] + log2f(row_sum[i])) * kLn2;
            p.lse[((int64_t)batch * p.nheads + head) * p.seqlen_q + qi] = lse;
        }
    }
}

template <int HEADDIM, int BM, int BN>
static int launch(const Params& p, int batch, cudaStream_t stream) {
    using T = Tile<HEADDIM, BM, BN>;
    auto kernel = flash_fwd_kernel<HEADDIM, BM, BN>;
    cudaError_t err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                           (int)T::kSmemBytes);
    if (err != cudaSuccess) return (int)err;
    dim3 grid((p.seqlen_q + BM - 1) / BM, p.nheads, batch);
    kernel<<<grid, kThreads, T::kSmemBytes, stream>>>(p);
    return (int)cudaGetLastError();
}

// The knobs ask for BLOCK_M x BLOCK_N; shrink the key tile, then the query tile, until the
// block's shared memory fits and a thread holds at most 64 output accumulators.
template <int HEADDIM, int BM, int BN>
static int launch_fitting(const Params& p, int batch, cudaStream_t stream) {
    using T = Tile<HEADDIM, BM, BN>;
    constexpr bool fits = T::kSmemBytes <= kSmemLimit && T::TM * T::TD <= 64;
    if constexpr (fits) {
        return launch<HEADDIM, BM, BN>(p, batch, stream);
    } else if constexpr (BN > 32) {
        return launch_fitting<HEADDIM, BM, BN / 2>(p, batch, stream);
    } else if constexpr (BM > 32) {
        return launch_fitting<HEADDIM, BM / 2, BN>(p, batch, stream);
    } else {
        return launch<HEADDIM, 32, 32>(p, batch, stream);
    }
}

extern "C" int ks_launch(void* const* tensors, const int64_t* ints, const double* floats,
                         cudaStream_t stream) {
    const int batch = (int)ints[0];
    Params p;
    p.q = static_cast<const __nv_bfloat16*>(tensors[0]);
    p.k = static_cast<const __nv_bfloat16*>(tensors[1]);
    p.v = static_cast<const __nv_bfloat16*>(tensors[2]);
    p.out = static_cast<__nv_bfloat16*>(tensors[3]);
    p.lse = static_cast<float*>(tensors[4]);
    p.seqlen_q = (int)ints[1];
    p.seqlen_k = (int)ints[2];
    p.nheads = (int)ints[3];
    p.nheads_kv = (int)ints[4];
    const int headdim = (int)ints[5];
    p.causal = ints[6] != 0;
    p.scale_log2 = (float)(floats[0] * (double)kLog2e);

    if (batch <= 0 || p.seqlen_q <= 0 || p.nheads <= 0) return 0;  // nothing to compute
    if (p.seqlen_k < 0 || p.nheads_kv <= 0 || p.nheads % p.nheads_kv != 0) return 1;
    switch (headdim) {
        case 64: return launch_fitting<64, BLOCK_M, BLOCK_N>(p, batch, stream);
        case 128: return launch_fitting<128, BLOCK_M, BLOCK_N>(p, batch, stream);
        case 256: return launch_fitting<256, BLOCK_M, BLOCK_N>(p, batch, stream);
        default: return 2;  // unsupported head dimension
    }
}

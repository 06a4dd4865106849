// GPU vs CPU twin: the context-parallel attention blocks (attention_kv_pack, attention_block_forward with
// its log-sum-exp merge, attention_block_backward) for CP 2, every (query rank, key rank) pair in ring
// order, GQA and attention dropout, in fp32, bf16 and fp16 (inputs rounded to the dtype first).
#include "tests/gpu/gpu_test_util.h"

using namespace gptrain;
using namespace gptrain::gputest;

TEST_CASE("gpu context-parallel attention blocks vs cpu (CP 2, GQA, dropout)", "[gpu]") {
  GPTRAIN_REQUIRE_GPU();
  const int B = 2, cp = 2, chunk = 8, Tl = 2 * chunk, NH = 4, NKV = 2, HS = 16, N = B * Tl;
  const std::size_t W = std::size_t(NH + 2 * NKV) * HS, QW = std::size_t(NH) * HS, KW = 2 * std::size_t(NKV) * HS;
  for (DType t : {DType::F32, DType::BF16, DType::F16})
    for (float p : {0.0f, 0.2f}) {
      Twins tw(t);
      INFO("dtype " << dtype_name(t) << " p " << p);
      std::vector<std::vector<float>> qkv = {rounded(t, randn(N * W, 31)), rounded(t, randn(N * W, 32))};
      std::vector<float> dout = rounded(t, randn(N * QW, 33));
      for (int r = 0; r < cp; ++r) {
        Buf cq = upload_f32(*tw.cpu, qkv[r]), gq = upload(*tw.gpu, t, qkv[r]);
        Buf cacc(*tw.cpu, N * QW * 4), gacc(*tw.gpu, N * QW * 4), clse(*tw.cpu, B * NH * Tl * 4),
            glse(*tw.gpu, B * NH * Tl * 4);
        for (int step = 0; step < cp; ++step) {
          const int j = (r - step + cp) % cp;
          Buf ck(*tw.cpu, N * KW * 4), gk(*tw.gpu, N * KW * dtype_size(t));
          Buf cqj = upload_f32(*tw.cpu, qkv[j]), gqj = upload(*tw.gpu, t, qkv[j]);
          tw.cpu->attention_kv_pack(ck.get(), cqj.get(), N, NH, NKV, HS);
          tw.gpu->attention_kv_pack(gk.get(), gqj.get(), N, NH, NKV, HS);
          GPTRAIN_CHECK_CLOSE("kv_pack", download(*tw.gpu, t, gk.get(), N * KW), download_f32(*tw.cpu, ck, N * KW),
                              0.0);
          const AttentionBlock blk{chunk, cp, r, j};
          tw.cpu->attention_block_forward(cacc.f(), clse.f(), cq.get(), ck.get(), B, NH, NKV, HS, blk, step == 0, p, 5,
                                          100, {});
          tw.gpu->attention_block_forward(gacc.f(), glse.f(), gq.get(), gk.get(), B, NH, NKV, HS, blk, step == 0, p, 5,
                                          100, {});
          GPTRAIN_CHECK_CLOSE("block forward out", download_f32(*tw.gpu, gacc, N * QW),
                              download_f32(*tw.cpu, cacc, N * QW), 1e-5);
          GPTRAIN_CHECK_CLOSE("block forward lse", download_f32(*tw.gpu, glse, B * NH * Tl),
                              download_f32(*tw.cpu, clse, B * NH * Tl), 1e-5);
        }
        // Backward of every block against the merged output (the final out in the compute dtype).
        std::vector<float> out = rounded(t, download_f32(*tw.cpu, cacc, N * QW));
        Buf cout = upload_f32(*tw.cpu, out), gout = upload(*tw.gpu, t, out);
        Buf cdo = upload_f32(*tw.cpu, dout), gdo = upload(*tw.gpu, t, dout);
        std::vector<float> zq(N * QW, 0.0f), zk(N * KW, 0.0f);
        Buf cdq = upload_f32(*tw.cpu, zq), gdq = upload_f32(*tw.gpu, zq);
        for (int j = 0; j < cp; ++j) {
          Buf ck(*tw.cpu, N * KW * 4), gk(*tw.gpu, N * KW * dtype_size(t));
          Buf cqj = upload_f32(*tw.cpu, qkv[j]), gqj = upload(*tw.gpu, t, qkv[j]);
          tw.cpu->attention_kv_pack(ck.get(), cqj.get(), N, NH, NKV, HS);
          tw.gpu->attention_kv_pack(gk.get(), gqj.get(), N, NH, NKV, HS);
          Buf cdk = upload_f32(*tw.cpu, zk), gdk = upload_f32(*tw.gpu, zk);
          const AttentionBlock blk{chunk, cp, r, j};
          tw.cpu->attention_block_backward(cdq.f(), cdk.f(), cdo.get(), cq.get(), ck.get(), cout.get(), clse.f(), B, NH,
                                           NKV, HS, blk, p, 5, 100, {});
          tw.gpu->attention_block_backward(gdq.f(), gdk.f(), gdo.get(), gq.get(), gk.get(), gout.get(), glse.f(), B, NH,
                                           NKV, HS, blk, p, 5, 100, {});
          GPTRAIN_CHECK_CLOSE("block backward dkv", download_f32(*tw.gpu, gdk, N * KW),
                              download_f32(*tw.cpu, cdk, N * KW), 1e-4);
        }
        GPTRAIN_CHECK_CLOSE("block backward dq", download_f32(*tw.gpu, gdq, N * QW), download_f32(*tw.cpu, cdq, N * QW),
                            1e-4);
      }
    }
}

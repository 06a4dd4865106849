// A tensor file whose slice metadata names blocks outside the tensor (found by tests/fuzz): the error
// names the file and the tensor, not only "checkpoint: slice block ... out of range".
#include "core/checkpoint/checkpoint.h"
#include "core/safetensors/writer.h"
#include "error_text.h"
#include "scratch_dir.h"

#include <catch2/catch.hpp>

namespace ck = gptrain::checkpoint;

TEST_CASE("checkpoint: slice metadata with a block out of range is refused naming the file and tensor") {
  const gptrain::test::ScratchDir scratch("ckpt_slice_errors");
  const auto dir = scratch.fresh("iter");
  ck::write_metadata(dir.string(), ck::Metadata{});
  const std::vector<float> v(6, 1.0f);
  const std::vector<gptrain::safetensors::HostTensorRef> refs = {
      {{"w", gptrain::safetensors::DType::F32, {2, 3}}, v.data()}};
  const std::string file = (dir / ck::model_file_name(0, 0)).string();
  // Rows [1, 3) of a global tensor that has 2.
  gptrain::safetensors::write_file(file, refs, {{"w", R"({"global_shape": [2, 3], "blocks": [[0, 1, 2]]})"}});
  const std::string e = gptrain::test::error_text([&] { ck::Checkpoint c(dir.string()); });
  REQUIRE(e.find(file + ": tensor \"w\"") != std::string::npos);
  REQUIRE(e.find("out of range") != std::string::npos);
  scratch.remove();
}

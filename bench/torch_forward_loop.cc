// A libtorch inference loop, forward only: loads a TorchScript model once and runs it on a batch
// ITERATIONS times without gradients, as an inference server's request loop does.
//   torch_forward_loop MODEL.pt ITERATIONS
#include <torch/script.h>

#include <cstdio>
#include <cstdlib>

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: torch_forward_loop MODEL.pt ITERATIONS\n");
    return 2;
  }
  torch::NoGradGuard no_grad;
  torch::jit::Module module = torch::jit::load(argv[1]);
  module.eval();
  std::vector<torch::jit::IValue> inputs{torch::rand({32, 3, 8, 8})};
  long iterations = std::atol(argv[2]);
  double total = 0;
  for (long i = 0; i < iterations; ++i) total += module.forward(inputs).toTensor().sum().item<double>();
  std::printf("%.3f\n", total);
  return 0;
}

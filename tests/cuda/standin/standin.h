// The private seam between the stand-in libcuda and libcupti the CUDA tests build: as the real
// CUPTI reaches the real driver through interfaces of its own, the stand-in libcupti hands the
// driver its dispatch when leakscope subscribes, and the driver calls it around every API call.
#ifndef LEAKSCOPE_TESTS_CUDA_STANDIN_H_
#define LEAKSCOPE_TESTS_CUDA_STANDIN_H_

#include <cupti.h>

// A stand-in context: what cuptiGetDeviceId reads.
struct StandinContext {
  int device;
  unsigned id;
};

// The dispatch the stand-in libcupti gives the stand-in driver (standin_cuda_set_dispatch());
// null while nobody is subscribed.
using StandinDispatch = void (*)(CUpti_CallbackDomain domain, CUpti_CallbackId id, const void* data);
extern "C" void standin_cuda_set_dispatch(StandinDispatch dispatch);

#endif  // LEAKSCOPE_TESTS_CUDA_STANDIN_H_

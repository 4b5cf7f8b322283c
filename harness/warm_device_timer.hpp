#pragma once
// Measurement policy: warm device time of one short operation, as the mean over back-to-back
// repeats between two CUDA events. For calibrating the parts of a longer iteration (the event time
// of one input copy or one loss readback in the GPU training rows), where a single copy of a few
// bytes is shorter than the events' resolution (0.5 us) and each repeat would otherwise pay a
// launch gap; and for the GPU time of a training step with nothing else in the way (a graph of
// steps replayed once). One untimed repeat first (first touch, lazy loading, graph upload).

#include <cuda_runtime.h>

#include "kernels/common/cuda_resources.hpp"

namespace gpubench {

// Mean event seconds of body() (which enqueues on `stream`) over `repeats` back-to-back calls.
template <typename Body>
double warm_device_seconds(cudaStream_t stream, int repeats, Body&& body) {
  Event start;
  Event stop;
  body();
  start.record(stream);
  for (int repeat = 0; repeat < repeats; ++repeat) body();
  stop.record(stream);
  stop.synchronize();
  return Event::seconds_between(start, stop) / repeats;
}

}  // namespace gpubench

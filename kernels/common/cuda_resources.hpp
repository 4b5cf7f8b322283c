#pragma once
// RAII owners for every CUDA and cuBLAS resource the suite creates. Each is move-only; destructors
// never throw (a failure while releasing is ignored: the context is being torn down anyway).

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "kernels/common/cuda_check.hpp"

namespace gpubench {

// Owns one allocation made by `Allocate` and released by `Release` (both CUDA runtime calls).
template <cudaError_t (*Allocate)(void**, std::size_t), cudaError_t (*Release)(void*)>
class CudaMemory {
 public:
  CudaMemory() = default;
  explicit CudaMemory(std::size_t bytes) : bytes_(bytes) {
    if (bytes_ > 0) GPUBENCH_CUDA_CHECK(Allocate(&data_, bytes_));
  }
  ~CudaMemory() {
    if (data_ != nullptr) Release(data_);
  }
  CudaMemory(CudaMemory&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}
  CudaMemory& operator=(CudaMemory&& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(bytes_, other.bytes_);
    return *this;
  }
  CudaMemory(const CudaMemory&) = delete;
  CudaMemory& operator=(const CudaMemory&) = delete;

  void* data() const { return data_; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(data_);
  }
  std::size_t bytes() const { return bytes_; }

  // Releases the allocation now, checked (the destructor cannot report a failure); empty after.
  void reset() {
    if (data_ == nullptr) return;
    void* data = std::exchange(data_, nullptr);
    bytes_ = 0;
    GPUBENCH_CUDA_CHECK(Release(data));
  }

 private:
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
};

namespace detail {
// Non-template overloads, so their addresses can be template arguments.
inline cudaError_t device_allocate(void** data, std::size_t bytes) {
  return cudaMalloc(data, bytes);
}
inline cudaError_t host_allocate(void** data, std::size_t bytes) {
  return cudaMallocHost(data, bytes);
}
}  // namespace detail

// Memory on the device (cudaMalloc).
using DeviceBuffer = CudaMemory<detail::device_allocate, cudaFree>;

// Page-locked host memory (cudaMallocHost): the DMA engines read it directly, so copies run at the
// link's speed and can be asynchronous.
using PinnedHostBuffer = CudaMemory<detail::host_allocate, cudaFreeHost>;

// While it lives, the memory pool cudaMallocAsync draws from on `device` (its default pool unless
// another was set) keeps what is freed instead of returning it to the driver at the next
// synchronisation: its release threshold is raised to "never", as frameworks' caching allocators
// keep theirs. Afterwards the previous threshold is restored and the pool trimmed, so later
// benchmarks find the device's memory as before.
class RetainingMemPool {
 public:
  explicit RetainingMemPool(int device) {
    int supported = 0;
    GPUBENCH_CUDA_CHECK(
        cudaDeviceGetAttribute(&supported, cudaDevAttrMemoryPoolsSupported, device));
    if (supported == 0) {
      throw CudaError("device " + std::to_string(device) +
                      " has no stream-ordered memory pools (cudaMallocAsync)");
    }
    GPUBENCH_CUDA_CHECK(cudaDeviceGetMemPool(&pool_, device));
    GPUBENCH_CUDA_CHECK(
        cudaMemPoolGetAttribute(pool_, cudaMemPoolAttrReleaseThreshold, &previous_threshold_));
    std::uint64_t never = UINT64_MAX;
    GPUBENCH_CUDA_CHECK(cudaMemPoolSetAttribute(pool_, cudaMemPoolAttrReleaseThreshold, &never));
  }
  ~RetainingMemPool() {
    if (pool_ == nullptr) return;
    cudaMemPoolSetAttribute(pool_, cudaMemPoolAttrReleaseThreshold, &previous_threshold_);
    cudaMemPoolTrimTo(pool_, 0);
  }
  RetainingMemPool(RetainingMemPool&& other) noexcept
      : pool_(std::exchange(other.pool_, nullptr)),
        previous_threshold_(other.previous_threshold_) {}
  RetainingMemPool& operator=(RetainingMemPool&& other) noexcept {
    std::swap(pool_, other.pool_);
    std::swap(previous_threshold_, other.previous_threshold_);
    return *this;
  }
  RetainingMemPool(const RetainingMemPool&) = delete;
  RetainingMemPool& operator=(const RetainingMemPool&) = delete;

  cudaMemPool_t get() const { return pool_; }

 private:
  cudaMemPool_t pool_ = nullptr;
  std::uint64_t previous_threshold_ = 0;
};

// A non-blocking stream: it does not synchronise with the legacy default stream, so nothing else
// in the process serialises with the benchmark's work.
class Stream {
 public:
  Stream() { GPUBENCH_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking)); }
  ~Stream() {
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
  }
  Stream(Stream&& other) noexcept : stream_(std::exchange(other.stream_, nullptr)) {}
  Stream& operator=(Stream&& other) noexcept {
    std::swap(stream_, other.stream_);
    return *this;
  }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  cudaStream_t get() const { return stream_; }
  void synchronize() const { GPUBENCH_CUDA_CHECK(cudaStreamSynchronize(stream_)); }

 private:
  cudaStream_t stream_ = nullptr;
};

// A timing event (default flags: timing enabled, blocking-sync off so waiting spins rather than
// sleeping, which keeps wake-up latency out of t_wall).
class Event {
 public:
  Event() { GPUBENCH_CUDA_CHECK(cudaEventCreate(&event_)); }
  ~Event() {
    if (event_ != nullptr) cudaEventDestroy(event_);
  }
  Event(Event&& other) noexcept : event_(std::exchange(other.event_, nullptr)) {}
  Event& operator=(Event&& other) noexcept {
    std::swap(event_, other.event_);
    return *this;
  }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  cudaEvent_t get() const { return event_; }
  void record(cudaStream_t stream) const { GPUBENCH_CUDA_CHECK(cudaEventRecord(event_, stream)); }
  void synchronize() const { GPUBENCH_CUDA_CHECK(cudaEventSynchronize(event_)); }

  // Seconds between two recorded events; both must have completed (synchronize on `end` first).
  static double seconds_between(const Event& start, const Event& end) {
    float milliseconds = 0.0F;
    GPUBENCH_CUDA_CHECK(cudaEventElapsedTime(&milliseconds, start.event_, end.event_));
    return static_cast<double>(milliseconds) * 1e-3;
  }

 private:
  cudaEvent_t event_ = nullptr;
};

// The first `count` floats of `buffer`, copied to the host after the work already on `stream`
// (synchronous: it waits for the stream).
inline std::vector<float> read_device_floats(const DeviceBuffer& buffer, std::size_t count,
                                             cudaStream_t stream) {
  if (count * sizeof(float) > buffer.bytes()) {
    throw std::out_of_range("read_device_floats: " + std::to_string(count) + " floats asked of a " +
                            std::to_string(buffer.bytes()) + "-byte buffer");
  }
  std::vector<float> values(count);
  GPUBENCH_CUDA_CHECK(cudaMemcpyAsync(values.data(), buffer.data(), count * sizeof(float),
                                      cudaMemcpyDeviceToHost, stream));
  GPUBENCH_CUDA_CHECK(cudaStreamSynchronize(stream));
  return values;
}

// A cuBLAS handle bound to one stream.
class CublasHandle {
 public:
  explicit CublasHandle(cudaStream_t stream) {
    GPUBENCH_CUBLAS_CHECK(cublasCreate(&handle_));
    GPUBENCH_CUBLAS_CHECK(cublasSetStream(handle_, stream));
  }
  ~CublasHandle() {
    if (handle_ != nullptr) cublasDestroy(handle_);
  }
  CublasHandle(CublasHandle&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  CublasHandle& operator=(CublasHandle&& other) noexcept {
    std::swap(handle_, other.handle_);
    return *this;
  }
  CublasHandle(const CublasHandle&) = delete;
  CublasHandle& operator=(const CublasHandle&) = delete;

  cublasHandle_t get() const { return handle_; }

 private:
  cublasHandle_t handle_ = nullptr;
};

// A captured CUDA graph and its executable instance.
class CudaGraph {
 public:
  CudaGraph() = default;
  // Ends the capture begun on `stream` and instantiates it.
  static CudaGraph end_capture(cudaStream_t stream) {
    CudaGraph graph;
    GPUBENCH_CUDA_CHECK(cudaStreamEndCapture(stream, &graph.graph_));
    GPUBENCH_CUDA_CHECK(cudaGraphInstantiate(&graph.exec_, graph.graph_, 0));
    return graph;
  }
  ~CudaGraph() {
    if (exec_ != nullptr) cudaGraphExecDestroy(exec_);
    if (graph_ != nullptr) cudaGraphDestroy(graph_);
  }
  CudaGraph(CudaGraph&& other) noexcept
      : graph_(std::exchange(other.graph_, nullptr)), exec_(std::exchange(other.exec_, nullptr)) {}
  CudaGraph& operator=(CudaGraph&& other) noexcept {
    std::swap(graph_, other.graph_);
    std::swap(exec_, other.exec_);
    return *this;
  }
  CudaGraph(const CudaGraph&) = delete;
  CudaGraph& operator=(const CudaGraph&) = delete;

  void launch(cudaStream_t stream) const { GPUBENCH_CUDA_CHECK(cudaGraphLaunch(exec_, stream)); }

 private:
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
};

}  // namespace gpubench

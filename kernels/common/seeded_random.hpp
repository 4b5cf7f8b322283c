#pragma once
// Seeded random numbers shared by every workload's initialisation and synthetic data.

#include <cstdint>

namespace gpubench {

// Deterministic random numbers from a seed, the same on every platform and compiler (the
// <random> distributions are not specified bit for bit, the engines are, but this is simpler):
// SplitMix64 (Steele, Lea, Flood, "Fast splittable pseudorandom number generators", 2014).
class SeededRandom {
 public:
  explicit SeededRandom(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next_u64() {
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  // Uniform in [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(next_u64() >> 11) * 0x1p-53; }
  double uniform(double low, double high) { return low + (high - low) * uniform(); }
  // Standard normal (Box-Muller; one of the pair is discarded to keep the state simple).
  double normal();
  // Uniform integer in [0, bound).
  std::uint64_t below(std::uint64_t bound) { return next_u64() % bound; }

 private:
  std::uint64_t state_;
};

}  // namespace gpubench

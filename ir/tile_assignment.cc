#include "ir/tile_assignment.h"

#include <algorithm>
#include <numeric>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/shape.h"

namespace spmdcheck {

int64_t LinearIndex(absl::Span<const int64_t> dims, absl::Span<const int64_t> index) {
  int64_t linear = 0;
  for (size_t i = 0; i < dims.size(); ++i) linear = linear * dims[i] + index[i];
  return linear;
}

std::vector<int64_t> MultiIndex(absl::Span<const int64_t> dims, int64_t linear) {
  std::vector<int64_t> index(dims.size(), 0);
  for (int64_t i = static_cast<int64_t>(dims.size()) - 1; i >= 0; --i) {
    index[i] = linear % dims[i];
    linear /= dims[i];
  }
  return index;
}

namespace {

// XLA's CanonicalizeIotaDims: drop size-1 reshape dims and merge runs of consecutive perm
// entries, until nothing changes.
template <typename Dims>
void CanonicalizeIota(Dims& reshape, Dims& perm) {
  bool changed = true;
  while (changed) {
    changed = false;
    // Drop size-1 dims.
    for (size_t i = 0; i < reshape.size();) {
      if (reshape[i] != 1 || reshape.size() == 1) {
        ++i;
        continue;
      }
      int64_t dropped = static_cast<int64_t>(i);
      reshape.erase(reshape.begin() + dropped);
      perm.erase(std::find(perm.begin(), perm.end(), dropped));
      for (int64_t& p : perm) {
        if (p > dropped) --p;
      }
      changed = true;
    }
    // Merge runs q, q+1 in perm.
    for (size_t i = 0; i + 1 < perm.size(); ++i) {
      if (perm[i + 1] != perm[i] + 1) continue;
      int64_t q = perm[i];
      reshape[q] *= reshape[q + 1];
      reshape.erase(reshape.begin() + q + 1);
      perm.erase(perm.begin() + i + 1);
      for (int64_t& p : perm) {
        if (p > q + 1) --p;
      }
      changed = true;
      break;
    }
  }
  if (reshape.size() == 1 && reshape[0] == 1) {
    perm = {0};
  }
  if (reshape.empty()) {
    reshape = {1};
    perm = {0};
  }
}

}  // namespace

absl::StatusOr<IotaTileAssignment> IotaTileAssignment::Create(
    absl::Span<const int64_t> dims, absl::Span<const int64_t> reshape_dims,
    absl::Span<const int64_t> perm) {
  if (reshape_dims.empty()) return absl::InvalidArgumentError("iota reshape dims are empty");
  if (perm.size() != reshape_dims.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "transpose T(", absl::StrJoin(perm, ","), ") has ", perm.size(), " entries but [",
        absl::StrJoin(reshape_dims, ","), "] has ", reshape_dims.size()));
  }
  absl::InlinedVector<bool, 8> seen(perm.size(), false);
  for (int64_t p : perm) {
    if (p < 0 || p >= static_cast<int64_t>(perm.size()) || seen[p]) {
      return absl::InvalidArgumentError(
          absl::StrCat("T(", absl::StrJoin(perm, ","), ") is not a permutation"));
    }
    seen[p] = true;
  }
  for (int64_t d : dims) {
    if (d <= 0) return absl::InvalidArgumentError("tile assignment dims must be positive");
  }
  for (int64_t d : reshape_dims) {
    if (d <= 0) return absl::InvalidArgumentError("iota reshape dims must be positive");
  }
  std::optional<int64_t> n_dims = CheckedProduct(dims);
  std::optional<int64_t> n_reshape = CheckedProduct(reshape_dims);
  if (!n_dims || !n_reshape || *n_dims > kMaxArrayElements) {
    return absl::InvalidArgumentError("tile assignment has more than 2^31 devices");
  }
  if (*n_dims != *n_reshape) {
    return absl::InvalidArgumentError(absl::StrCat(
        "tile assignment [", absl::StrJoin(dims, ","), "] has ", *n_dims, " devices but the iota [",
        absl::StrJoin(reshape_dims, ","), "] has ", *n_reshape));
  }
  IotaTileAssignment iota;
  iota.dims_.assign(dims.begin(), dims.end());
  iota.reshape_dims_.assign(reshape_dims.begin(), reshape_dims.end());
  iota.perm_.assign(perm.begin(), perm.end());
  CanonicalizeIota(iota.reshape_dims_, iota.perm_);
  iota.num_elements_ = *n_dims;
  iota.reshape_strides_.resize(iota.reshape_dims_.size());
  int64_t stride = 1;
  for (size_t i = iota.reshape_dims_.size(); i-- > 0;) {
    iota.reshape_strides_[i] = stride;
    stride *= iota.reshape_dims_[i];
  }
  for (int64_t p : iota.perm_) iota.transposed_dims_.push_back(iota.reshape_dims_[p]);
  return iota;
}

IotaTileAssignment IotaTileAssignment::Plain(absl::Span<const int64_t> dims) {
  const int64_t reshape[] = {CheckedProduct(dims).value_or(1)};
  const int64_t perm[] = {0};
  return *Create(dims, reshape, perm);
}

int64_t IotaTileAssignment::ValueAtLinear(int64_t linear) const {
  // Peel `linear` into digits over the transposed dims (last fastest); digit i is the reshape
  // index along perm_[i].
  int64_t device = 0;
  for (int64_t i = static_cast<int64_t>(perm_.size()) - 1; i >= 0; --i) {
    int64_t digit = linear % transposed_dims_[i];
    linear /= transposed_dims_[i];
    device += digit * reshape_strides_[perm_[i]];
  }
  return device;
}

int64_t IotaTileAssignment::LinearIndexOf(int64_t device) const {
  int64_t linear = 0;
  for (size_t i = 0; i < perm_.size(); ++i) {
    int64_t axis = perm_[i];
    int64_t digit = (device / reshape_strides_[axis]) % reshape_dims_[axis];
    linear = linear * transposed_dims_[i] + digit;
  }
  return linear;
}

std::string IotaTileAssignment::ToString() const {
  std::string out =
      absl::StrCat("[", absl::StrJoin(dims_, ","), "]<=[", absl::StrJoin(reshape_dims_, ","), "]");
  if (reshape_dims_.size() > 1) absl::StrAppend(&out, "T(", absl::StrJoin(perm_, ","), ")");
  return out;
}

namespace {

// The default assignment, built (and validated) once; default construction copies it.
const TileAssignment& DefaultTileAssignment() {
  static const TileAssignment* const kDefault = new TileAssignment(IotaTileAssignment::Plain({1}));
  return *kDefault;
}

}  // namespace

TileAssignment::TileAssignment() : TileAssignment(DefaultTileAssignment()) {}

TileAssignment::TileAssignment(IotaTileAssignment iota)
    : dims_(iota.dims().begin(), iota.dims().end()),
      num_elements_(iota.num_elements()),
      iota_(std::make_shared<const IotaTileAssignment>(std::move(iota))),
      device_bound_(num_elements_) {}

absl::StatusOr<TileAssignment> TileAssignment::Iota(absl::Span<const int64_t> dims,
                                                    absl::Span<const int64_t> reshape_dims,
                                                    absl::Span<const int64_t> perm) {
  absl::StatusOr<IotaTileAssignment> iota = IotaTileAssignment::Create(dims, reshape_dims, perm);
  if (!iota.ok()) return iota.status();
  return TileAssignment(*std::move(iota));
}

absl::StatusOr<TileAssignment> TileAssignment::Explicit(absl::Span<const int64_t> dims,
                                                        std::vector<int64_t> devices) {
  for (int64_t d : dims) {
    if (d <= 0) return absl::InvalidArgumentError("tile assignment dims must be positive");
  }
  std::optional<int64_t> n = CheckedProduct(dims);
  if (!n || *n > kMaxArrayElements) {
    return absl::InvalidArgumentError("tile assignment has more than 2^31 devices");
  }
  if (*n != static_cast<int64_t>(devices.size())) {
    return absl::InvalidArgumentError(absl::StrCat("tile assignment [", absl::StrJoin(dims, ","),
                                                   "] needs ", *n, " devices but the list has ",
                                                   devices.size()));
  }
  TileAssignment result;
  result.dims_.assign(dims.begin(), dims.end());
  result.num_elements_ = *n;
  result.iota_.reset();
  auto positions = std::make_shared<absl::flat_hash_map<int64_t, int64_t>>();
  positions->reserve(devices.size());
  int64_t bound = 0;
  for (size_t i = 0; i < devices.size(); ++i) {
    if (devices[i] < 0) return absl::InvalidArgumentError("device ids must be non-negative");
    // Ids index device tables (and bound + 1 must not overflow): the same limit as the count.
    if (devices[i] >= kMaxArrayElements) {
      return absl::InvalidArgumentError(
          absl::StrCat("device id ", devices[i], " is out of range (ids are below 2^31)"));
    }
    bound = std::max(bound, devices[i] + 1);
    if (!positions->emplace(devices[i], static_cast<int64_t>(i)).second) {
      result.devices_distinct_ = false;
    }
  }
  result.device_bound_ = bound;
  result.position_of_ = std::move(positions);
  result.devices_ = std::make_shared<const std::vector<int64_t>>(std::move(devices));
  return result;
}

int64_t TileAssignment::DeviceAtLinear(int64_t linear) const {
  return iota_ ? iota_->ValueAtLinear(linear) : (*devices_)[linear];
}

int64_t TileAssignment::DeviceAt(absl::Span<const int64_t> tile_index) const {
  return DeviceAtLinear(LinearIndex(dims_, tile_index));
}

std::optional<int64_t> TileAssignment::LinearIndexOf(int64_t device) const {
  if (iota_) {
    if (device < 0 || device >= num_elements_) return std::nullopt;
    return iota_->LinearIndexOf(device);
  }
  auto it = position_of_->find(device);
  if (it == position_of_->end()) return std::nullopt;
  return it->second;
}

std::optional<std::vector<int64_t>> TileAssignment::TileIndexOf(int64_t device) const {
  std::optional<int64_t> linear = LinearIndexOf(device);
  if (!linear) return std::nullopt;
  return MultiIndex(dims_, *linear);
}

std::vector<int64_t> TileAssignment::Devices() const {
  if (!iota_) return *devices_;
  std::vector<int64_t> out(num_elements_);
  for (int64_t i = 0; i < num_elements_; ++i) out[i] = iota_->ValueAtLinear(i);
  return out;
}

TileAssignment TileAssignment::Reshape(absl::Span<const int64_t> new_dims) const {
  if (iota_) {
    return TileAssignment(
        *IotaTileAssignment::Create(new_dims, iota_->reshape_dims(), iota_->perm()));
  }
  TileAssignment result = *this;
  result.dims_.assign(new_dims.begin(), new_dims.end());
  return result;
}

TileAssignment TileAssignment::Transpose(absl::Span<const int64_t> perm) const {
  bool identity = true;
  for (size_t i = 0; i < perm.size(); ++i) identity &= perm[i] == static_cast<int64_t>(i);
  if (identity) return *this;
  std::vector<int64_t> new_dims(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) new_dims[i] = dims_[perm[i]];
  if (iota_) {
    // Symbolically, when every dim is a run of consecutive transposed iota dims (as mesh axes
    // and their factors are): the transpose then reorders those runs, and the result is an iota
    // over the same reshape dims. (Listing the devices took ~1.7 us per device: minutes for
    // the meshes of 10^8 devices fuzz_sharding_parser writes.)
    std::vector<int64_t> iota_perm(iota_->perm().begin(), iota_->perm().end());
    std::vector<int64_t> reshape(iota_->reshape_dims().begin(), iota_->reshape_dims().end());
    bool plain = true;
    for (size_t i = 0; i < iota_perm.size(); ++i) {
      plain &= iota_perm[i] == static_cast<int64_t>(i);
    }
    if (plain) {
      // Untransposed: the iota over the tile dims themselves.
      reshape.assign(dims_.begin(), dims_.end());
      iota_perm.resize(dims_.size());
      for (size_t i = 0; i < dims_.size(); ++i) iota_perm[i] = static_cast<int64_t>(i);
    }
    std::vector<std::vector<int64_t>> runs(dims_.size());
    size_t next = 0;
    bool aligned = true;
    for (size_t i = 0; i < dims_.size() && aligned; ++i) {
      int64_t product = 1;
      while (product < dims_[i] && next < iota_perm.size()) {
        product *= reshape[iota_perm[next]];
        runs[i].push_back(iota_perm[next++]);
      }
      // Size-1 iota dims belong to any run; take them along.
      while (next < iota_perm.size() && reshape[iota_perm[next]] == 1 && i + 1 == dims_.size()) {
        runs[i].push_back(iota_perm[next++]);
      }
      aligned = product == dims_[i];
    }
    if (aligned && next == iota_perm.size()) {
      std::vector<int64_t> new_perm;
      for (int64_t p : perm) new_perm.insert(new_perm.end(), runs[p].begin(), runs[p].end());
      absl::StatusOr<IotaTileAssignment> transposed =
          IotaTileAssignment::Create(new_dims, reshape, new_perm);
      if (transposed.ok()) return TileAssignment(*std::move(transposed));
    }
  }
  std::vector<int64_t> devices(num_elements_);
  std::vector<int64_t> old_index(dims_.size());
  for (int64_t linear = 0; linear < num_elements_; ++linear) {
    std::vector<int64_t> new_index = MultiIndex(new_dims, linear);
    for (size_t i = 0; i < perm.size(); ++i) old_index[perm[i]] = new_index[i];
    devices[linear] = DeviceAt(old_index);
  }
  TileAssignment result = *Explicit(new_dims, std::move(devices));
  // An iota stays an iota when the transposed array is one.
  return is_iota() ? result.Canonical() : result;
}

std::optional<IotaTileAssignment> TileAssignment::AsIota() const {
  if (iota_) return *iota_;
  return DetectIota(dims_, *devices_);
}

TileAssignment TileAssignment::Canonical() const {
  if (iota_) return *this;  // Already an iota (shares it).
  std::optional<IotaTileAssignment> iota = AsIota();
  return iota ? TileAssignment(*std::move(iota)) : *this;
}

std::string TileAssignment::ToString() const {
  if (iota_) return iota_->ToString();
  return absl::StrCat("[", absl::StrJoin(dims_, ","), "]", absl::StrJoin(*devices_, ","));
}

bool TileAssignment::operator==(const TileAssignment& other) const {
  if (dims_ != other.dims_) return false;
  if (iota_ && other.iota_) {
    return iota_->reshape_dims() == other.iota_->reshape_dims() &&
           iota_->perm() == other.iota_->perm();
  }
  for (int64_t i = 0; i < num_elements_; ++i) {
    if (DeviceAtLinear(i) != other.DeviceAtLinear(i)) return false;
  }
  return true;
}

std::optional<IotaTileAssignment> DetectIota(absl::Span<const int64_t> dims,
                                             absl::Span<const int64_t> devices) {
  const int64_t n = static_cast<int64_t>(devices.size());
  if (n == 0 || devices[0] != 0) return std::nullopt;
  // Peel digits of the flattened index from the fastest: each digit is the longest run where
  // the device grows by a constant stride. Factors are collected slowest first.
  std::vector<std::pair<int64_t, int64_t>> factors;  // (size, stride), slowest first.
  int64_t remaining = n;
  int64_t step = 1;
  while (remaining > 1) {
    int64_t stride = devices[step];
    if (stride <= 0) return std::nullopt;
    int64_t run = 1;
    while (run < remaining && devices[run * step] == run * stride) ++run;
    if (remaining % run != 0) return std::nullopt;
    factors.insert(factors.begin(), {run, stride});
    step *= run;
    remaining /= run;
  }
  if (factors.empty()) factors.push_back({1, 1});
  // The strides must be the row-major strides of some reshape: sorted ascending, stride_0 = 1 and
  // stride_{i+1} = stride_i * size_i.
  std::vector<size_t> by_stride(factors.size());
  std::iota(by_stride.begin(), by_stride.end(), 0);
  std::sort(by_stride.begin(), by_stride.end(),
            [&](size_t a, size_t b) { return factors[a].second < factors[b].second; });
  int64_t expected = 1;
  for (size_t i : by_stride) {
    if (factors[i].second != expected) return std::nullopt;
    expected *= factors[i].first;
  }
  if (expected != n) return std::nullopt;
  // Reshape dims are the factors from the largest stride to the smallest; perm lists, in the
  // order of the flattened index, which reshape axis each factor is.
  const size_t m = factors.size();
  std::vector<int64_t> reshape(m);
  std::vector<int64_t> axis_of(m);
  for (size_t r = 0; r < m; ++r) {
    size_t f = by_stride[m - 1 - r];
    reshape[r] = factors[f].first;
    axis_of[f] = static_cast<int64_t>(r);
  }
  absl::StatusOr<IotaTileAssignment> iota = IotaTileAssignment::Create(dims, reshape, axis_of);
  if (!iota.ok()) return std::nullopt;
  for (int64_t i = 0; i < n; ++i) {
    if (iota->ValueAtLinear(i) != devices[i]) return std::nullopt;
  }
  return *std::move(iota);
}

}  // namespace spmdcheck

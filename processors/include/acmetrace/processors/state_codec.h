// The binary encoding of processor state snapshots, and the codec that drives it: each piece of state
// describes its fields once, in a `Fields(io, s)` function that a StateWriter and a StateReader both
// visit (the pattern of cereal's `serialize(Archive&)`), so a field cannot be written and forgotten on
// load. Fixed-width little-endian numbers, length-prefixed strings and containers; reads are bounds
// checked (a truncated or malformed snapshot is an error, never a crash or a huge allocation).
//
// How a type is encoded:
//   int64_t -> 8 bytes (beyond +-2^61 on reading, but for the lowest and highest int64, is an error);
//   uint64_t -> 8 bytes; int32_t -> 8 bytes (as int64; out of range on reading is an error); double -> 8 bytes (IEEE); bool -> uint64 0 or 1 (else an error); std::string -> uint64
//   length, bytes; std::array and std::pair -> their items (no count); vector/deque -> uint64 count,
//   items; map/unordered_map
//   -> uint64 count, (key, value) in key order (unordered maps are sorted first, so equal states give
//   equal bytes); a type with `template <class Io, class S> static void Fields(Io& io, S& s)` -> its
//   fields in the order Fields names them (S is const on writing); a type with `void Write(StateWriter&)
//   const` and `void Read(StateReader&)` -> what those do (adapters over a slice of a larger state); a
//   plain struct of one to four members with neither (an aggregate: no constructor, base or private
//   member) -> its members in the order they are declared, as if its Fields named them all (one that
//   keeps an older layout readable, or holds scratch that is not state, needs a Fields function).
// A Fields function may read `io.version()` to describe an older layout: the writer always writes
// the current one (version() is kCurrentStateVersion there), a reader reads the version it was made with.
#pragma once

#include <algorithm>
#include <array>
#include <concepts>
#include <cstdint>
#include <cstring>
#include <deque>
#include <map>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

namespace acmetrace::processors {

class StateWriter;
class StateReader;

/// Marks "the layout this build writes" to a StateWriter's version() (a writer knows no other).
inline constexpr uint32_t kCurrentStateVersion = UINT32_MAX;

namespace state_codec_internal {

template <class T>
struct IsSequence : std::false_type {};
template <class T, class A>
struct IsSequence<std::vector<T, A>> : std::true_type {};
template <class T, class A>
struct IsSequence<std::deque<T, A>> : std::true_type {};

template <class T>
struct IsArray : std::false_type {};
template <class T, size_t N>
struct IsArray<std::array<T, N>> : std::true_type {};

template <class T>
struct IsPair : std::false_type {};
template <class A, class B>
struct IsPair<std::pair<A, B>> : std::true_type {};

template <class T>
struct IsOrderedMap : std::false_type {};
template <class K, class V, class C, class A>
struct IsOrderedMap<std::map<K, V, C, A>> : std::true_type {};

template <class T>
struct IsUnorderedMap : std::false_type {};
template <class K, class V, class H, class E, class A>
struct IsUnorderedMap<std::unordered_map<K, V, H, E, A>> : std::true_type {};

class MinBytesCounter;

// Converts to any member type: counts an aggregate's members by how many it can be built from.
// Declared only (unevaluated operands).
struct AnyMember {
  template <class U>
  operator U() const;
};

// How many members aggregate T has, 1 to 4; 0 for any other type.
template <class T>
constexpr size_t AggregateMembers() {
  using A = AnyMember;
  if constexpr (!std::is_aggregate_v<T> || std::is_array_v<T> || IsArray<T>::value) {
    return 0;
  } else if constexpr (requires { T{A{}, A{}, A{}, A{}, A{}}; }) {
    return 0;
  } else if constexpr (requires { T{A{}, A{}, A{}, A{}}; }) {
    return 4;
  } else if constexpr (requires { T{A{}, A{}, A{}}; }) {
    return 3;
  } else if constexpr (requires { T{A{}, A{}}; }) {
    return 2;
  } else if constexpr (requires { T{A{}}; }) {
    return 1;
  } else {
    return 0;
  }
}

}  // namespace state_codec_internal

template <class T>
concept StateFields = requires(StateWriter& w, const T& t) { T::Fields(w, t); };

template <class T>
concept StateAdapter = requires(StateWriter& w, StateReader& r, const T& ct, T& t) {
  ct.Write(w);
  t.Read(r);
};

/// A plain struct encoded member by member (see the file comment).
template <class T>
concept StateMembers = !StateFields<T> && !StateAdapter<T> && state_codec_internal::AggregateMembers<T>() > 0;

namespace state_codec_internal {
/// Visits the members of a StateMembers type, in declaration order (v const on writing).
template <class Io, class T>
void VisitMembers(Io& io, T& v) {
  constexpr size_t n = AggregateMembers<std::remove_const_t<T>>();
  if constexpr (n == 1) {
    auto& [a] = v;
    io(a);
  } else if constexpr (n == 2) {
    auto& [a, b] = v;
    io(a, b);
  } else if constexpr (n == 3) {
    auto& [a, b, c] = v;
    io(a, b, c);
  } else {
    auto& [a, b, c, d] = v;
    io(a, b, c, d);
  }
}
}  // namespace state_codec_internal

/// Appends values to a byte string. Not thread-safe.
class StateWriter {
 public:
  static constexpr bool kReading = false;
  uint32_t version() const { return kCurrentStateVersion; }

  /// Writes each value as its type is encoded (see the file comment).
  template <class... T>
  void operator()(const T&... values) {
    (Put(values), ...);
  }

  void U64(uint64_t v) { Raw(&v, sizeof v); }
  void I64(int64_t v) { Raw(&v, sizeof v); }
  void F64(double v) { Raw(&v, sizeof v); }
  void Str(std::string_view s) {
    U64(s.size());
    out_.append(s.data(), s.size());
  }
  const std::string& bytes() const { return out_; }
  std::string Take() { return std::move(out_); }

 private:
  template <class T>
  void Put(const T& v);
  void Raw(const void* p, size_t n) { out_.append(static_cast<const char*>(p), n); }
  std::string out_;
};

/// Reads what a StateWriter wrote. After any read past the end or any malformed value, ok() is false,
/// reads return 0/"" and containers stop filling. Not thread-safe.
class StateReader {
 public:
  static constexpr bool kReading = true;
  /// version: the layout in is written in (Fields functions may branch on it).
  explicit StateReader(std::string_view in, uint32_t version = 1) : in_(in), version_(version) {}
  uint32_t version() const { return version_; }

  /// Reads each value as its type is encoded, replacing what it held (see the file comment).
  template <class... T>
  void operator()(T&&... values) {
    (Get(values), ...);
  }

  uint64_t U64() { return Fixed<uint64_t>(); }
  int64_t I64() { return Fixed<int64_t>(); }
  double F64() { return Fixed<double>(); }
  std::string Str() {
    const uint64_t n = U64();
    if (!ok_ || n > in_.size() - pos_) {
      ok_ = false;
      return {};
    }
    std::string s(in_.substr(pos_, n));
    pos_ += n;
    return s;
  }
  /// A count that must be plausible for the bytes left (each item takes at least min_item_bytes).
  uint64_t Count(size_t min_item_bytes = 1) {
    const uint64_t n = U64();
    if (!ok_ || (min_item_bytes > 0 && n > (in_.size() - pos_) / min_item_bytes)) {
      ok_ = false;
      return 0;
    }
    return n;
  }
  /// A boolean written as 0 or 1; anything else fails the read.
  bool Bool() {
    const uint64_t v = U64();
    if (v > 1) ok_ = false;
    return v == 1;
  }
  bool ok() const { return ok_; }
  bool at_end() const { return pos_ == in_.size(); }
  void Fail() { ok_ = false; }
  /// Fails with a reason (the first one is kept), for an adapter that finds more than a short read.
  void Fail(std::string_view why) {
    if (ok_) error_ = std::string(why);
    ok_ = false;
  }
  /// Why the read failed, when an adapter said; empty for a truncated or out-of-range value.
  const std::string& error() const { return error_; }

 private:
  template <class T>
  void Get(T& v);
  template <typename T>
  T Fixed() {
    T v{};
    if (!ok_ || in_.size() - pos_ < sizeof(T)) {
      ok_ = false;
      return v;
    }
    std::memcpy(&v, in_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  std::string_view in_;
  size_t pos_ = 0;
  bool ok_ = true;
  uint32_t version_;
  std::string error_;
};

namespace state_codec_internal {

/// Visits a default value's fields to add up the fewest bytes one item of a type takes (a container
/// counts its length only), so a count read from a snapshot is checked against the bytes left before
/// anything is allocated for it.
class MinBytesCounter {
 public:
  static constexpr bool kReading = false;
  explicit MinBytesCounter(uint32_t version) : version_(version) {}
  uint32_t version() const { return version_; }
  template <class... T>
  void operator()(const T&... values) {
    (Add(values), ...);
  }
  size_t bytes() const { return bytes_; }

 private:
  template <class T>
  void Add(const T& v) {
    if constexpr (StateFields<T>) {
      T::Fields(*this, v);
    } else if constexpr (StateMembers<T>) {
      VisitMembers(*this, v);
    } else if constexpr (IsArray<T>::value) {
      for (const auto& item : v) Add(item);
    } else if constexpr (IsPair<T>::value) {
      Add(v.first);
      Add(v.second);
    } else {
      bytes_ += 8;  // a number, a length or a count: adapters start with one
    }
  }
  uint32_t version_;
  size_t bytes_ = 0;
};

template <class T>
size_t MinBytes(uint32_t version) {
  if constexpr (StateFields<T> || StateMembers<T> || IsArray<T>::value || IsPair<T>::value) {
    MinBytesCounter counter(version);
    counter(T{});
    return std::max<size_t>(counter.bytes(), 1);
  } else {
    return 8;
  }
}

/// The last branch of StateWriter::Put and StateReader::Get, the same for both: a type with Fields
/// names its fields, a plain struct gives its members, an adapter writes or reads itself (io: the
/// writer or the reader).
template <class Io, class T>
void PutOrGetStruct(Io& io, T& v) {
  if constexpr (StateFields<std::remove_const_t<T>>) {
    std::remove_const_t<T>::Fields(io, v);
  } else if constexpr (StateMembers<std::remove_const_t<T>>) {
    VisitMembers(io, v);
  } else if constexpr (StateAdapter<std::remove_const_t<T>> && Io::kReading) {
    v.Read(io);
  } else if constexpr (StateAdapter<std::remove_const_t<T>>) {
    v.Write(io);
  } else {
    static_assert(sizeof(T) == 0, "no state encoding for this type: give it a Fields function");
  }
}

}  // namespace state_codec_internal

template <class T>
void StateWriter::Put(const T& v) {
  using namespace state_codec_internal;
  if constexpr (std::is_same_v<T, bool>) {
    U64(v ? 1 : 0);
  } else if constexpr (std::is_same_v<T, int64_t>) {
    I64(v);
  } else if constexpr (std::is_same_v<T, uint64_t>) {
    U64(v);
  } else if constexpr (std::is_same_v<T, int32_t>) {
    I64(v);
  } else if constexpr (std::is_same_v<T, double>) {
    F64(v);
  } else if constexpr (std::is_same_v<T, std::string>) {
    Str(v);
  } else if constexpr (IsArray<T>::value) {
    for (const auto& item : v) Put(item);
  } else if constexpr (IsPair<T>::value) {
    Put(v.first);
    Put(v.second);
  } else if constexpr (IsSequence<T>::value) {
    U64(v.size());
    for (const auto& item : v) Put(item);
  } else if constexpr (IsOrderedMap<T>::value) {
    U64(v.size());
    for (const auto& [key, value] : v) {
      Put(key);
      Put(value);
    }
  } else if constexpr (IsUnorderedMap<T>::value) {
    std::vector<const typename T::value_type*> sorted;
    sorted.reserve(v.size());
    for (const auto& entry : v) sorted.push_back(&entry);
    std::sort(sorted.begin(), sorted.end(), [](const auto* a, const auto* b) { return a->first < b->first; });
    U64(sorted.size());
    for (const auto* entry : sorted) {
      Put(entry->first);
      Put(entry->second);
    }
  } else {
    PutOrGetStruct(*this, v);
  }
}

// Mirrors Put's dispatch type by type: the decoder and the encoder stay two functions, each reading
// straight for the bytes it handles.
template <class T>
void StateReader::Get(T& v) {
  using namespace state_codec_internal;
  if constexpr (std::is_same_v<T, bool>) {
    v = Bool();
  } else if constexpr (std::is_same_v<T, int64_t>) {
    v = I64();
    // State holds times in ms, offsets and counts, all far below 2^61, or a sentinel (the lowest or
    // highest int64, e.g. kNoTime). Anything else is no state this program writes, and arithmetic on
    // it (a time minus another) could overflow: refused, as a damaged snapshot.
    constexpr int64_t kLargest = int64_t{1} << 61;
    if ((v < -kLargest || v > kLargest) && v != INT64_MIN && v != INT64_MAX) ok_ = false;
  } else if constexpr (std::is_same_v<T, uint64_t>) {
    v = U64();
  } else if constexpr (std::is_same_v<T, int32_t>) {
    const int64_t wide = I64();
    if (wide < INT32_MIN || wide > INT32_MAX) ok_ = false;
    v = static_cast<int32_t>(wide);
  } else if constexpr (std::is_same_v<T, double>) {
    v = F64();
  } else if constexpr (std::is_same_v<T, std::string>) {
    v = Str();
  } else if constexpr (IsArray<T>::value) {
    for (auto& item : v) Get(item);
  } else if constexpr (IsPair<T>::value) {
    Get(v.first);
    Get(v.second);
  } else if constexpr (IsSequence<T>::value) {
    using Item = typename T::value_type;
    v.clear();
    const uint64_t n = Count(MinBytes<Item>(version_));
    for (uint64_t i = 0; i < n && ok_; ++i) {
      Item item{};
      Get(item);
      if (ok_) v.push_back(std::move(item));
    }
  } else if constexpr (IsOrderedMap<T>::value || IsUnorderedMap<T>::value) {
    using Key = typename T::key_type;
    using Value = typename T::mapped_type;
    v.clear();
    const uint64_t n = Count(MinBytes<Key>(version_) + MinBytes<Value>(version_));
    for (uint64_t i = 0; i < n && ok_; ++i) {
      Key key{};
      Value value{};
      Get(key);
      Get(value);
      if (ok_) v.insert_or_assign(std::move(key), std::move(value));
    }
  } else {
    PutOrGetStruct(*this, v);
  }
}

/// Up to 64 booleans packed into one uint64 (bit i is the i-th); a set bit beyond them fails the read.
/// Made by StateBits(a, b, ...) inside a Fields function; B is bool or const bool.
template <class B, size_t N>
class StateBitsRef {
 public:
  explicit StateBitsRef(std::array<B*, N> bits) : bits_(bits) {}
  void Write(StateWriter& out) const {
    uint64_t packed = 0;
    for (size_t i = 0; i < N; ++i) packed |= (*bits_[i] ? uint64_t{1} : 0) << i;
    out.U64(packed);
  }
  void Read(StateReader& in) {
    const uint64_t packed = in.U64();
    if (N < 64 && (packed >> N) != 0) in.Fail();
    for (size_t i = 0; i < N; ++i) *bits_[i] = ((packed >> i) & 1) != 0;
  }

 private:
  std::array<B*, N> bits_;
};

template <class B, class... More>
  requires std::same_as<std::remove_const_t<B>, bool>
StateBitsRef<B, 1 + sizeof...(More)> StateBits(B& first, More&... more) {
  return StateBitsRef<B, 1 + sizeof...(More)>({&first, &more...});
}

}  // namespace acmetrace::processors
